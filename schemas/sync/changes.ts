import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import {
  CalendarIdSchema, ConnectionIdSchema, ConnectionReasonSchema, ConnectionStateSchema, EventIdSchema, ImportCountsSchema, ImportOperationSchema,
  IsoDateTimeSchema, ProviderSchema, UserIdSchema
} from './common.js'

// Invalidations carry ids only: the backend refetches nothing from them, it only turns each into
// stream messages (event -> eventsChanged; calendar and connection -> calendarsChanged + eventsChanged;
// importProgress -> syncStatusChanged or importCompleted).

const EventInvalidationSchema = Type.Object({
  kind: Type.Literal('event'),
  at: IsoDateTimeSchema,
  eventId: Type.Optional(EventIdSchema),
  connectionId: Type.Optional(ConnectionIdSchema),
  calendarId: Type.Optional(CalendarIdSchema)
}, { additionalProperties: false, description: 'Events of the user changed (own write reported by the backend, or a provider pull)' })

const CalendarInvalidationSchema = Type.Object({
  kind: Type.Literal('calendar'),
  at: IsoDateTimeSchema,
  connectionId: ConnectionIdSchema,
  calendarId: Type.Optional(CalendarIdSchema)
}, { additionalProperties: false, description: 'The calendar list or a whole calendar of a connection changed' })

const ConnectionInvalidationSchema = Type.Object({
  kind: Type.Literal('connection'),
  at: IsoDateTimeSchema,
  connectionId: ConnectionIdSchema,
  provider: Type.Optional(ProviderSchema),
  state: ConnectionStateSchema,
  reason: Type.Union([ConnectionReasonSchema, Type.Null()]),
  unsyncedWrites: Type.Optional(Type.Integer({ minimum: 0, description: 'Set when the count of events not written to the provider changed' }))
}, { additionalProperties: false, description: 'A connection moved to a new state, or its count of unwritten changes changed; reason `authorizationRevoked` means CONNECTION_REVOKED' })

const ImportProgressInvalidationSchema = Type.Object({
  kind: Type.Literal('importProgress'),
  at: IsoDateTimeSchema,
  connectionId: ConnectionIdSchema,
  phase: Type.Union([Type.Literal('progress'), Type.Literal('completed')], {
    description: '`progress` becomes syncStatusChanged, `completed` becomes importCompleted'
  }),
  operation: ImportOperationSchema,
  counts: ImportCountsSchema
}, { additionalProperties: false, description: 'An import of a connection advanced or finished' })

const InvalidationSchema = Type.Union([
  EventInvalidationSchema, CalendarInvalidationSchema, ConnectionInvalidationSchema, ImportProgressInvalidationSchema
], { description: 'One change-feed entry' })

const CursorSchema = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'Opaque, monotonic change-feed position of one user; pass it back unchanged'
})

export const CHANGES_PAGE_DEFAULT_LIMIT = 100
const CHANGES_PAGE_MAX_LIMIT = 500
// One backend process polls every user it holds streams for in one request per tick; a process
// holds at most about 20k sockets, so 10k users (about 2.5 MB of cursors) covers a busy one.
export const CHANGES_BATCH_MAX_USERS = 10_000
// Request body limit of the batched route, sized for CHANGES_BATCH_MAX_USERS cursors at their longest.
export const CHANGES_BATCH_BODY_LIMIT = 4 * 1024 * 1024

const PageLimitSchema = Type.Integer({
  minimum: 1,
  maximum: CHANGES_PAGE_MAX_LIMIT,
  default: CHANGES_PAGE_DEFAULT_LIMIT,
  description: 'Largest number of invalidations in one page'
})

export const ChangesQuerySchema = Type.Object({
  userId: UserIdSchema,
  cursor: Type.Optional(Type.String({
    maxLength: 200,
    description: 'Cursor from the previous page; omit (or send empty) to start from now and get a watermark'
  })),
  limit: Type.Optional(PageLimitSchema)
}, { additionalProperties: false })

export const ChangesPageSchema = Type.Object({
  userId: UserIdSchema,
  cursor: CursorSchema,
  invalidations: Type.Array(InvalidationSchema),
  hasMore: Type.Boolean({ description: 'More invalidations wait after `cursor`; ask again at once' }),
  resyncRequired: Type.Boolean({
    description: 'The given cursor was malformed, from another user or expired: `invalidations` is empty, ' +
      '`cursor` is the current watermark, and the caller must refresh everything for this user'
  })
}, { additionalProperties: false, description: 'One user\'s page of invalidations after a cursor' })

const CursorRequestSchema = Type.Object({
  userId: UserIdSchema,
  cursor: Type.Union([CursorSchema, Type.Null()], { description: 'null means "from now": the answer is a watermark' })
}, { additionalProperties: false })

// A held read must end well within the client's request timeout (10 s by default).
export const CHANGES_WAIT_MAX_MS = 5_000

export const ChangesBatchRequestSchema = Type.Object({
  users: Type.Array(CursorRequestSchema, { minItems: 1, maxItems: CHANGES_BATCH_MAX_USERS }),
  limit: Type.Optional(PageLimitSchema),
  waitMs: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: CHANGES_WAIT_MAX_MS,
    description: 'When every page would be empty, hold the answer up to this long and answer as soon as an invalidation for any of the users lands. ' +
      'A request with a null cursor, or when the service is closing, is answered at once'
  }))
}, { additionalProperties: false, description: 'Many users\' cursors answered in one request' })

export const ChangesBatchResponseSchema = Type.Object({
  pages: Type.Array(ChangesPageSchema, { description: 'One page per requested user, in request order' })
}, { additionalProperties: false })

export type ConnectionInvalidation = Static<typeof ConnectionInvalidationSchema>
export type ImportProgressInvalidation = Static<typeof ImportProgressInvalidationSchema>
export type Invalidation = Static<typeof InvalidationSchema>
export type ChangesPage = Static<typeof ChangesPageSchema>
export type CursorRequest = Static<typeof CursorRequestSchema>
export type ChangesBatchRequest = Static<typeof ChangesBatchRequestSchema>
