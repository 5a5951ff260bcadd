import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { EVENT_COLOR_NAMES, type EventColor } from '../event-colors.js'
import { CalendarIdSchema, ConnectionIdSchema, EventIdSchema, IsoDateTimeSchema, providerRemindersSchema, ProviderSchema, UserIdSchema } from './common.js'

// What the Sync service hands the backend about a provider calendar's events, and what the
// backend hands Sync about its own events for a provider write. The backend keeps the user's
// calendar (own and imported events alike, docs/design.md, "Provider data"); Sync never opens its
// database. Both services import these schemas, so the two sides cannot drift.

/** `YYYY-MM-DD` (all-day, end exclusive) or an RFC 3339 date-time with an offset. */
const ProviderDateSchema = Type.String({
  pattern: '^(\\d{4}-\\d{2}-\\d{2}|\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:\\d{2}))$',
  maxLength: 40
})

/** An event's content in the backend's own terms (schemas/event.ts), as far as providers carry it. */
const EventContentSchema = Type.Object({
  title: Type.String({ maxLength: 1024 }),
  description: Type.Optional(Type.String({ maxLength: 8192 })),
  location: Type.Optional(Type.String({ maxLength: 1024 })),
  startDate: ProviderDateSchema,
  endDate: ProviderDateSchema,
  isAllDay: Type.Boolean(),
  timeZone: Type.String({ minLength: 1, maxLength: 64, description: 'IANA zone name' }),
  /** On a series master: its iCalendar RRULE / EXDATE / RDATE lines. */
  recurrence: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { minItems: 1, maxItems: 20 })),
  /** Notifications before the start (schemas/event.ts); absent: the calendar's default reminders, empty: none. */
  reminders: Type.Optional(providerRemindersSchema()),
  /** The event's own colour (schemas/event.ts, lib/events/colors.ts); absent: the calendar's. */
  color: Type.Optional(Type.Unsafe<EventColor>(Type.String({ enum: [...EVENT_COLOR_NAMES] })))
}, { additionalProperties: false })

/** One event of a provider calendar, as the provider last described it. */
const ProviderEventSchema = Type.Object({
  providerEventId: Type.String({ minLength: 1, maxLength: 1024, description: 'The provider\'s id of the event within the calendar' }),
  iCalUID: Type.Optional(Type.String({ maxLength: 1024, description: 'Kept so copies of one meeting in two connected accounts are recognised' })),
  etag: Type.Optional(Type.String({ maxLength: 256 })),
  updated: IsoDateTimeSchema,
  status: Type.Union([Type.Literal('confirmed'), Type.Literal('cancelled')]),
  /** Absent on a cancelled item: providers send a cancellation without content. */
  content: Type.Optional(EventContentSchema),
  /** On an exception (a changed or cancelled occurrence): the provider id of its series master. */
  recurringEventId: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  /** On an exception: the start the occurrence had in its series. */
  originalStartDate: Type.Optional(ProviderDateSchema),
  /** Set when this provider event was created from one of the backend's own events (a write-back). */
  eventId: Type.Optional(EventIdSchema),
  ownWrite: Type.Optional(Type.Literal(true, {
    description: 'This version is the one the Sync service itself last wrote for `eventId` (the provider echoing a write-back): no change by another device'
  }))
}, { additionalProperties: false })

export const PROVIDER_EVENT_BATCH_MAX = 2500

/**
 * One page of a calendar's events, applied by the backend as one bulk write, idempotently, keyed
 * by (user, calendarId, providerEventId). Replaying a page changes nothing.
 */
export const ProviderEventBatchSchema = Type.Object({
  userId: UserIdSchema,
  connectionId: ConnectionIdSchema,
  provider: ProviderSchema,
  calendarId: CalendarIdSchema,
  /**
   * An import writes its pages under a new generation; the old data stays readable meanwhile.
   * Absent for incremental pulls and write-backs.
   */
  generation: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  /** The last page of the generation's import: the calendar's events of every other generation go. */
  complete: Type.Optional(Type.Boolean()),
  events: Type.Array(ProviderEventSchema, { maxItems: PROVIDER_EVENT_BATCH_MAX })
}, { additionalProperties: false })

export const ProviderEventBatchResultSchema = Type.Object({
  created: Type.Integer({ minimum: 0 }),
  updated: Type.Integer({ minimum: 0 }),
  deleted: Type.Integer({ minimum: 0 }),
  /** Already as described (a replayed page, or the provider echoing the backend's own write). */
  unchanged: Type.Integer({ minimum: 0 }),
  /** Exceptions whose series master has not arrived yet; they are kept and linked when it does. */
  waiting: Type.Integer({ minimum: 0 }),
  /** Provider items older than the backend's own later change of the same event (the backend's wins). */
  superseded: Type.Integer({ minimum: 0 }),
  /** Provider items the backend cannot hold (for example a recurrence rule it cannot expand); logged. */
  rejected: Type.Integer({ minimum: 0 })
}, { additionalProperties: false })

/** Removes every event of a provider calendar (or of all calendars of a connection) from the user's data. */
export const ProviderCalendarRemovalSchema = Type.Object({
  userId: UserIdSchema,
  connectionId: ConnectionIdSchema,
  calendarId: Type.Optional(CalendarIdSchema)
}, { additionalProperties: false })

export const ProviderCalendarRemovalResultSchema = Type.Object({
  deleted: Type.Integer({ minimum: 0 })
}, { additionalProperties: false })

/**
 * What a provider write needs of the backend's event, carried in the event change report so Sync
 * never calls back: the content after the change (absent for a delete) and the provider identity
 * the event already has.
 */
export const ProviderWriteSubjectSchema = Type.Object({
  content: Type.Optional(EventContentSchema),
  /** The provider's id, when the event came from or went to the provider before. */
  providerEventId: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  /** On an occurrence: the series' provider id and the occurrence's original start. */
  seriesProviderEventId: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  /** On an occurrence: the series' own id here, by which Sync finds the series it wrote before the backend learnt its provider id. */
  seriesEventId: Type.Optional(EventIdSchema),
  originalStartDate: Type.Optional(ProviderDateSchema),
  /** The occurrence is cancelled (removed from its series). */
  cancelled: Type.Optional(Type.Boolean()),
  /** The backend's lastUpdated after the change: the version of this write. */
  lastUpdated: IsoDateTimeSchema,
  /**
   * The provider's version the change was made on (as last read from or written to it): a change
   * made at the provider since is merged with this one part by part.
   */
  base: Type.Optional(EventContentSchema)
}, { additionalProperties: false })

/** Why a change made here is not at its provider (yet). */
const WriteIssueReasonSchema = Type.Union([
  Type.Literal('readOnly'),
  Type.Literal('refused'),
  Type.Literal('calendarGone'),
  Type.Literal('failing')
], {
  description: '`readOnly`: the account may only read the calendar; `refused`: the provider refused the change as it is; ' +
    '`calendarGone`: the calendar is no longer in the connected account; `failing`: the write failed and Sync tries it again'
})

export const WriteIssueSchema = Type.Object({
  provider: ProviderSchema,
  reason: WriteIssueReasonSchema,
  message: Type.String({ maxLength: 300, description: 'What happened, for a person' }),
  retrying: Type.Boolean({ description: 'true: Sync tries the write again by itself; false: only a new change of the event is written' }),
  at: IsoDateTimeSchema
}, { additionalProperties: false, description: 'A change made here that its provider does not have' })

/** Sync tells the backend that an event's last change could not be written to its provider, or (issue null) that it now is. */
export const ProviderWriteStateSchema = Type.Object({
  userId: UserIdSchema,
  connectionId: ConnectionIdSchema,
  eventId: EventIdSchema,
  issue: Type.Union([WriteIssueSchema, Type.Null()])
}, { additionalProperties: false })

export const ProviderWriteStateResultSchema = Type.Object({
  /** false: the event is no longer stored (deleted meanwhile); nothing to mark. */
  updated: Type.Boolean()
}, { additionalProperties: false })

/** Paths of the backend's internal API (authenticated with backend.serviceToken). */
export const BACKEND_INTERNAL_PATHS = {
  providerEvents: '/api/internal/provider-events',
  providerCalendarRemoval: '/api/internal/provider-events/remove',
  providerWriteState: '/api/internal/provider-events/write-state',
  grantRevoked: '/api/internal/grant-revoked',
  providerAccountClaim: '/api/internal/provider-accounts/claim'
} as const

export type EventContent = Static<typeof EventContentSchema>
export type ProviderEvent = Static<typeof ProviderEventSchema>
export type ProviderEventBatch = Static<typeof ProviderEventBatchSchema>
export type ProviderEventBatchResult = Static<typeof ProviderEventBatchResultSchema>
export type ProviderCalendarRemoval = Static<typeof ProviderCalendarRemovalSchema>
export type ProviderCalendarRemovalResult = Static<typeof ProviderCalendarRemovalResultSchema>
export type ProviderWriteSubject = Static<typeof ProviderWriteSubjectSchema>
export type WriteIssue = Static<typeof WriteIssueSchema>
export type ProviderWriteState = Static<typeof ProviderWriteStateSchema>
export type ProviderWriteStateResult = Static<typeof ProviderWriteStateResultSchema>
