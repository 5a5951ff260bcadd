// Graph's event resource: what a write may carry (checked with Graph's refusals), the content the
// stand-in keeps, and how an event, an occurrence or an exception is written back out.
import { GraphError, graphErrors } from './errors.js'
import { readRecurrence } from './recurrence.js'
import type { Recurrence } from './recurrence.js'
import { graphDateTime, ianaZone, millisToWall, parseLocalDateTime, utcText, wallDate, wallToMillis } from './zones.js'
import type { Wall } from './zones.js'

export interface EventTime {
  wall: Wall
  /** IANA zone the wall clock is read in. */
  zone: string
  /** The zone's name as the writer gave it (Windows or IANA): Graph answers it as originalStartTimeZone. */
  zoneName: string
  ms: number
}

export interface Content {
  subject: string
  body: { contentType: 'text' | 'html', content: string }
  location: Record<string, unknown>
  start: EventTime
  end: EventTime
  isAllDay: boolean
  showAs: string
  importance: string
  sensitivity: string
  isReminderOn: boolean
  reminderMinutesBeforeStart: number
  categories: string[]
  /** Properties kept and answered as given (attendees, locations...), so a client's data survives. */
  extra: Record<string, unknown>
}

export type ContentPatch = Partial<Omit<Content, 'extra'>> & { extra?: Record<string, unknown> }

export interface EventWrite {
  patch: ContentPatch
  /** null: remove the recurrence (the series becomes a single event). */
  recurrence?: Recurrence | null
  transactionId?: string
}

type EventType = 'singleInstance' | 'occurrence' | 'exception' | 'seriesMaster'

/** One event as answered: a single event, a series master, an occurrence or an exception. */
export interface Instance {
  id: string
  type: EventType
  content: Content
  changeKey: string
  created: number
  lastModified: number
  iCalUId: string
  transactionId?: string
  recurrence?: Recurrence
  seriesMasterId?: string
  originalStartMs?: number
  originalStartTimeZone: string
  originalEndTimeZone: string
}

const SHOW_AS = new Set(['free', 'tentative', 'busy', 'oof', 'workingElsewhere', 'unknown'])
const IMPORTANCE = new Set(['low', 'normal', 'high'])
const SENSITIVITY = new Set(['normal', 'personal', 'private', 'confidential'])
const PASS_THROUGH = ['attendees', 'locations', 'responseRequested', 'allowNewTimeProposals', 'hideAttendees', 'isOnlineMeeting', 'onlineMeetingProvider']
// Computed or server-owned properties: a client that sends back what it read gets them ignored.
const READ_ONLY = new Set([
  'id', '@odata.etag', '@odata.type', '@odata.context', 'changeKey', 'createdDateTime', 'lastModifiedDateTime', 'type', 'seriesMasterId',
  'iCalUId', 'uid', 'webLink', 'organizer', 'isOrganizer', 'isCancelled', 'isDraft', 'hasAttachments', 'bodyPreview', 'responseStatus',
  'originalStart', 'originalStartTimeZone', 'originalEndTimeZone', 'onlineMeeting', 'onlineMeetingUrl', 'occurrenceId'
])
const WRITABLE = new Set([
  'subject', 'body', 'location', 'start', 'end', 'isAllDay', 'showAs', 'importance', 'sensitivity', 'isReminderOn',
  'reminderMinutesBeforeStart', 'categories', 'recurrence', 'transactionId', ...PASS_THROUGH
])

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function bodyReadError (message: string): Error {
  return graphErrors.badBody(message)
}

/** Reads a dateTimeTimeZone (`{ dateTime, timeZone }`). */
function readTime (value: unknown, field: string): EventTime {
  if (!isRecord(value)) throw bodyReadError(`Cannot convert the literal for '${field}' to the expected type 'microsoft.graph.dateTimeTimeZone'.`)
  const { dateTime, timeZone } = value
  const zoneName = typeof timeZone === 'string' ? timeZone : ''
  const zone = ianaZone(zoneName)
  if (zone === undefined) throw graphErrors.timeZone(zoneName)
  if (typeof dateTime !== 'string') throw bodyReadError(`Cannot convert the literal for '${field}.dateTime' to the expected type 'Edm.String'.`)
  const wall = parseLocalDateTime(dateTime.replace(/Z$/, ''))
  if (wall === undefined) throw bodyReadError(`Cannot convert the literal '${dateTime}' to the expected type 'Edm.DateTime'.`)
  return { wall, zone, zoneName, ms: wallToMillis(zone, wall) }
}

function oneOf (value: unknown, allowed: Set<string>, field: string): string {
  if (typeof value !== 'string') throw bodyReadError(`Cannot convert the literal for '${field}' to the expected type.`)
  const match = [...allowed].find((item) => item.toLowerCase() === value.toLowerCase())
  if (match === undefined) throw bodyReadError(`Requested value '${value}' was not found in '${field}'.`)
  return match
}

/** Reads a request body; `zoneName` is the series zone a recurrence defaults to when the body has no start. */
export function readEventWrite (body: unknown, zoneName: string): EventWrite {
  if (!isRecord(body)) throw graphErrors.badBody()
  for (const key of Object.keys(body)) {
    if (!WRITABLE.has(key) && !READ_ONLY.has(key) && !key.includes('@')) {
      throw new GraphError(400, 'RequestBodyRead',
        `The property '${key}' does not exist on type 'Microsoft.OutlookServices.Event'. Make sure to only use property names that are defined by the type or mark the type as open type.`)
    }
  }
  const patch: ContentPatch = {}
  if (body['subject'] !== undefined) {
    if (body['subject'] !== null && typeof body['subject'] !== 'string') throw bodyReadError("Cannot convert the literal for 'subject' to the expected type 'Edm.String'.")
    patch.subject = body['subject'] ?? ''
  }
  if (body['body'] !== undefined && body['body'] !== null) {
    const value = body['body']
    if (!isRecord(value)) throw bodyReadError("Cannot convert the literal for 'body' to the expected type 'microsoft.graph.itemBody'.")
    const contentType = value['contentType'] === undefined ? 'text' : oneOf(value['contentType'], new Set(['text', 'html']), 'body.contentType')
    if (value['content'] !== undefined && typeof value['content'] !== 'string') throw bodyReadError("Cannot convert the literal for 'body.content' to the expected type 'Edm.String'.")
    patch.body = { contentType: contentType as 'text' | 'html', content: typeof value['content'] === 'string' ? value['content'] : '' }
  }
  if (body['location'] !== undefined) {
    const value = body['location']
    if (value !== null && !isRecord(value)) throw bodyReadError("Cannot convert the literal for 'location' to the expected type 'microsoft.graph.location'.")
    patch.location = value === null ? { displayName: '' } : { ...value, displayName: typeof value['displayName'] === 'string' ? value['displayName'] : '' }
  }
  if (body['start'] !== undefined) patch.start = readTime(body['start'], 'start')
  if (body['end'] !== undefined) patch.end = readTime(body['end'], 'end')
  if (body['isAllDay'] !== undefined) {
    if (typeof body['isAllDay'] !== 'boolean') throw bodyReadError("Cannot convert the literal for 'isAllDay' to the expected type 'Edm.Boolean'.")
    patch.isAllDay = body['isAllDay']
  }
  if (body['showAs'] !== undefined) patch.showAs = oneOf(body['showAs'], SHOW_AS, 'showAs')
  if (body['importance'] !== undefined) patch.importance = oneOf(body['importance'], IMPORTANCE, 'importance')
  if (body['sensitivity'] !== undefined) patch.sensitivity = oneOf(body['sensitivity'], SENSITIVITY, 'sensitivity')
  if (body['isReminderOn'] !== undefined) {
    if (typeof body['isReminderOn'] !== 'boolean') throw bodyReadError("Cannot convert the literal for 'isReminderOn' to the expected type 'Edm.Boolean'.")
    patch.isReminderOn = body['isReminderOn']
  }
  if (body['reminderMinutesBeforeStart'] !== undefined) {
    const minutes = body['reminderMinutesBeforeStart']
    if (!Number.isInteger(minutes) || (minutes as number) < 0) throw bodyReadError("Cannot convert the literal for 'reminderMinutesBeforeStart' to the expected type 'Edm.Int32'.")
    patch.reminderMinutesBeforeStart = minutes as number
  }
  if (body['categories'] !== undefined) {
    const categories = body['categories']
    if (!Array.isArray(categories) || !categories.every((item) => typeof item === 'string')) throw bodyReadError("Cannot convert the literal for 'categories' to the expected type 'Collection(Edm.String)'.")
    patch.categories = categories as string[]
  }
  const extra: Record<string, unknown> = {}
  for (const name of PASS_THROUGH) if (body[name] !== undefined) extra[name] = body[name]
  if (Object.keys(extra).length > 0) patch.extra = extra
  const write: EventWrite = { patch }
  if (body['recurrence'] !== undefined) {
    write.recurrence = body['recurrence'] === null ? null : readRecurrence(body['recurrence'], patch.start?.zoneName ?? zoneName)
  }
  if (body['transactionId'] !== undefined && body['transactionId'] !== null) {
    if (typeof body['transactionId'] !== 'string') throw bodyReadError("Cannot convert the literal for 'transactionId' to the expected type 'Edm.String'.")
    write.transactionId = body['transactionId']
  }
  return write
}

const isMidnight = (wall: Wall): boolean => wall.h === 0 && wall.min === 0 && wall.s === 0

/** Checks merged content; throws Graph's 400s. */
export function checkContent (content: Content): Content {
  const { start, end } = content
  if (end.ms < start.ms) throw graphErrors.validation('The end time of the event must not be before its start time.')
  if (content.isAllDay) {
    if (!isMidnight(start.wall) || !isMidnight(end.wall)) {
      throw graphErrors.validation('An all-day event must start and end at midnight (a whole number of days).')
    }
    if (wallDate(end.wall) <= wallDate(start.wall)) throw graphErrors.validation('An all-day event must last at least one day.')
  }
  return content
}

/** Content of a new event from a write (start and end are required). */
export function newContent (write: EventWrite): Content {
  const { patch } = write
  if (patch.start === undefined || patch.end === undefined) throw graphErrors.validation(`The '${patch.start === undefined ? 'start' : 'end'}' property is required for an event.`)
  return checkContent({
    subject: patch.subject ?? '',
    body: patch.body ?? { contentType: 'text', content: '' },
    location: patch.location ?? { displayName: '' },
    start: patch.start,
    end: patch.end,
    isAllDay: patch.isAllDay ?? false,
    showAs: patch.showAs ?? 'busy',
    importance: patch.importance ?? 'normal',
    sensitivity: patch.sensitivity ?? 'normal',
    isReminderOn: patch.isReminderOn ?? true,
    reminderMinutesBeforeStart: patch.reminderMinutesBeforeStart ?? 15,
    categories: patch.categories ?? [],
    extra: patch.extra ?? {}
  })
}

/** Content after a PATCH: given properties replace stored ones. */
export function mergeContent (current: Content, patch: ContentPatch): Content {
  const { extra, ...rest } = patch
  const next: Content = { ...current, ...rest, extra: { ...current.extra } }
  for (const [name, value] of Object.entries(extra ?? {})) {
    if (value === null) delete next.extra[name]
    else next.extra[name] = value
  }
  return checkContent(next)
}

/** A time moved to another instant, read in the same zone. */
function timeAt (time: EventTime, ms: number): EventTime {
  return { ...time, ms, wall: millisToWall(time.zone, ms) }
}

/** The whole days an all-day span covers, by its wall dates. */
function daysBetween (start: Wall, end: Wall): number {
  return Math.round((Date.UTC(end.y, end.m - 1, end.d) - Date.UTC(start.y, start.m - 1, start.d)) / 86_400_000)
}

/** The content of one occurrence of a series: the master's, moved to the occurrence's start. */
export function occurrenceContent (master: Content, startMs: number): Content {
  const start = timeAt(master.start, startMs)
  let end: EventTime
  if (master.isAllDay) {
    const days = daysBetween(master.start.wall, master.end.wall)
    const date = new Date(Date.UTC(start.wall.y, start.wall.m - 1, start.wall.d + days))
    const wall: Wall = { y: date.getUTCFullYear(), m: date.getUTCMonth() + 1, d: date.getUTCDate(), h: 0, min: 0, s: 0 }
    end = { ...master.end, wall, ms: wallToMillis(master.end.zone, wall) }
  } else {
    end = timeAt(master.end, startMs + (master.end.ms - master.start.ms))
  }
  return { ...master, start, end }
}

export interface RenderOptions {
  origin: string
  /** Output zone (IANA) and the name to answer it by: the `Prefer: outlook.timezone` zone, or UTC. */
  zone: string
  zoneName: string
  organizer: { name: string, address: string }
  /** Delta pages mark each item with its type. */
  withType?: boolean
}

function timeOut (time: EventTime, allDay: boolean, options: RenderOptions): { dateTime: string, timeZone: string } {
  // All-day events are dates: they keep their midnight whatever zone the answer is in.
  const wall = allDay ? time.wall : millisToWall(options.zone, time.ms)
  return { dateTime: graphDateTime(wall), timeZone: options.zoneName }
}

const iso7 = (ms: number): string => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$10000Z')

function preview (body: Content['body']): string {
  const text = body.contentType === 'html' ? body.content.replace(/<[^>]*>/g, ' ') : body.content
  return text.replace(/\s+/g, ' ').trim().slice(0, 255)
}

/** Recurrence as Graph answers it. */
function recurrenceOut (recurrence: Recurrence): Record<string, unknown> {
  return { pattern: { ...recurrence.pattern, daysOfWeek: [...recurrence.pattern.daysOfWeek] }, range: { ...recurrence.range } }
}

export type EventResource = Record<string, unknown>

export function renderInstance (instance: Instance, options: RenderOptions): EventResource {
  const { content } = instance
  const resource: EventResource = {}
  if (options.withType === true) resource['@odata.type'] = '#microsoft.graph.event'
  Object.assign(resource, {
    '@odata.etag': `W/"${instance.changeKey}"`,
    id: instance.id,
    createdDateTime: iso7(instance.created),
    lastModifiedDateTime: iso7(instance.lastModified),
    changeKey: instance.changeKey,
    categories: [...content.categories],
    transactionId: instance.transactionId ?? null,
    originalStartTimeZone: instance.originalStartTimeZone,
    originalEndTimeZone: instance.originalEndTimeZone,
    iCalUId: instance.iCalUId,
    uid: instance.iCalUId,
    reminderMinutesBeforeStart: content.reminderMinutesBeforeStart,
    isReminderOn: content.isReminderOn,
    hasAttachments: false,
    subject: content.subject,
    bodyPreview: preview(content.body),
    importance: content.importance,
    sensitivity: content.sensitivity,
    isAllDay: content.isAllDay,
    isCancelled: false,
    isOrganizer: true,
    responseRequested: true,
    seriesMasterId: instance.seriesMasterId ?? null,
    showAs: content.showAs,
    type: instance.type,
    webLink: `${options.origin}/owa/?itemid=${encodeURIComponent(instance.id)}&exvsurl=1&path=/calendar/item`,
    onlineMeetingUrl: null,
    isOnlineMeeting: false,
    onlineMeetingProvider: 'unknown',
    allowNewTimeProposals: true,
    isDraft: false,
    hideAttendees: false
  })
  if (instance.originalStartMs !== undefined) resource['originalStart'] = utcText(instance.originalStartMs)
  Object.assign(resource, {
    responseStatus: { response: 'organizer', time: '0001-01-01T00:00:00Z' },
    body: { ...content.body },
    start: timeOut(content.start, content.isAllDay, options),
    end: timeOut(content.end, content.isAllDay, options),
    location: { locationType: 'default', uniqueIdType: 'unknown', address: {}, coordinates: {}, ...content.location },
    locations: content.location['displayName'] === '' ? [] : [{ locationType: 'default', uniqueIdType: 'unknown', ...content.location }],
    recurrence: instance.recurrence === undefined ? null : recurrenceOut(instance.recurrence),
    attendees: [],
    organizer: { emailAddress: { ...options.organizer } },
    onlineMeeting: null
  })
  return { ...resource, ...content.extra }
}

/** A removed item on a delta page. */
export function removedItem (id: string): EventResource {
  return { '@odata.type': '#microsoft.graph.event', id, '@removed': { reason: 'deleted' } }
}
