// Microsoft Graph events <-> the backend's event content, as pure functions. The adapter in
// sync/providers/microsoft/ does the I/O; what a Graph event means for us is decided here.
import { createHash } from 'node:crypto'
import { DateTime } from 'luxon'
import type { EventContent, ProviderEvent } from '../../../schemas/sync/index.js'
import { isoInZone, wallInstant } from '../../../lib/zone-offsets.js'
import { utcIsoOf } from '../../../lib/events/time.js'
import { ianaZoneOf, windowsZoneOf } from '../windows-zones.js'
import { canonicalReminders, type Reminder } from '../../../lib/events/reminders.js'

/** A Graph `dateTimeTimeZone`. */
interface GraphDateTime {
  dateTime: string
  timeZone: string
}

export interface GraphRecurrence {
  pattern: {
    type: string
    interval?: number
    daysOfWeek?: string[]
    dayOfMonth?: number
    month?: number
    index?: string
    firstDayOfWeek?: string
  }
  range: {
    type: string
    startDate?: string
    endDate?: string
    numberOfOccurrences?: number
    recurrenceTimeZone?: string
  }
}

/** The part of a Graph event the Sync service reads (answers are in UTC: no `Prefer` zone is asked for). */
export interface GraphEvent {
  id: string
  '@odata.etag'?: string
  '@removed'?: { reason?: string }
  changeKey?: string
  subject?: string | null
  body?: { contentType?: string, content?: string } | null
  bodyPreview?: string | null
  location?: { displayName?: string | null } | null
  start?: GraphDateTime | null
  end?: GraphDateTime | null
  isAllDay?: boolean
  isCancelled?: boolean
  type?: string
  seriesMasterId?: string | null
  originalStart?: string | null
  originalStartTimeZone?: string | null
  recurrence?: GraphRecurrence | null
  iCalUId?: string | null
  lastModifiedDateTime?: string | null
  isReminderOn?: boolean
  reminderMinutesBeforeStart?: number
}

const LIMITS = { title: 1024, description: 8192, location: 1024, id: 1024, etag: 256 }

function cut (value: string, max: number): string {
  return value.length > max ? value.slice(0, max) : value
}

/** Graph's `2030-05-02T09:00:00.0000000` in `zone` as an instant (ms; NaN when unreadable). */
function instantOf (time: GraphDateTime): number {
  const zone = ianaZoneOf(time.timeZone) ?? 'UTC'
  // Two of these per event of every page: the cached zone arithmetic, Luxon where it cannot answer.
  return wallInstant(time.dateTime, zone) ?? DateTime.fromISO(time.dateTime, { zone }).toMillis()
}

/** An instant as the contract's date-time, with the offset of `zone` (wall clock kept readable). */
function inZone (ms: number, zone: string): string {
  return isoInZone(ms, zone) ?? DateTime.fromMillis(ms, { zone }).toISO({ suppressMilliseconds: true }) ?? DateTime.fromMillis(ms, { zone: 'UTC' }).toISO() ?? ''
}

/** The zone an event's times mean: the one it was written in, else the calendar's. */
function eventZone (event: GraphEvent, calendarTimeZone: string): string {
  return ianaZoneOf(event.originalStartTimeZone) ?? ianaZoneOf(event.start?.timeZone) ?? calendarTimeZone
}

const DAY_CODES: Record<string, string> = {
  sunday: 'SU', monday: 'MO', tuesday: 'TU', wednesday: 'WE', thursday: 'TH', friday: 'FR', saturday: 'SA'
}
const DAY_NAMES = Object.fromEntries(Object.entries(DAY_CODES).map(([name, code]) => [code, name]))
const INDEX_POSITIONS: Record<string, number> = { first: 1, second: 2, third: 3, fourth: 4, last: -1 }
const POSITION_INDEXES = Object.fromEntries(Object.entries(INDEX_POSITIONS).map(([name, position]) => [String(position), name]))

/**
 * A Graph recurrence as iCalendar RRULE lines; null when the pattern is one RFC 5545 cannot say
 * (the event is then shown as its single first occurrence rather than a wrong series).
 */
export function rruleLines (recurrence: GraphRecurrence, isAllDay: boolean, zone: string): string[] | null {
  const { pattern, range } = recurrence
  const parts: string[] = []
  const days = (pattern.daysOfWeek ?? []).map((day) => DAY_CODES[day.toLowerCase()]).filter((code): code is string => code !== undefined)
  const position = pattern.index === undefined ? undefined : INDEX_POSITIONS[pattern.index]
  switch (pattern.type) {
    case 'daily': parts.push('FREQ=DAILY'); break
    case 'weekly':
      if (days.length === 0) return null
      parts.push('FREQ=WEEKLY', `BYDAY=${days.join(',')}`)
      break
    case 'absoluteMonthly':
      if (!pattern.dayOfMonth) return null
      parts.push('FREQ=MONTHLY', `BYMONTHDAY=${pattern.dayOfMonth}`)
      break
    case 'relativeMonthly':
      if (days.length === 0 || position === undefined) return null
      parts.push('FREQ=MONTHLY', `BYDAY=${days.join(',')}`, `BYSETPOS=${position}`)
      break
    case 'absoluteYearly':
      if (!pattern.dayOfMonth || !pattern.month) return null
      parts.push('FREQ=YEARLY', `BYMONTH=${pattern.month}`, `BYMONTHDAY=${pattern.dayOfMonth}`)
      break
    case 'relativeYearly':
      if (days.length === 0 || position === undefined || !pattern.month) return null
      parts.push('FREQ=YEARLY', `BYMONTH=${pattern.month}`, `BYDAY=${days.join(',')}`, `BYSETPOS=${position}`)
      break
    default: return null
  }
  const interval = pattern.interval ?? 1
  if (interval > 1) parts.push(`INTERVAL=${interval}`)
  if (pattern.type === 'weekly' && pattern.firstDayOfWeek) {
    const start = DAY_CODES[pattern.firstDayOfWeek.toLowerCase()]
    if (start !== undefined && start !== 'MO') parts.push(`WKST=${start}`)
  }
  if (range.type === 'numbered') {
    if (!range.numberOfOccurrences || range.numberOfOccurrences < 1) return null
    parts.push(`COUNT=${range.numberOfOccurrences}`)
  } else if (range.type === 'endDate') {
    if (!range.endDate) return null
    // Graph's end date includes its whole day in the series' zone; UNTIL is that day's last second.
    if (isAllDay) {
      parts.push(`UNTIL=${range.endDate.replaceAll('-', '')}`)
    } else {
      const rangeZone = ianaZoneOf(range.recurrenceTimeZone) ?? zone
      const last = DateTime.fromISO(`${range.endDate}T23:59:59`, { zone: rangeZone }).toUTC()
      parts.push(`UNTIL=${last.toFormat("yyyyMMdd'T'HHmmss'Z'")}`)
    }
  } else if (range.type !== 'noEnd') {
    return null
  }
  return [`RRULE:${parts.join(';')}`]
}

/**
 * RRULE lines as a Graph recurrence, for a write; null when the rule says what Graph's patterns
 * cannot (the write then leaves the recurrence as Graph holds it).
 */
export function graphRecurrenceOf (lines: string[], startDate: string, zone: string): GraphRecurrence | null {
  const rules = lines.filter((line) => line.startsWith('RRULE:'))
  if (rules.length !== 1 || lines.length !== 1 || rules[0] === undefined) return null
  const fields = new Map(rules[0].slice('RRULE:'.length).split(';').map((part) => {
    const [key = '', value = ''] = part.split('=')
    return [key.toUpperCase(), value]
  }))
  const known = new Set(['FREQ', 'INTERVAL', 'BYDAY', 'BYMONTHDAY', 'BYMONTH', 'BYSETPOS', 'COUNT', 'UNTIL', 'WKST'])
  if ([...fields.keys()].some((key) => !known.has(key))) return null
  const start = DateTime.fromISO(startDate, { zone: 'UTC' }).setZone(zone)
  const interval = Number(fields.get('INTERVAL') ?? '1')
  const byDay = fields.get('BYDAY')
  const days = byDay === undefined ? [] : byDay.split(',').map((code) => DAY_NAMES[code])
  if (days.some((day) => day === undefined)) return null
  const daysOfWeek = days as string[]
  const position = fields.get('BYSETPOS')
  const index = position === undefined ? undefined : POSITION_INDEXES[position]
  let pattern: GraphRecurrence['pattern']
  switch (fields.get('FREQ')) {
    case 'DAILY': pattern = { type: 'daily', interval }; break
    case 'WEEKLY': pattern = { type: 'weekly', interval, daysOfWeek: daysOfWeek.length > 0 ? daysOfWeek : [start.toFormat('cccc').toLowerCase()], firstDayOfWeek: 'monday' }; break
    case 'MONTHLY':
      if (index !== undefined && daysOfWeek.length > 0) pattern = { type: 'relativeMonthly', interval, daysOfWeek, index }
      else pattern = { type: 'absoluteMonthly', interval, dayOfMonth: Number(fields.get('BYMONTHDAY') ?? start.day) }
      break
    case 'YEARLY': {
      const month = Number(fields.get('BYMONTH') ?? start.month)
      if (index !== undefined && daysOfWeek.length > 0) pattern = { type: 'relativeYearly', interval, daysOfWeek, index, month }
      else pattern = { type: 'absoluteYearly', interval, dayOfMonth: Number(fields.get('BYMONTHDAY') ?? start.day), month }
      break
    }
    default: return null
  }
  const startDay = start.toISODate() ?? startDate.slice(0, 10)
  const count = fields.get('COUNT')
  const until = fields.get('UNTIL')
  const recurrenceTimeZone = windowsZoneOf(zone)
  if (count !== undefined) return { pattern, range: { type: 'numbered', startDate: startDay, numberOfOccurrences: Number(count), recurrenceTimeZone } }
  if (until !== undefined) {
    const moment = /^\d{8}$/.test(until) ? DateTime.fromFormat(until, 'yyyyMMdd', { zone }) : DateTime.fromFormat(until, "yyyyMMdd'T'HHmmss'Z'", { zone: 'UTC' }).setZone(zone)
    if (!moment.isValid) return null
    // Graph's end date is a whole day that includes its occurrence; an UNTIL before the series' time of
    // day on that date (a "this and following" cut just before an occurrence) ends the day before.
    const timeOfDay = (value: DateTime) => value.hour * 3600 + value.minute * 60 + value.second
    const lastDay = /^\d{8}$/.test(until) || timeOfDay(moment) >= timeOfDay(start) ? moment : moment.minus({ days: 1 })
    return { pattern, range: { type: 'endDate', startDate: startDay, endDate: lastDay.toISODate() ?? startDay, recurrenceTimeZone } }
  }
  return { pattern, range: { type: 'noEnd', startDate: startDay, recurrenceTimeZone } }
}

/** Graph's one reminder as ours: off is none; an event that says neither keeps the calendar's default. */
function remindersOf (event: Pick<GraphEvent, 'isReminderOn' | 'reminderMinutesBeforeStart'>): { reminders?: Reminder[] } {
  if (event.isReminderOn === false) return { reminders: [] }
  if (event.isReminderOn !== true || typeof event.reminderMinutesBeforeStart !== 'number') return {}
  return { reminders: canonicalReminders([{ minutes: event.reminderMinutesBeforeStart }]) }
}

/**
 * Our reminders as Graph's, which holds one: the earliest before the start, so the person is
 * warned no later than they asked. Absent (the calendar's default) writes nothing: Outlook gives a
 * new event its default and a patch leaves the one there.
 */
function graphRemindersOf (reminders: Reminder[] | undefined): Record<string, unknown> {
  if (reminders === undefined) return {}
  const earliest = canonicalReminders(reminders).at(-1)
  return earliest === undefined ? { isReminderOn: false } : { isReminderOn: true, reminderMinutesBeforeStart: earliest.minutes }
}

/** The content of a Graph event, or null when it has no usable start and end. */
export function contentOf (event: GraphEvent, calendarTimeZone: string): EventContent | null {
  if (!event.start || !event.end) return null
  const zone = eventZone(event, calendarTimeZone)
  const isAllDay = event.isAllDay === true
  const start = instantOf(event.start)
  const end = instantOf(event.end)
  if (Number.isNaN(start) || Number.isNaN(end)) return null
  // An all-day event keeps its dates in every zone: the date part is the day.
  const startDate = isAllDay ? event.start.dateTime.slice(0, 10) : inZone(start, zone)
  const endDate = isAllDay ? event.end.dateTime.slice(0, 10) : inZone(end, zone)
  const recurrence = event.type === 'seriesMaster' && event.recurrence ? rruleLines(event.recurrence, isAllDay, zone) : null
  const description = event.body?.contentType === 'text' ? event.body.content : (event.bodyPreview ?? event.body?.content)
  const location = event.location?.displayName
  return {
    title: cut(event.subject ?? '', LIMITS.title),
    ...(description ? { description: cut(description, LIMITS.description) } : {}),
    ...(location ? { location: cut(location, LIMITS.location) } : {}),
    ...remindersOf(event),
    startDate,
    endDate,
    isAllDay,
    timeZone: zone,
    ...(recurrence === null ? {} : { recurrence })
  }
}

/** Graph's UTC `lastModifiedDateTime` as the contract's instant; the epoch when Graph gave none or no real time. */
function updatedOf (value: string | null | undefined): string {
  return (value ? utcIsoOf(value.endsWith('Z') || /[+-]\d{2}:\d{2}$/.test(value) ? value : `${value}Z`) : null) ?? new Date(0).toISOString()
}

/**
 * A Graph event as the backend is told of it: a single event, a series master with its RRULE, an
 * exception linked to its master, an `@removed` item as cancelled. A plain occurrence is not an
 * event of its own (the master's rule makes it), so it answers null, as does an item without an id.
 */
export function toProviderEvent (event: GraphEvent, calendarTimeZone: string, removedAt: Date): ProviderEvent | null {
  if (!event.id || event.id.length > LIMITS.id) return null
  if (event['@removed'] !== undefined) {
    return { providerEventId: event.id, updated: removedAt.toISOString(), status: 'cancelled' }
  }
  if (event.type === 'occurrence') return null
  const cancelled = event.isCancelled === true
  const content = cancelled ? null : contentOf(event, calendarTimeZone)
  if (!cancelled && content === null) return null
  const etag = event['@odata.etag']
  const exception = event.type === 'exception' && event.seriesMasterId
  return {
    providerEventId: event.id,
    ...(event.iCalUId ? { iCalUID: cut(event.iCalUId, 1024) } : {}),
    ...(etag && etag.length <= LIMITS.etag ? { etag } : {}),
    updated: updatedOf(event.lastModifiedDateTime),
    status: cancelled ? 'cancelled' : 'confirmed',
    ...(content === null ? {} : { content }),
    ...(exception ? { recurringEventId: event.seriesMasterId ?? '', originalStartDate: originalStartOf(event, calendarTimeZone) } : {})
  }
}

/** An exception's original start (Graph: UTC) in the series' zone, or its date for an all-day series. */
function originalStartOf (event: GraphEvent, calendarTimeZone: string): string {
  const original = DateTime.fromISO(event.originalStart ?? '', { zone: 'UTC' })
  if (!original.isValid) return event.start?.dateTime.slice(0, 10) ?? '1970-01-01'
  if (event.isAllDay === true) return original.toISODate() ?? '1970-01-01'
  return inZone(original.toMillis(), eventZone(event, calendarTimeZone))
}

/** Graph's `dateTimeTimeZone` of a contract date in `zone` (a Windows name where one exists). */
function graphTime (value: string, isAllDay: boolean, zone: string): GraphDateTime {
  if (isAllDay) return { dateTime: `${value.slice(0, 10)}T00:00:00`, timeZone: windowsZoneOf(zone) }
  const local = DateTime.fromISO(value, { setZone: true }).setZone(zone)
  return { dateTime: local.toFormat("yyyy-MM-dd'T'HH:mm:ss"), timeZone: windowsZoneOf(zone) }
}

/**
 * The Graph fields of our content. A patch sends every field so a cleared one is cleared there
 * too; `recurrence` is sent only when asked for, since Graph drops a series' exceptions whenever
 * its pattern is written.
 */
export function graphFieldsOf (content: EventContent, options: { recurrence: boolean, times?: boolean }): Record<string, unknown> {
  const recurrence = options.recurrence && content.recurrence !== undefined
    ? graphRecurrenceOf(content.recurrence, content.startDate, content.timeZone)
    : null
  return {
    subject: content.title,
    body: { contentType: 'text', content: content.description ?? '' },
    location: { displayName: content.location ?? '' },
    ...graphRemindersOf(content.reminders),
    ...(options.times === false
      ? {}
      : {
          start: graphTime(content.startDate, content.isAllDay, content.timeZone),
          end: graphTime(content.endDate, content.isAllDay, content.timeZone),
          isAllDay: content.isAllDay
        }),
    ...(recurrence === null ? {} : { recurrence })
  }
}

/**
 * Whether Graph's event already has the content's start, end, all-day flag and zone. Outlook drops a
 * series' exceptions whenever its times are written, even unchanged, so a series is written without
 * them when they are the same.
 */
export function sameTiming (current: GraphEvent, content: EventContent, calendarTimeZone: string): boolean {
  const held = contentOf(current, calendarTimeZone)
  if (held === null || held.isAllDay !== content.isAllDay || held.timeZone !== content.timeZone) return false
  const same = (a: string, b: string) => content.isAllDay ? a === b : Date.parse(a) === Date.parse(b)
  return same(held.startDate, content.startDate) && same(held.endDate, content.endDate)
}

/**
 * The `transactionId` of an insert, the same on every attempt: Graph answers a repeated one with the
 * event it created first, so a write retried after a crash makes no copy.
 */
export function transactionIdFor (connectionId: string, eventId: string): string {
  return createHash('sha256').update(`${connectionId}:${eventId}`).digest('hex').slice(0, 32)
}

export interface GraphFailure {
  status: number | null
  /** Graph's `error.code`, or the identity platform's `error`. */
  code: string | null
}

export type MicrosoftFailureKind = 'revoked' | 'cursorExpired' | 'unavailable' | 'notFound' | 'conflict' | 'unauthorized' | 'other'

/** What a failed Microsoft call means for the Sync service. */
export function classifyFailure (failure: GraphFailure): MicrosoftFailureKind {
  const { status, code } = failure
  if (code === 'invalid_grant') return 'revoked'
  if (status === 410 || code === 'SyncStateNotFound' || code === 'syncStateNotFound') return 'cursorExpired'
  if (status === null || status === 429 || status >= 500 || code === 'temporarily_unavailable') return 'unavailable'
  if (status === 401) return 'unauthorized'
  if (status === 404) return 'notFound'
  if (status === 412) return 'conflict'
  return 'other'
}
