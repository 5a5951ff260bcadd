// The Calendar API v3 Event resource: what a write may carry, how it is checked (with the messages
// Google answers), and how a stored event is written back out.
import { DateTime, IANAZone } from 'luxon'
import { apiErrors } from './errors.js'
import { checkRecurrence, lastOccurrenceStart } from './recurrence.js'
import { formatDateTime } from './zones.js'

type EventStatus = 'confirmed' | 'tentative' | 'cancelled'

interface EventTime {
  date?: string
  dateTime?: string
  timeZone?: string
}

/** An EventTime as given, with the instant it stands for (all-day: midnight in the zone used). */
export interface StoredTime extends EventTime {
  ms: number
}

export interface StoredEvent {
  id: string
  status: EventStatus
  summary?: string
  description?: string
  location?: string
  start?: StoredTime
  end?: StoredTime
  recurrence?: string[]
  recurringEventId?: string
  originalStartTime?: StoredTime
  iCalUID: string
  sequence: number
  created: number
  updated: number
  organizerEmail: string
  /** Fields Google stores and returns that this stand-in does not interpret. */
  extra: Record<string, unknown>
  /** The calendar's change number of this event's last write: sync tokens and etags derive from it. */
  changedSeq: number
  /** The time the event (for a series: all its occurrences) covers, for timeMin/timeMax. */
  coverStartMs: number
  coverEndMs: number
}

/** Fields kept and returned as given, so a client's own markers (extendedProperties...) survive a round trip. */
const PASS_THROUGH_FIELDS = [
  'transparency', 'visibility', 'attendees', 'extendedProperties', 'source',
  'guestsCanModify', 'guestsCanInviteOthers', 'guestsCanSeeOtherGuests', 'anyoneCanAddSelf', 'attachments',
  'conferenceData', 'eventType', 'endTimeUnspecified', 'locked', 'privateCopy'
] as const

const STATUSES = new Set<string>(['confirmed', 'tentative', 'cancelled'])
const DATE = /^\d{4}-\d{2}-\d{2}$/
const OFFSET = /(?:[zZ]|[+-]\d{2}:?\d{2})$/
// RFC 2938 base32hex, 5 to 1024 characters, as the events.insert reference requires of a client id.
const CLIENT_EVENT_ID = /^[a-v0-9]{5,1024}$/

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

export function isValidZone (zone: string): boolean {
  return IANAZone.isValidZone(zone)
}

/** Parses an EventTime; `field` names it in Google's messages ("Missing end time."). */
function parseEventTime (value: unknown, field: 'start' | 'end' | 'originalStartTime', fallbackZone: string, zoneRequired: boolean): StoredTime {
  const label = field === 'originalStartTime' ? 'original start' : field
  if (!isRecord(value)) throw apiErrors.required(`Missing ${label} time.`)
  const { date, dateTime, timeZone } = value
  if (timeZone !== undefined && timeZone !== null && (typeof timeZone !== 'string' || !isValidZone(timeZone))) {
    throw apiErrors.invalid(`Invalid time zone definition for ${label} time.`)
  }
  const zone = typeof timeZone === 'string' ? timeZone : undefined
  if (typeof date === 'string' && (dateTime === undefined || dateTime === null)) {
    const parsed = DateTime.fromISO(date, { zone: zone ?? fallbackZone })
    if (!DATE.test(date) || !parsed.isValid) throw apiErrors.invalid(`Invalid ${label} time.`)
    return { date, ...(zone === undefined ? {} : { timeZone: zone }), ms: parsed.toMillis() }
  }
  if (typeof dateTime !== 'string' || (date !== undefined && date !== null)) throw apiErrors.required(`Missing ${label} time.`)
  const hasOffset = OFFSET.test(dateTime)
  if ((!hasOffset || zoneRequired) && zone === undefined) throw apiErrors.badRequest(`Missing time zone definition for ${label} time.`)
  const parsed = hasOffset ? DateTime.fromISO(dateTime, { setZone: true }) : DateTime.fromISO(dateTime, { zone: zone ?? fallbackZone })
  if (!parsed.isValid) throw apiErrors.invalid(`Invalid ${label} time.`)
  return { dateTime, ...(zone === undefined ? {} : { timeZone: zone }), ms: parsed.toMillis() }
}

/** What a write may set. Absent means "not given" (patch keeps the old value). */
export interface EventWrite {
  id?: string
  status?: EventStatus
  summary?: string | null
  description?: string | null
  location?: string | null
  start?: StoredTime
  end?: StoredTime
  recurrence?: string[] | null
  recurringEventId?: string
  originalStartTime?: StoredTime
  iCalUID?: string
  sequence?: number
  extra: Record<string, unknown>
}

const optionalText = (body: Record<string, unknown>, name: string): string | null | undefined => {
  const value = body[name]
  if (value === undefined) return undefined
  if (value === null) return null
  if (typeof value !== 'string') throw apiErrors.invalid(`Invalid value for: ${name}`)
  return value
}

/**
 * Reads a request body into an EventWrite. Times are checked against each other only once merged
 * with what is stored (see `finishEvent`), because a patch may move the start alone.
 */
export function readEventWrite (body: unknown, calendarZone: string): EventWrite {
  if (!isRecord(body)) throw apiErrors.parseError()
  const write: EventWrite = { extra: {} }
  if (body['id'] !== undefined) {
    if (typeof body['id'] !== 'string' || !CLIENT_EVENT_ID.test(body['id'])) throw apiErrors.invalid('Invalid resource id value.')
    write.id = body['id']
  }
  if (body['status'] !== undefined) {
    if (typeof body['status'] !== 'string' || !STATUSES.has(body['status'])) throw apiErrors.invalid('Invalid value for: status')
    write.status = body['status'] as EventStatus
  }
  for (const name of ['summary', 'description', 'location'] as const) {
    const text = optionalText(body, name)
    if (text !== undefined) write[name] = text
  }
  if (body['recurrence'] !== undefined) write.recurrence = body['recurrence'] === null ? null : checkRecurrence(body['recurrence'])
  const zoneRequired = Array.isArray(write.recurrence) && write.recurrence.length > 0
  if (body['start'] !== undefined) write.start = parseEventTime(body['start'], 'start', calendarZone, zoneRequired)
  if (body['end'] !== undefined) write.end = parseEventTime(body['end'], 'end', calendarZone, zoneRequired)
  if (body['originalStartTime'] !== undefined) write.originalStartTime = parseEventTime(body['originalStartTime'], 'originalStartTime', calendarZone, false)
  if (body['recurringEventId'] !== undefined) {
    if (typeof body['recurringEventId'] !== 'string') throw apiErrors.invalid('Invalid value for: recurringEventId')
    write.recurringEventId = body['recurringEventId']
  }
  if (body['iCalUID'] !== undefined) {
    if (typeof body['iCalUID'] !== 'string' || body['iCalUID'] === '') throw apiErrors.invalid('Invalid value for: iCalUID')
    write.iCalUID = body['iCalUID']
  }
  if (body['sequence'] !== undefined) {
    if (!Number.isInteger(body['sequence']) || (body['sequence'] as number) < 0) throw apiErrors.invalid('Invalid value for: sequence')
    write.sequence = body['sequence'] as number
  }
  for (const name of PASS_THROUGH_FIELDS) if (body[name] !== undefined) write.extra[name] = body[name]
  if (body['reminders'] !== undefined) write.extra['reminders'] = body['reminders'] === null ? null : readReminders(body['reminders'])
  if (body['colorId'] !== undefined) write.extra['colorId'] = body['colorId'] === null ? null : readColorId(body['colorId'])
  return write
}

/**
 * The Event resource's `colorId`: "an ID referring to an entry in the event section of the colors
 * definition" (`colors.get`, whose event palette holds the ids "1" to "11"); null clears it.
 */
function readColorId (value: unknown): string {
  if (typeof value !== 'string' || !/^(?:[1-9]|1[01])$/.test(value)) throw apiErrors.invalid('Invalid value for: colorId')
  return value
}

const REMINDER_METHODS = new Set(['email', 'popup'])

/**
 * The Event resource's `reminders` (events reference: `useDefault`, and `overrides[]` of `method`
 * `email` or `popup` and `minutes` 0 to 40320, at most 5 of them). Whether default and overrides
 * are asked for at once is checked on the merged event (`remindersOf`): a patch may change one alone.
 */
function readReminders (value: unknown): Record<string, unknown> {
  if (!isRecord(value)) throw apiErrors.invalid('Invalid value for: reminders')
  const reminders: Record<string, unknown> = {}
  if (value['useDefault'] !== undefined && value['useDefault'] !== null) {
    if (typeof value['useDefault'] !== 'boolean') throw apiErrors.invalid('Invalid value for: reminders.useDefault')
    reminders['useDefault'] = value['useDefault']
  }
  const overrides = value['overrides']
  if (overrides !== undefined && overrides !== null) {
    if (!Array.isArray(overrides)) throw apiErrors.invalid('Invalid value for: reminders.overrides')
    if (overrides.length > 5) throw apiErrors.invalid('The maximum number of override reminders is 5.')
    reminders['overrides'] = overrides.map((item: unknown) => {
      if (!isRecord(item)) throw apiErrors.invalid('Invalid value for: reminders.overrides')
      if (typeof item['method'] !== 'string' || !REMINDER_METHODS.has(item['method'])) throw apiErrors.required('Missing reminder method.')
      const minutes = item['minutes']
      if (typeof minutes !== 'number' || !Number.isInteger(minutes) || minutes < 0 || minutes > 40_320) throw apiErrors.invalid('Invalid reminder minutes value.')
      return { method: item['method'], minutes }
    })
  } else if (overrides === null) {
    reminders['overrides'] = []
  }
  return reminders
}

/**
 * The reminders an event holds once a write's are merged in (a patch merges the object, as Google
 * patches nested objects): Google refuses default reminders together with overrides. An event with
 * no overrides answers `{ useDefault }` alone, as Google does.
 */
export function remindersOf (before: unknown, written: Record<string, unknown>, patch: boolean): Record<string, unknown> {
  const merged: Record<string, unknown> = { useDefault: false, ...(patch && isRecord(before) ? before : {}), ...written }
  const overrides = Array.isArray(merged['overrides']) ? merged['overrides'] : []
  if (merged['useDefault'] === true && overrides.length > 0) throw apiErrors.badRequest('Cannot specify both default reminders and overrides at the same time.')
  return overrides.length > 0 ? { useDefault: merged['useDefault'], overrides } : { useDefault: merged['useDefault'] }
}

/** Checks a merged event's times and computes the span it covers; throws Google's 400s. */
export function finishEvent (event: StoredEvent): StoredEvent {
  if (event.recurringEventId !== undefined && event.status === 'cancelled' && event.start === undefined) {
    // A cancelled instance needs only its original start.
    const original = event.originalStartTime
    if (original === undefined) throw apiErrors.required('Missing original start time.')
    event.coverStartMs = original.ms
    event.coverEndMs = original.ms + 1
    return event
  }
  const { start, end } = event
  if (start === undefined) throw apiErrors.required('Missing start time.')
  if (end === undefined) throw apiErrors.required('Missing end time.')
  if ((start.date === undefined) !== (end.date === undefined)) throw apiErrors.badRequest('Start and end times must either both be date or both be dateTime.')
  if (end.ms < start.ms || (start.date !== undefined && end.ms === start.ms)) throw apiErrors.timeRangeEmpty('end')
  event.coverStartMs = start.ms
  event.coverEndMs = end.ms
  if (event.recurrence !== undefined && event.recurrence.length > 0) {
    if (start.dateTime !== undefined && (start.timeZone === undefined || end.timeZone === undefined)) {
      throw apiErrors.badRequest(`Missing time zone definition for ${start.timeZone === undefined ? 'start' : 'end'} time.`)
    }
    const zone = start.timeZone ?? 'UTC'
    const last = lastOccurrenceStart(event.recurrence, { ms: start.ms, allDay: start.date !== undefined, zone })
    event.coverEndMs = last === Infinity ? Infinity : last + (end.ms - start.ms)
  }
  return event
}

export function etagOf (event: StoredEvent): string {
  return `"${event.updated * 1000 + (event.changedSeq % 1000)}"`
}

const rfc3339 = (ms: number): string => new Date(ms).toISOString()

/** An EventTime as Google writes it: a dateTime in its own zone, else the calendar's (or the request's). */
function timeOut (time: StoredTime, displayZone: string): EventTime {
  if (time.date !== undefined) return { date: time.date, ...(time.timeZone === undefined ? {} : { timeZone: time.timeZone }) }
  const dateTime = formatDateTime(time.ms, time.timeZone ?? displayZone)
  return { dateTime, ...(time.timeZone === undefined ? {} : { timeZone: time.timeZone }) }
}

export interface RenderOptions {
  displayZone: string
  calendarId: string
  origin: string
  ownerEmail: string
  /** Cancelled events on incremental lists carry only what Google guarantees for them. */
  minimalWhenCancelled: boolean
}

export type EventResource = Record<string, unknown>

export function renderEvent (event: StoredEvent, options: RenderOptions): EventResource {
  const base: EventResource = { kind: 'calendar#event', etag: etagOf(event), id: event.id, status: event.status }
  const cancelledInstance = event.status === 'cancelled' && event.recurringEventId !== undefined
  if (event.status === 'cancelled' && (options.minimalWhenCancelled || cancelledInstance)) {
    // "Cancelled exceptions are only guaranteed to have values for the id, recurringEventId and
    // originalStartTime fields"; a deleted event, only its id.
    if (cancelledInstance && event.originalStartTime !== undefined) {
      base['recurringEventId'] = event.recurringEventId
      base['originalStartTime'] = timeOut(event.originalStartTime, options.displayZone)
    }
    return base
  }
  const self = event.organizerEmail === options.ownerEmail
  const resource: EventResource = {
    ...base,
    htmlLink: `${options.origin}/calendar/event?eid=${Buffer.from(`${event.id} ${options.calendarId}`).toString('base64url')}`,
    created: rfc3339(event.created),
    updated: rfc3339(event.updated)
  }
  if (event.summary !== undefined) resource['summary'] = event.summary
  if (event.description !== undefined) resource['description'] = event.description
  if (event.location !== undefined) resource['location'] = event.location
  resource['creator'] = { email: event.organizerEmail, ...(self ? { self: true } : {}) }
  resource['organizer'] = { email: event.organizerEmail, ...(self ? { self: true } : {}) }
  if (event.start !== undefined) resource['start'] = timeOut(event.start, options.displayZone)
  if (event.end !== undefined) resource['end'] = timeOut(event.end, options.displayZone)
  if (event.recurrence !== undefined && event.recurrence.length > 0) resource['recurrence'] = [...event.recurrence]
  if (event.recurringEventId !== undefined) resource['recurringEventId'] = event.recurringEventId
  if (event.originalStartTime !== undefined) resource['originalStartTime'] = timeOut(event.originalStartTime, options.displayZone)
  resource['iCalUID'] = event.iCalUID
  resource['sequence'] = event.sequence
  resource['reminders'] = { useDefault: true }
  resource['eventType'] = 'default'
  return { ...resource, ...event.extra }
}

/**
 * The id of one occurrence of a series, as Google forms it: the series id, `_`, and the original
 * start in UTC basic format (`20240501T090000Z`), or the date alone (`20240501`) for all-day series.
 */
export function instanceId (seriesId: string, originalStart: StoredTime): string {
  if (originalStart.date !== undefined) return `${seriesId}_${originalStart.date.replaceAll('-', '')}`
  return `${seriesId}_${new Date(originalStart.ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')}`
}

const INSTANCE_SUFFIX = /^(.+)_(\d{8})(T\d{6}Z)?$/

/** Splits an instance id into its series id and the original start it names; undefined otherwise. */
export function parseInstanceId (id: string): { seriesId: string, date?: string, ms?: number } | undefined {
  const match = INSTANCE_SUFFIX.exec(id)
  if (match === null) return undefined
  const [, seriesId = '', day = '', time] = match
  if (time === undefined) return { seriesId, date: `${day.slice(0, 4)}-${day.slice(4, 6)}-${day.slice(6, 8)}` }
  const parsed = DateTime.fromFormat(`${day}${time}`, "yyyyMMdd'T'HHmmss'Z'", { zone: 'UTC' })
  return parsed.isValid ? { seriesId, ms: parsed.toMillis() } : undefined
}
