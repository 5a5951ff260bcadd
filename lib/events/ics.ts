// Calendar files (.ics, RFC 5545) in and out of a user's calendar, as pure functions. The
// iCalendar reading and writing is the CalDAV mapping's (sync/lib/providers/caldav-mapping.ts and
// caldav-series.ts: zones as TZID with their VTIMEZONE, another client's TZIDs and definitions,
// DURATION, VALARM reminders, RECURRENCE-ID and EXDATE), so a file reads and writes as a CalDAV
// resource does; this module only adds what a file is beyond one resource.
import { createHash } from 'node:crypto'
import ICAL from 'ical.js'
import { DateTime } from 'luxon'
import { EVENT_LIMITS, type EventChangeInput } from '../../schemas/event.js'
import { addTimeZones, applyContent, contentOf, timeOf, type Component } from '../../sync/lib/providers/caldav-mapping.js'
import { occurrenceProperty } from '../../sync/lib/providers/caldav-series.js'
import { eventContentOf } from './change-reports.js'
import { invalidEvent } from './errors.js'
import { validateEventChange, type EventRecord } from './record.js'
import { isValidTimeZone } from './time.js'

export const ICS_LIMITS = {
  /** The largest file an import takes (a larger body is a 413). */
  bodyBytes: 2 * 1024 * 1024,
  /** The most VEVENTs one import takes (series, their overrides and single events). */
  events: 5000,
  /** The most stored events (singles, series, edited occurrences) one export holds. */
  exportEvents: 5000,
  /** The longest range an export covers, and the range it covers unless asked. */
  spanDays: 5 * 366,
  defaultPastDays: 366,
  defaultFutureDays: 3 * 366
} as const

/** The calendar key of the user's own calendar (events without a calendarId), as the web client names it too. */
export const OWN_CALENDAR = 'own'

const PRODID = '-//calendar//export//EN'
// Text a person typed keeps no control character but tab and line feed (schemas/event.ts).
const CONTROL = /[\x00-\x08\x0B-\x1F\x7F-\x9F]/g // eslint-disable-line no-control-regex

export interface ExportRange { from: Date, to: Date }

/** The range an export covers: the one asked for, else a year back to three ahead of `now`. */
export function exportRangeOf (query: { start?: string, end?: string }, now: Date): ExportRange {
  const from = query.start === undefined ? new Date(now.getTime() - ICS_LIMITS.defaultPastDays * 86_400_000) : new Date(query.start)
  const to = query.end === undefined ? new Date(from.getTime() + (ICS_LIMITS.defaultPastDays + ICS_LIMITS.defaultFutureDays) * 86_400_000) : new Date(query.end)
  if (Number.isNaN(from.getTime())) throw invalidEvent('querystring/start', 'must be a real date')
  if (Number.isNaN(to.getTime())) throw invalidEvent('querystring/end', 'must be a real date')
  if (to <= from) throw invalidEvent('querystring/end', 'must be after start')
  if (to.getTime() - from.getTime() > ICS_LIMITS.spanDays * 86_400_000) {
    throw invalidEvent('querystring/end', `must be at most ${ICS_LIMITS.spanDays} days after start`)
  }
  return { from, to }
}

/** The file name an export is saved as: the calendar and the range, in letters a file system takes. */
export function exportFileName (calendarKey: string, range: ExportRange): string {
  const name = calendarKey === OWN_CALENDAR ? 'my-calendar' : calendarKey.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '').slice(0, 60) || 'calendar'
  const day = (date: Date) => date.toISOString().slice(0, 10)
  return `${name}_${day(range.from)}_${day(range.to)}.ics`
}

/**
 * The calendar file of stored events: each single event and series one VEVENT (a series with its
 * RRULE and EXDATE lines), each edited occurrence an override with the series' UID and its
 * RECURRENCE-ID, each cancelled occurrence an EXDATE of its series; the VTIMEZONE of every zone named.
 */
export function icsOfEvents (events: readonly EventRecord[], calendarName: string): string {
  const calendar = new ICAL.Component('vcalendar')
  calendar.updatePropertyWithValue('prodid', PRODID)
  calendar.updatePropertyWithValue('version', '2.0')
  calendar.updatePropertyWithValue('calscale', 'GREGORIAN')
  calendar.updatePropertyWithValue('method', 'PUBLISH')
  calendar.updatePropertyWithValue('x-wr-calname', calendarName)
  const masters = new Map<string, Component>()
  const uidOf = (event: EventRecord) => `${event._id}@calendar`
  for (const event of events) {
    if (event.recurrence?.eventId !== undefined) continue
    const vevent = new ICAL.Component('vevent')
    vevent.updatePropertyWithValue('uid', uidOf(event))
    applyContent(vevent, eventContentOf(event), event.lastUpdated)
    calendar.addSubcomponent(vevent)
    masters.set(event._id, vevent)
  }
  for (const edit of events) {
    const master = edit.recurrence?.eventId === undefined ? undefined : masters.get(edit.recurrence.eventId)
    if (master === undefined || edit.originalStartDate === undefined) continue
    if (edit.status === 'cancelled') {
      master.addProperty(occurrenceProperty('exdate', master, edit.originalStartDate))
      continue
    }
    const vevent = new ICAL.Component('vevent')
    vevent.updatePropertyWithValue('uid', master.getFirstPropertyValue('uid') as string)
    vevent.addProperty(occurrenceProperty('recurrence-id', master, edit.originalStartDate))
    applyContent(vevent, eventContentOf(edit), edit.lastUpdated)
    calendar.addSubcomponent(vevent)
  }
  addTimeZones(calendar)
  return calendar.toString() + '\r\n'
}

/** One event of a file as the write path takes it, with the words that name it in an error. */
export interface ImportedChange { change: EventChangeInput & { _id: string }, label: string }

export interface ImportPlan {
  /** Single events and series, written first. */
  events: ImportedChange[]
  /** Edited and cancelled occurrences of those series, written once their series is. */
  occurrences: ImportedChange[]
  /** Why a VEVENT of the file is not imported. */
  errors: string[]
}

/**
 * The id an event of a file gets in a calendar: the same on every import of the same file (a
 * re-import finds what the first one stored), never another user's or calendar's.
 */
function importedEventId (userId: string, calendarKey: string, uid: string, recurrenceId?: string): string {
  return createHash('sha256').update([userId, calendarKey, uid, recurrenceId ?? ''].join('\n')).digest('hex').slice(0, 24)
}

function plain (value: string | undefined): string | undefined {
  return value === undefined ? undefined : value.replace(CONTROL, '')
}

function calendarsOf (text: string): Component[] {
  let parsed: unknown
  try {
    parsed = ICAL.parse(text)
  } catch (error) {
    throw invalidEvent('body', `is not a readable iCalendar file: ${(error instanceof Error ? error.message : String(error)).slice(0, 200)}`)
  }
  const roots = Array.isArray(parsed) && Array.isArray(parsed[0]) ? parsed : [parsed]
  const calendars = roots.flatMap((root) => {
    if (!Array.isArray(root) || root[0] !== 'vcalendar') return []
    return [new ICAL.Component(root as ConstructorParameters<typeof ICAL.Component>[0])]
  })
  if (calendars.length === 0) throw invalidEvent('body', 'must be an iCalendar file (BEGIN:VCALENDAR ... END:VCALENDAR)')
  return calendars
}

/**
 * The changes an .ics file stands for in one calendar: each VEVENT an event change with the id
 * importedEventId gives it (from its UID, and for an override its RECURRENCE-ID), in the calendar
 * `calendarId` (absent: the user's own). Times are read as a CalDAV resource's are (another
 * client's TZIDs included; floating times in the file's X-WR-TIMEZONE, else UTC). A file that is
 * not iCalendar, or holds more than ICS_LIMITS.events events, is refused (400); an event that
 * cannot be read is named in `errors` and the others are imported.
 */
export function importPlanOf (text: string, target: { userId: string, calendarId?: string }): ImportPlan {
  const calendarKey = target.calendarId ?? OWN_CALENDAR
  const plan: ImportPlan = { events: [], occurrences: [], errors: [] }
  const calendars = calendarsOf(text)
  const count = calendars.reduce((sum, calendar) => sum + calendar.getAllSubcomponents('vevent').length, 0)
  if (count > ICS_LIMITS.events) throw invalidEvent('body', `holds ${count} events; at most ${ICS_LIMITS.events} are imported at once (split the file)`)
  const seen = new Set<string>()
  for (const calendar of calendars) {
    const named = calendar.getFirstPropertyValue('x-wr-timezone')
    const calendarZone = typeof named === 'string' && isValidTimeZone(named) ? named : 'UTC'
    const vevents = calendar.getAllSubcomponents('vevent')
    const uidOf = (vevent: Component) => {
      const uid = vevent.getFirstPropertyValue('uid')
      if (typeof uid === 'string' && uid !== '') return uid
      // No UID (RFC 5545 requires one): the event's own words keep a re-import idempotent.
      return `no-uid:${createHash('sha256').update(vevent.toString()).digest('hex')}`
    }
    // The series of each UID in this file: its overrides become its occurrences.
    const series = new Map<string, { id: string, isAllDay: boolean, timeZone: string, length: { milliseconds: number } }>()
    const ordered = [...vevents.filter((vevent) => vevent.getFirstProperty('recurrence-id') === null), ...vevents.filter((vevent) => vevent.getFirstProperty('recurrence-id') !== null)]
    for (const vevent of ordered) {
      const uid = uidOf(vevent)
      const summary = vevent.getFirstPropertyValue('summary')
      const label = `Event ${typeof summary === 'string' && summary !== '' ? JSON.stringify(summary.slice(0, 80)) : `UID ${uid.slice(0, 80)}`}`
      try {
        const recurrenceId = vevent.getFirstProperty('recurrence-id')
        const original = recurrenceId === null ? null : timeOf(recurrenceId, calendar, calendarZone)
        if (recurrenceId !== null && original === null) throw new Error('RECURRENCE-ID is not a date')
        const parent = original === null ? undefined : series.get(uid)
        const id = importedEventId(target.userId, calendarKey, uid, original?.value)
        if (seen.has(id)) throw new Error('appears twice in the file (same UID and RECURRENCE-ID)')
        seen.add(id)
        const cancelled = String(vevent.getFirstPropertyValue('status') ?? '').toUpperCase() === 'CANCELLED'
        if (cancelled && parent !== undefined && original !== null) {
          // A cancelled occurrence is stored as the backend keeps its own: a tombstone at the occurrence's times.
          const end = DateTime.fromISO(original.value, { setZone: true }).plus(parent.length)
          const endDate = (parent.isAllDay ? end.toISODate() : end.toISO({ suppressMilliseconds: true })) ?? original.value
          plan.occurrences.push({ label, change: { _id: id, status: 'cancelled', recurrence: { eventId: parent.id }, originalStartDate: original.value, startDate: original.value, endDate, isAllDay: parent.isAllDay, timeZone: parent.timeZone } })
          continue
        }
        if (cancelled) throw new Error('is cancelled (STATUS:CANCELLED)')
        const content = contentOf(vevent, calendar, calendarZone)
        if (content === null) throw new Error('has no start (DTSTART)')
        const rrule = (content.recurrence ?? []).find((line) => line.toUpperCase().startsWith('RRULE'))
        const rule = rrule === undefined || original !== null ? [] : [rrule, ...(content.recurrence ?? []).filter((line) => line.toUpperCase().startsWith('EXDATE'))]
        const reminders = content.reminders?.filter((reminder) => reminder.minutes <= EVENT_LIMITS.reminderMinutes).slice(0, EVENT_LIMITS.reminders)
        const change: EventChangeInput & { _id: string } = {
          _id: id,
          title: plain(content.title) ?? '',
          ...(content.description === undefined ? {} : { description: plain(content.description) }),
          ...(content.location === undefined ? {} : { location: plain(content.location) }),
          startDate: content.startDate,
          endDate: content.endDate,
          isAllDay: content.isAllDay,
          timeZone: content.timeZone,
          ...(reminders === undefined ? {} : { reminders }),
          // RFC 7986 COLOR, read as the CalDAV mapping reads it (lib/events/colors.ts): the names
          // an export writes come back as the same colour; any other leaves the calendar's.
          ...(content.color === undefined ? {} : { color: content.color }),
          ...(rule.length > 0 ? { recurrence: { rule: rule.slice(0, EVENT_LIMITS.ruleLines) } } : {})
        }
        if (parent !== undefined && original !== null) {
          change.recurrence = { eventId: parent.id }
          change.originalStartDate = original.value
        } else if (target.calendarId !== undefined) {
          change.calendarId = target.calendarId
        }
        const issue = validateEventChange(change)
        if (issue !== null) throw new Error(`${issue.path.slice(1)} ${issue.message}`)
        if (parent !== undefined) {
          plan.occurrences.push({ label, change })
        } else {
          plan.events.push({ label, change })
          const length = DateTime.fromISO(content.endDate, { setZone: true }).toMillis() - DateTime.fromISO(content.startDate, { setZone: true }).toMillis()
          if (rule.length > 0) series.set(uid, { id, isAllDay: content.isAllDay, timeZone: content.timeZone, length: { milliseconds: length } })
        }
      } catch (error) {
        plan.errors.push(`${label}: ${(error instanceof Error ? error.message : String(error)).slice(0, 200)}`)
      }
    }
  }
  return plan
}
