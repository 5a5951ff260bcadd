import { Type, type Static } from '@sinclair/typebox'
import { WriteIssueSchema, type WriteIssue } from './sync/provider-events.js'
import { EVENT_COLOR_NAMES, type EventColor } from './event-colors.js'
import { CLIENT_EVENT_ID_PATTERN, CLIENT_EVENT_PATH_ID_PATTERN, EVENT_PATH_ID_PATTERN, OBJECT_ID_PATTERN } from './ids.js'

// Dates travel as strings: RFC 3339 with an explicit offset for timed events, `YYYY-MM-DD` for
// all-day events (end exclusive). Which of the two an event must use is checked in lib/events,
// because it depends on `isAllDay`.
const DATE_ONLY = '\\d{4}-\\d{2}-\\d{2}'
const DATE_TIME = '\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})'

const DATE_ONLY_PATTERN = `^${DATE_ONLY}$`
const DATE_TIME_PATTERN = `^${DATE_TIME}$`

export const EVENT_LIMITS = {
  titleLength: 1024,
  descriptionLength: 16384,
  locationLength: 1024,
  ruleLines: 20,
  ruleLineLength: 1000,
  changesPerRequest: 500,
  rangeDays: 400,
  occurrencesPerSeries: 2000,
  /** What one range read may hold: stored events read plus occurrences made. */
  rangeItems: 5000,
  /** The same in characters of text, each item counted with RANGE_ITEM_OVERHEAD for its other fields. */
  rangeCharacters: 4 * 1024 * 1024,
  /**
   * The steps of their rules (periods, a YEARLY one counting 8; lib/events/recurrence.ts) that the
   * series of one range read may take together, finding first matches included: a series whose
   * rule rarely matches costs walking without adding to the answer.
   */
  rangePeriods: 50_000,
  /** Reminders of one event: Google keeps at most 5 overrides, each 0 to 40320 minutes (4 weeks) before. */
  reminders: 5,
  reminderMinutes: 40_320
} as const

// Text a person typed: every character but the controls (Unicode Cc), tab and line feed excepted.
// A control character in a title or a place is never meant, breaks other calendars' parsers and
// can hide text from a reader (a lone carriage return, an escape sequence in a terminal).
const PLAIN_TEXT_PATTERN = '^[^\\x00-\\x08\\x0B-\\x1F\\x7F-\\x9F]*$'

function plainText (maxLength: number, description?: string) {
  return Type.String({ maxLength, pattern: PLAIN_TEXT_PATTERN, ...(description === undefined ? {} : { description }) })
}

/** What an item of a range answer costs beside its free text (ids, dates, flags as JSON). */
export const RANGE_ITEM_OVERHEAD = 400

const ObjectIdString = Type.String({
  pattern: OBJECT_ID_PATTERN,
  description: 'A 24-hex-character object id'
})

// A stored event is addressed by its 24-hex id; an occurrence of a series that was never edited
// is addressed by `<seriesId>_<original start>` (UTC `YYYYMMDDTHHMMSSZ`, or `YYYYMMDD` all-day).
const EventPathId = Type.String({
  pattern: EVENT_PATH_ID_PATTERN,
  description: 'Event id, or `<seriesId>_<originalStart>` for an occurrence of a recurring series'
})

/** The name format of an IANA time zone (`Europe/Paris`, `UTC`), checked with Intl (plugins/external/request-bodies.ts registers it). */
export const TIME_ZONE_FORMAT = 'iana-time-zone'

/** An RFC 3339 date-time with an explicit offset, checked as a real date (`format`) of the one spelling stored (`pattern`). */
function dateTimeString (description: string, examples?: string[]) {
  return Type.String({ format: 'date-time', pattern: DATE_TIME_PATTERN, maxLength: 40, description, ...(examples === undefined ? {} : { examples }) })
}

function eventDate (description: string) {
  return Type.Union([
    Type.String({ format: 'date', pattern: DATE_ONLY_PATTERN, description: 'All-day: YYYY-MM-DD' }),
    dateTimeString('Timed: RFC 3339 with an offset')
  ], { description })
}

function timeZoneName (description: string) {
  return Type.String({ minLength: 1, maxLength: 64, format: TIME_ZONE_FORMAT, description })
}

const EventDateString = eventDate('RFC 3339 date-time with offset (timed) or YYYY-MM-DD (all-day, end exclusive)')

const EventOrigin = Type.Union([
  Type.Literal('compass'),
  Type.Literal('provider'),
  Type.Literal('providerImport')
], { description: 'Where the event was created' })

const EventPriority = Type.Union([
  Type.Literal('unassigned'),
  Type.Literal('work'),
  Type.Literal('self'),
  Type.Literal('relationships')
])

const EventStatus = Type.Union([
  Type.Literal('confirmed'),
  Type.Literal('cancelled')
], { description: '`cancelled` on an occurrence removes it from its series; on any other event it deletes it' })

const Recurrence = Type.Object({
  rule: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: EVENT_LIMITS.ruleLineLength }), {
    minItems: 1,
    maxItems: EVENT_LIMITS.ruleLines,
    description: 'iCalendar lines of a series base: one `RRULE:` line and any `EXDATE` lines'
  })),
  eventId: Type.Optional(Type.String({
    pattern: CLIENT_EVENT_ID_PATTERN,
    description: 'On an occurrence: the id of its series base'
  }))
}, { additionalProperties: false })

// A reminder is a notification that many minutes before the event's start. Providers write them
// as Google's popup overrides, Graph's one reminderMinutesBeforeStart, CalDAV's DISPLAY VALARMs.
const Reminder = Type.Object({
  minutes: Type.Integer({ minimum: 0, maximum: EVENT_LIMITS.reminderMinutes, description: 'Minutes before the start (0 to 40320, 4 weeks)' })
}, { additionalProperties: false })

const Reminders = Type.Array(Reminder, {
  maxItems: EVENT_LIMITS.reminders,
  uniqueItems: true,
  description: 'Notifications before the start, each time once; absent: the calendar\'s default reminders; empty: none'
})

// An event's own colour, one of Google Calendar's eleven event colours by the name its UI shows
// (lib/events/colors.ts: Google's colorId, CalDAV's COLOR). Absent: drawn in the calendar's colour.
// An `enum` rather than a union of literals: a wrong value is one sentence, "must be equal to one
// of the allowed values", instead of one per colour.
const EventColorSchema = Type.Unsafe<EventColor>(Type.String({
  enum: [...EVENT_COLOR_NAMES],
  description: `The event's own colour, one of Google Calendar's event colours: ${EVENT_COLOR_NAMES.join(', ')}; absent: the calendar's colour`
}))

// Fields every stored event has. A change may leave out the ones with a default (see below).
const recordFields = {
  title: Type.String({ maxLength: EVENT_LIMITS.titleLength }),
  description: Type.Optional(Type.String({ maxLength: EVENT_LIMITS.descriptionLength })),
  location: Type.Optional(Type.String({ maxLength: EVENT_LIMITS.locationLength })),
  startDate: EventDateString,
  endDate: EventDateString,
  isAllDay: Type.Boolean(),
  timeZone: timeZoneName('IANA time zone the event repeats in (wall-clock times keep across DST changes)'),
  recurrence: Type.Optional(Recurrence),
  originalStartDate: Type.Optional(eventDate('On an occurrence: the start it had in its series before any edit')),
  status: EventStatus,
  origin: EventOrigin,
  priority: EventPriority,
  calendarId: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Provider calendar the event belongs to' })),
  providerEventId: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  reminders: Type.Optional(Reminders),
  color: Type.Optional(EventColorSchema)
}

export const EVENT_DEFAULTS = {
  title: '',
  isAllDay: false,
  timeZone: 'UTC',
  status: 'confirmed',
  origin: 'compass',
  priority: 'unassigned'
} as const

// No JSON-schema `default`s: the body is a union (one change or an array), and ajv applies no
// defaults inside a union. lib/events fills them in (withDefaults) and the descriptions say so.
const changeFields = {
  ...recordFields,
  title: Type.Optional(plainText(EVENT_LIMITS.titleLength, 'Default: empty. No control characters but tab and line feed')),
  description: Type.Optional(plainText(EVENT_LIMITS.descriptionLength, 'No control characters but tab and line feed')),
  location: Type.Optional(plainText(EVENT_LIMITS.locationLength, 'No control characters but tab and line feed')),
  isAllDay: Type.Optional(Type.Boolean({ description: 'Default: false' })),
  timeZone: Type.Optional(timeZoneName('IANA time zone the event repeats in (wall-clock times keep across DST changes). Default: UTC')),
  status: Type.Optional(Type.Union(EventStatus.anyOf, { description: `${EventStatus.description ?? ''}. Default: confirmed` })),
  origin: Type.Optional(Type.Union(EventOrigin.anyOf, { description: `${EventOrigin.description ?? ''}. Default: compass` })),
  priority: Type.Optional(Type.Union(EventPriority.anyOf, { description: 'Default: unassigned' })),
  calendarId: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 1024,
    description: 'On a new event: the provider calendar it goes to (`GET /api/calendars`); absent, the user\'s own calendar, written to no provider. An existing event stays in its calendar: another one is refused (400)'
  })),
  providerEventId: Type.Optional(Type.String({
    maxLength: 1024,
    description: 'Read-only: the event\'s id at its provider, set by the server; a value sent is ignored'
  }))
}

// The body of a write. `user` and `lastUpdated` are not part of it: the server sets them.
export const EventChange = Type.Object({
  _id: Type.Optional(Type.String({
    pattern: CLIENT_EVENT_PATH_ID_PATTERN,
    description: 'Event id chosen by the client (a leading `optimistic-` is stripped); an occurrence id only on PUT to that id'
  })),
  // A client may send back what it read: these two are accepted and ignored.
  user: Type.Optional(Type.String({ description: 'Ignored: the owner is always the signed-in user' })),
  lastUpdated: Type.Optional(Type.String({ description: 'Ignored: the server sets it on every change' })),
  syncIssue: Type.Optional(Type.Unsafe<WriteIssue>({ description: 'Ignored: the server sets it' })),
  ...changeFields
}, {
  additionalProperties: false,
  description: 'One event as the client wants it to be',
  examples: [
    { title: 'Dentist', startDate: '2026-03-02T09:00:00+01:00', endDate: '2026-03-02T10:00:00+01:00', timeZone: 'Europe/Berlin' },
    { title: 'Holiday', startDate: '2026-08-03', endDate: '2026-08-08', isAllDay: true, timeZone: 'Europe/Paris' },
    { title: 'Stand-up', startDate: '2026-03-02T09:30:00Z', endDate: '2026-03-02T09:45:00Z', recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR'] } }
  ]
})

export const EventChangeBody = Type.Union([
  EventChange,
  Type.Array(EventChange, { minItems: 1, maxItems: EVENT_LIMITS.changesPerRequest })
], { description: 'One change, or an array applied all-or-nothing' })

export const Event = Type.Object({
  _id: EventPathId,
  user: ObjectIdString,
  ...recordFields,
  lastUpdated: Type.String({ format: 'date-time', description: 'Set by the server on every change' }),
  syncIssue: Type.Optional(Type.Unsafe<WriteIssue>({
    ...WriteIssueSchema,
    description: 'Present while the event\'s change made here is not at its provider calendar: refused (a calendar the account may only read, an invalid change), its calendar gone, or failing'
  }))
}, { description: 'A stored event, or an occurrence of a recurring series' })

export const EventList = Type.Array(Event)

export const EventParams = Type.Object({ id: EventPathId }, { additionalProperties: false })

const ApplyTo = Type.Union([
  Type.Literal('this'),
  Type.Literal('thisAndFollowing'),
  Type.Literal('all')
], { description: 'For an occurrence of a series: which occurrences the delete removes' })

export const DeleteQuery = Type.Object({
  applyTo: Type.Optional(ApplyTo)
}, { additionalProperties: false })

export const RangeQuery = Type.Object({
  start: dateTimeString('RFC 3339 with offset, inclusive', ['2026-03-01T00:00:00Z']),
  end: dateTimeString('RFC 3339 with offset, exclusive', ['2026-04-01T00:00:00+02:00'])
}, { additionalProperties: false })

/** The most results a page of a search holds, and how many it holds unless asked. */
export const SEARCH_PAGE = { most: 100, usual: 25 } as const

export const SearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: 200, description: 'Words to find in titles, locations and descriptions: an event matches when it holds a word beginning with each of them (case and accents ignored)', examples: ['stand berl'] }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SEARCH_PAGE.most, default: SEARCH_PAGE.usual, description: 'Events per page' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 400, description: 'The `next` of the page before, for the page after it' }))
}, { additionalProperties: false })

export const SearchResults = Type.Object({
  events: EventList,
  next: Type.Union([Type.String(), Type.Null()], { description: 'The cursor of the next page; null on the last' })
}, { additionalProperties: false })

export type SearchQueryInput = Static<typeof SearchQuery>
export type SearchResultsView = Static<typeof SearchResults>
export type EventChangeInput = Static<typeof EventChange>
export type EventReminder = Static<typeof Reminder>
export type EventChangeBodyInput = Static<typeof EventChangeBody>
export type EventView = Static<typeof Event>
export type EventApplyTo = Static<typeof ApplyTo>

const CalendarKey = Type.String({
  minLength: 1,
  maxLength: 1024,
  description: 'A calendarId from `GET /api/calendars`, or `own` (the default): the user\'s own calendar'
})

export const ExportQuery = Type.Object({
  calendarId: Type.Optional(CalendarKey),
  start: Type.Optional(dateTimeString('RFC 3339 with offset, inclusive. Default: a year before now', ['2026-01-01T00:00:00Z'])),
  end: Type.Optional(dateTimeString('RFC 3339 with offset, exclusive, at most 1830 days after start. Default: four years after start', ['2027-01-01T00:00:00Z']))
}, { additionalProperties: false })

export const ImportQuery = Type.Object({
  calendarId: Type.Optional(CalendarKey)
}, { additionalProperties: false })

export const ImportResultView = Type.Object({
  imported: Type.Integer({ minimum: 0, description: 'Events stored (series, single events, edited and cancelled occurrences)' }),
  skipped: Type.Integer({ minimum: 0, description: 'Events already in the calendar from an earlier import of the same file (same UID): kept as they are' }),
  errors: Type.Array(Type.String(), { description: 'Why each event not imported was not, naming it by its title or UID' })
}, { additionalProperties: false, description: 'What the import did' })

export type ImportResultBody = Static<typeof ImportResultView>
