// iCalendar resources of a CalDAV calendar <-> the backend's event content, as pure functions over
// ical.js components. The adapter in sync/providers/caldav/ does the I/O. One resource holds one
// event, or one series with its overrides (RFC 4791 4.1): the series keeps the resource's href
// as its provider id, an override adds `#<original start>`.
import { createHash } from 'node:crypto'
import ICAL from 'ical.js'
import { DateTime } from 'luxon'
import type { EventContent, ProviderEvent } from '../../../schemas/sync/index.js'
import { isUtcZone, vtimezoneFor } from './vtimezone.js'
import { ianaZoneOf, WINDOWS_TO_IANA } from '../windows-zones.js'
import { canonicalReminders, type Reminder } from '../../../lib/events/reminders.js'
import { colorOfCss, cssColorOf, type EventColor } from '../../../lib/events/colors.js'

export type Component = InstanceType<typeof ICAL.Component>
export type Property = InstanceType<typeof ICAL.Property>
export type Time = InstanceType<typeof ICAL.Time>

/** Carries the backend's id of an event the Sync service wrote, like Google's private property. */
const EVENT_ID_PROPERTY = 'x-calendar-event-id'
/** The zone of an event whose date-times are written in UTC (a UTC event; before, every event): it reads back in that zone. */
const TIME_ZONE_PROPERTY = 'x-calendar-time-zone'

const LIMITS = { title: 1024, description: 8192, location: 1024, recurrenceLines: 20, id: 1024, etag: 256 }
const RECURRENCE_PROPERTIES = ['rrule', 'rdate', 'exdate'] as const

function cut (value: string, max: number): string {
  return value.length > max ? value.slice(0, max) : value
}

function pad (value: number, width = 2): string {
  return String(Math.abs(value)).padStart(width, '0')
}

function isIanaZone (zone: string | null | undefined): zone is string {
  return typeof zone === 'string' && zone.length > 0 && DateTime.local().setZone(zone).isValid
}

/** An override's provider id: the series' id and the occurrence's original start. */
export function overrideId (seriesId: string, originalStartDate: string): string {
  return `${seriesId}#${originalStartDate}`
}

/** The resource an event id names (an override lives in its series' resource). */
export function resourceOf (providerEventId: string): string {
  const hash = providerEventId.indexOf('#')
  return hash === -1 ? providerEventId : providerEventId.slice(0, hash)
}

/** The name a new event's resource gets: the same on every attempt, so a retried insert finds its first copy. */
export function resourceNameFor (connectionId: string, eventId: string): string {
  return `${createHash('sha256').update(`${connectionId}:${eventId}`).digest('hex').slice(0, 32)}.ics`
}

/**
 * A date or date-time property as the contract writes it: `YYYY-MM-DD` for a date, else the wall
 * time with the offset its zone has then. The zone comes from the TZID when it is an IANA name,
 * else from the resource's VTIMEZONE, else (floating time) from the calendar.
 */
export function timeOf (property: Property, calendar: Component, calendarTimeZone: string, writtenZone: string | null = null): { value: string, zone: string, isDate: boolean } | null {
  const time = property.getFirstValue() as Time | null
  if (time === null || typeof time !== 'object' || !('isDate' in time)) return null
  const date = `${pad(time.year, 4)}-${pad(time.month)}-${pad(time.day)}`
  if (time.isDate) return { value: date, zone: calendarTimeZone, isDate: true }
  const wall = `${date}T${pad(time.hour)}:${pad(time.minute)}:${pad(time.second)}`
  if (time.zone?.tzid === 'UTC' || property.toICALString().endsWith('Z')) {
    if (isIanaZone(writtenZone)) {
      const local = DateTime.fromISO(`${wall}Z`, { setZone: true }).setZone(writtenZone)
      return { value: local.toISO({ suppressMilliseconds: true, includeOffset: true }) ?? `${wall}Z`, zone: writtenZone, isDate: false }
    }
    return { value: `${wall}Z`, zone: 'UTC', isDate: false }
  }
  const tzid = property.getParameter('tzid')
  const tzidName = typeof tzid === 'string' ? tzid : null
  const definition = tzidName === null || isIanaZone(tzidName) ? undefined : definitionOf(calendar, tzidName)
  const zone = tzidName === null ? (isIanaZone(calendarTimeZone) ? calendarTimeZone : 'UTC') : zoneOfTzid(calendar, tzidName, calendarTimeZone)
  // Another client's own definition says what its wall time was; the zone found for it repeats the series.
  const offsetSeconds = definition !== undefined
    ? new ICAL.Timezone(definition).utcOffset(time)
    : DateTime.fromObject({ year: time.year, month: time.month, day: time.day, hour: time.hour, minute: time.minute, second: time.second }, { zone }).offset * 60
  const sign = offsetSeconds < 0 ? '-' : '+'
  const minutes = Math.round(Math.abs(offsetSeconds) / 60)
  return { value: `${wall}${sign}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`, zone, isDate: false }
}

function definitionOf (calendar: Component, tzid: string): Component | undefined {
  return calendar.getAllSubcomponents('vtimezone').find((candidate) => candidate.getFirstPropertyValue('tzid') === tzid)
}

const zonesOfDefinitions = new Map<string, string | null>()

/**
 * The IANA zone whose offsets are the definition's across a year (January to December, mid-month).
 * Of those that fit: the calendar's own, one whose city the TZID names ("Berlin custom"), CLDR's
 * main zone of a Windows zone, then any.
 */
function zoneMatching (definition: Component, tzid: string, calendarTimeZone: string): string | null {
  const key = `${calendarTimeZone}\n${definition.toString()}`
  const known = zonesOfDefinitions.get(key)
  if (known !== undefined) return known
  const timezone = new ICAL.Timezone(definition)
  const year = new Date().getUTCFullYear()
  const samples = Array.from({ length: 12 }, (_, month) => Date.UTC(year, month, 15, 12))
  const offsets = samples.map((ms) => timezone.utcOffset(ICAL.Time.fromJSDate(new Date(ms), true)) / 60)
  const fits = (zone: string) => samples.every((ms, index) => DateTime.fromMillis(ms, { zone }).offset === offsets[index])
  const words = tzid.toLowerCase()
  const named = (zone: string) => words.includes((zone.split('/').at(-1) ?? '').replaceAll('_', ' ').toLowerCase())
  const everyZone = Intl.supportedValuesOf('timeZone')
  const candidates = [calendarTimeZone, ...everyZone.filter(named), ...Object.values(WINDOWS_TO_IANA), ...everyZone]
  const found = candidates.find((zone) => isIanaZone(zone) && fits(zone)) ?? null
  if (zonesOfDefinitions.size > 1000) zonesOfDefinitions.clear()
  zonesOfDefinitions.set(key, found)
  return found
}

/**
 * The IANA zone a TZID stands for, as another client wrote it: an IANA name as it is; a Windows
 * name (Outlook's "Eastern Standard Time") through CLDR's table; a name that ends in an IANA one
 * ("/mozilla.org/20050126_1/America/New_York") or a definition naming one (X-LIC-LOCATION) by that;
 * otherwise the zone whose offsets the resource's own definition has. The calendar's zone when
 * nothing says more.
 */
function zoneOfTzid (calendar: Component, tzid: string, calendarTimeZone: string): string {
  if (isIanaZone(tzid)) return tzid
  const windows = ianaZoneOf(tzid)
  if (windows !== null) return windows
  const definition = definitionOf(calendar, tzid)
  const location = definition?.getFirstPropertyValue('x-lic-location')
  const named = [typeof location === 'string' ? location : null, /[A-Za-z]+\/[A-Za-z_+-]+(?:\/[A-Za-z_+-]+)?$/.exec(tzid)?.[0] ?? null]
    .find((name): name is string => name !== null && isIanaZone(name))
  if (named !== undefined) return named
  return (definition === undefined ? null : zoneMatching(definition, tzid, calendarTimeZone)) ?? (isIanaZone(calendarTimeZone) ? calendarTimeZone : 'UTC')
}

function instant (event: Component): string {
  const stamp = (event.getFirstPropertyValue('last-modified') ?? event.getFirstPropertyValue('dtstamp')) as Time | null
  const ms = stamp !== null && typeof stamp === 'object' && 'toJSDate' in stamp ? stamp.toJSDate().getTime() : Number.NaN
  return new Date(Number.isNaN(ms) ? 0 : ms).toISOString()
}

function addDays (date: string, days: number): string {
  return DateTime.fromISO(date, { zone: 'UTC' }).plus({ days }).toISODate() ?? date
}

/**
 * The minutes before the start a VALARM tells, when it is a reminder as this service keeps them: a
 * DISPLAY (or AUDIO) alarm whose TRIGGER is a duration from the start, at or before it. Null for
 * any other (an EMAIL, an absolute time, one relative to the end or after the start): such alarms
 * are another client's, kept as they are when the event is written.
 */
function reminderMinutesOf (alarm: Component): number | null {
  const action = String(alarm.getFirstPropertyValue('action') ?? '').toUpperCase()
  if (action !== 'DISPLAY' && action !== 'AUDIO') return null
  const trigger = alarm.getFirstProperty('trigger')
  const related = trigger?.getParameter('related')
  if (trigger === null || (typeof related === 'string' && related.toUpperCase() !== 'START')) return null
  const value = trigger.getFirstValue() as unknown
  if (!(value instanceof ICAL.Duration)) return null
  const seconds = value.toSeconds()
  return seconds > 0 ? null : Math.round(-seconds / 60)
}

/** A VEVENT's reminders: absent without any VALARM (the calendar's default), else its DISPLAY ones. */
function remindersOf (event: Component): { reminders?: Reminder[] } {
  const alarms = event.getAllSubcomponents('valarm')
  if (alarms.length === 0) return {}
  return { reminders: canonicalReminders(alarms.flatMap((alarm) => { const minutes = reminderMinutesOf(alarm); return minutes === null ? [] : [{ minutes }] })) }
}

/** Writes the reminders as DISPLAY VALARMs (`TRIGGER;RELATED=START:-PT10M`), replacing the ones read as reminders. */
function applyReminders (event: Component, reminders: Reminder[] | undefined, title: string): void {
  for (const alarm of event.getAllSubcomponents('valarm')) if (reminderMinutesOf(alarm) !== null) event.removeSubcomponent(alarm)
  for (const { minutes } of canonicalReminders(reminders ?? [])) {
    const alarm = new ICAL.Component('valarm')
    alarm.updatePropertyWithValue('action', 'DISPLAY')
    // RFC 5545 3.6.6: a DISPLAY alarm must carry the text it shows.
    alarm.updatePropertyWithValue('description', title === '' ? 'Reminder' : title)
    const trigger = new ICAL.Property('trigger')
    trigger.setValue(ICAL.Duration.fromSeconds(-minutes * 60))
    trigger.setParameter('related', 'START')
    alarm.addProperty(trigger)
    event.addSubcomponent(alarm)
  }
}

/** A VEVENT's colour: its RFC 7986 COLOR when it is a name this service writes; any other is no colour of ours. */
function colorOf (event: Component): { color?: EventColor } {
  const color = colorOfCss(String(event.getFirstPropertyValue('color') ?? ''))
  return color === undefined ? {} : { color }
}

/**
 * Writes the colour as RFC 7986 COLOR (a CSS3 name). Absent removes a COLOR that reads as one of
 * ours, and keeps another client's (a name or a colour this service does not read).
 */
function applyColor (event: Component, color: EventColor | undefined): void {
  if (color !== undefined) event.updatePropertyWithValue('color', cssColorOf(color))
  else if (colorOf(event).color !== undefined) event.removeAllProperties('color')
}

/** The content of a VEVENT, or null when it has no usable start. */
export function contentOf (event: Component, calendar: Component, calendarTimeZone: string): EventContent | null {
  const written = event.getFirstPropertyValue(TIME_ZONE_PROPERTY)
  const writtenZone = typeof written === 'string' ? written : null
  const startProperty = event.getFirstProperty('dtstart')
  const start = startProperty === null ? null : timeOf(startProperty, calendar, calendarTimeZone, writtenZone)
  if (start === null) return null
  const endProperty = event.getFirstProperty('dtend')
  let endDate = endProperty === null ? null : timeOf(endProperty, calendar, calendarTimeZone, writtenZone)?.value ?? null
  if (endDate === null) {
    const duration = event.getFirstPropertyValue('duration') as InstanceType<typeof ICAL.Duration> | null
    if (duration !== null && typeof duration === 'object' && 'toSeconds' in duration) {
      endDate = start.isDate
        ? addDays(start.value, Math.max(1, Math.round(duration.toSeconds() / 86_400)))
        : DateTime.fromISO(start.value, { setZone: true }).plus({ seconds: duration.toSeconds() }).toISO({ suppressMilliseconds: true }) ?? start.value
    } else {
      // RFC 5545 3.6.1: without DTEND or DURATION a date event lasts one day, a date-time one none.
      endDate = start.isDate ? addDays(start.value, 1) : start.value
    }
  }
  const recurrence = RECURRENCE_PROPERTIES
    .flatMap((name) => event.getAllProperties(name))
    .map((property) => {
      const tzid = property.getParameter('tzid')
      if (typeof tzid !== 'string' || isIanaZone(tzid)) return property.toICALString()
      // The backend reads TZIDs as IANA names; the wall times stay as written.
      const named = ICAL.Property.fromString(property.toICALString())
      named.setParameter('tzid', zoneOfTzid(calendar, tzid, calendarTimeZone))
      return named.toICALString()
    })
    .filter((line) => line.length > 0 && line.length <= 1024)
    .slice(0, LIMITS.recurrenceLines)
  const text = (name: string): string | null => {
    const value = event.getFirstPropertyValue(name)
    return typeof value === 'string' && value.length > 0 ? value : null
  }
  const description = text('description')
  const location = text('location')
  return {
    title: cut(text('summary') ?? '', LIMITS.title),
    ...(description === null ? {} : { description: cut(description, LIMITS.description) }),
    ...(location === null ? {} : { location: cut(location, LIMITS.location) }),
    ...remindersOf(event),
    ...colorOf(event),
    startDate: start.value,
    endDate,
    isAllDay: start.isDate,
    timeZone: start.zone,
    ...(recurrence.length > 0 ? { recurrence } : {})
  }
}

/**
 * Every event of one calendar resource as the backend is told of it: the series or single event
 * under the resource's href, each override under `href#<original start>`.
 */
export function eventsOfResource (href: string, ics: string, etag: string | null, calendarTimeZone: string): ProviderEvent[] {
  let calendar: Component
  try {
    calendar = new ICAL.Component(ICAL.parse(ics))
  } catch {
    return []
  }
  const found: ProviderEvent[] = []
  const vevents = calendar.getAllSubcomponents('vevent')
  const master = vevents.find((event) => event.getFirstProperty('recurrence-id') === null)
  const shared = {
    ...(etag !== null && etag.length <= LIMITS.etag ? { etag } : {})
  }
  for (const event of vevents) {
    const uid = event.getFirstPropertyValue('uid')
    const recurrenceId = event.getFirstProperty('recurrence-id')
    const original = recurrenceId === null ? null : timeOf(recurrenceId, calendar, calendarTimeZone)
    if (recurrenceId !== null && original === null) continue
    const providerEventId = original === null ? href : overrideId(href, original.value)
    if (providerEventId.length > LIMITS.id) continue
    const cancelled = String(event.getFirstPropertyValue('status') ?? '').toUpperCase() === 'CANCELLED'
    const content = cancelled ? null : contentOf(event, calendar, calendarTimeZone)
    if (!cancelled && content === null) continue
    const eventId = event.getFirstPropertyValue(EVENT_ID_PROPERTY) ?? (original === null ? null : master?.getFirstPropertyValue(EVENT_ID_PROPERTY))
    found.push({
      providerEventId,
      ...(typeof uid === 'string' && uid.length > 0 ? { iCalUID: cut(uid, 1024) } : {}),
      ...shared,
      updated: instant(event),
      status: cancelled ? 'cancelled' : 'confirmed',
      ...(content === null ? {} : { content }),
      ...(original === null ? {} : { recurringEventId: href, originalStartDate: original.value }),
      ...(typeof eventId === 'string' && eventId.length > 0 && original === null ? { eventId } : {})
    })
  }
  return found
}

/** A resource that is gone (deleted at the server): the backend drops its event and overrides; an override that is gone: its edit. */
export function removedResource (href: string, updated: Date): ProviderEvent {
  return { providerEventId: href, updated: updated.toISOString(), status: 'cancelled' }
}

function utcStamp (iso: string): Time {
  return ICAL.Time.fromJSDate(new Date(iso), true)
}

/** Whether a date-time in this zone is written as wall time with `TZID` (and the resource's VTIMEZONE). */
export function isWrittenInZone (zone: string): boolean {
  return isIanaZone(zone) && !isUtcZone(zone)
}

/**
 * A DTSTART, DTEND, RECURRENCE-ID or EXDATE. A date-time is the wall time in its zone with `TZID`,
 * so a series keeps its wall time across daylight-saving changes; UTC (or no usable zone) with `Z`.
 */
export function timeProperty (name: string, value: string, isAllDay: boolean, zone: string): Property {
  const property = new ICAL.Property(name)
  if (isAllDay) {
    property.setValue(ICAL.Time.fromDateString(value.slice(0, 10)))
    return property
  }
  if (!isWrittenInZone(zone)) {
    property.setValue(ICAL.Time.fromJSDate(new Date(value), true))
    return property
  }
  const local = DateTime.fromISO(value, { setZone: true }).setZone(zone)
  property.setValue(ICAL.Time.fromData({ year: local.year, month: local.month, day: local.day, hour: local.hour, minute: local.minute, second: local.second, isDate: false }))
  property.setParameter('tzid', zone)
  return property
}

/**
 * Adds the VTIMEZONE of every IANA `TZID` the resource's events name and it does not define yet,
 * covering the years its date-times span. A definition already there (another client's) is kept.
 */
export function addTimeZones (calendar: Component): void {
  const years = new Map<string, number[]>()
  for (const event of calendar.getAllSubcomponents('vevent')) {
    for (const property of ['dtstart', 'dtend', 'recurrence-id', 'exdate'].flatMap((name) => event.getAllProperties(name))) {
      const tzid = property.getParameter('tzid')
      const time = property.getFirstValue() as Time | null
      if (typeof tzid !== 'string' || !isWrittenInZone(tzid) || time === null || typeof time !== 'object' || !('year' in time)) continue
      years.set(tzid, [...years.get(tzid) ?? [], time.year])
    }
  }
  const defined = new Set(calendar.getAllSubcomponents('vtimezone').map((zone) => zone.getFirstPropertyValue('tzid')))
  for (const [zone, spanned] of years) {
    if (defined.has(zone)) continue
    calendar.addSubcomponent(vtimezoneFor(zone, Math.min(...spanned), Math.max(...spanned)))
  }
}

/** Sets the content's properties on a VEVENT; a cleared field is removed there too. */
export function applyContent (event: Component, content: EventContent, lastUpdated: string): void {
  event.updatePropertyWithValue('summary', content.title)
  for (const [name, value] of [['description', content.description], ['location', content.location]] as const) {
    if (value === undefined || value === '') event.removeAllProperties(name)
    else event.updatePropertyWithValue(name, value)
  }
  event.removeAllProperties('dtstart')
  event.removeAllProperties('dtend')
  event.removeAllProperties('duration')
  event.addProperty(timeProperty('dtstart', content.startDate, content.isAllDay, content.timeZone))
  event.addProperty(timeProperty('dtend', content.endDate, content.isAllDay, content.timeZone))
  // The zone is in the TZID now; a UTC date-time still names the event's zone, to read back as written.
  if (content.isAllDay || isWrittenInZone(content.timeZone)) event.removeAllProperties(TIME_ZONE_PROPERTY)
  else event.updatePropertyWithValue(TIME_ZONE_PROPERTY, content.timeZone)
  if (event.getFirstProperty('recurrence-id') === null) {
    for (const name of RECURRENCE_PROPERTIES) event.removeAllProperties(name)
    for (const line of content.recurrence ?? []) {
      try {
        event.addProperty(ICAL.Property.fromString(line))
      } catch {
        // A line the library cannot read is left out rather than failing the whole write.
      }
    }
  }
  applyReminders(event, content.reminders, content.title)
  applyColor(event, content.color)
  event.removeAllProperties('status')
  stampVersion(event, lastUpdated)
}

/** The write's version, so the pull that reads it back finds the backend's own change. */
export function stampVersion (event: Component, lastUpdated: string): void {
  event.updatePropertyWithValue('last-modified', utcStamp(lastUpdated))
  event.updatePropertyWithValue('dtstamp', utcStamp(lastUpdated))
}

/** A new resource with one VEVENT for a backend event. */
export function newResource (uid: string, eventId: string, content: EventContent, lastUpdated: string): Component {
  const calendar = new ICAL.Component('vcalendar')
  calendar.updatePropertyWithValue('prodid', '-//calendar//sync//EN')
  calendar.updatePropertyWithValue('version', '2.0')
  const event = new ICAL.Component('vevent')
  event.updatePropertyWithValue('uid', uid)
  event.updatePropertyWithValue(EVENT_ID_PROPERTY, eventId)
  applyContent(event, content, lastUpdated)
  calendar.addSubcomponent(event)
  addTimeZones(calendar)
  return calendar
}

export function parseResource (ics: string): Component {
  return new ICAL.Component(ICAL.parse(ics))
}

/** The version of an event for the newer-wins rule: its LAST-MODIFIED (else DTSTAMP) as an instant. */
export function versionOf (event: Component): string {
  return instant(event)
}
