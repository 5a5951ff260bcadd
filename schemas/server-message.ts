// The payload of every frame on GET /api/events/stream. Clients parse the JSON once and switch on
// `type`; every other field exists so a client can refetch only what changed and show why. Ids,
// import counts and the Sync metadata reuse the Sync contracts so the two cannot drift.
import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import {
  CalendarIdSchema, ConnectionIdSchema, EventIdSchema, ImportCountsSchema, ImportOperationSchema, ProviderSchema, SyncMetadataSchema, UserIdSchema
} from './sync/index.js'

// Id lists are bounded so one frame stays small; when more ids changed than fit, the message says
// `refetchAll: true` and carries no lists.
export const MAX_IDS_PER_MESSAGE = 100
const IdList = <T extends typeof EventIdSchema | typeof CalendarIdSchema | typeof ConnectionIdSchema>(id: T, description: string) =>
  Type.Array(id, { minItems: 1, maxItems: MAX_IDS_PER_MESSAGE, uniqueItems: true, description })

const InvalidationReasonSchema = Type.Union([
  Type.Literal('event'),
  Type.Literal('calendar'),
  Type.Literal('connection'),
  Type.Literal('resync')
], { description: 'What the Sync service reported: an event, a calendar or a connection changed, or the feed had to start over (resync)' })

const Reasons = Type.Array(InvalidationReasonSchema, { minItems: 1, maxItems: 4, uniqueItems: true, description: 'Why, in the order first seen' })

const EventsChangedMessageSchema = Type.Object({
  type: Type.Literal('eventsChanged'),
  reasons: Reasons,
  refetchAll: Type.Boolean({ description: 'true: refetch every event query; false: only the queries touching the listed ids' }),
  eventIds: Type.Optional(IdList(EventIdSchema, 'Events that changed')),
  calendarIds: Type.Optional(IdList(CalendarIdSchema, 'Calendars any of whose events may have changed')),
  connectionIds: Type.Optional(IdList(ConnectionIdSchema, 'Connections any of whose events may have changed'))
}, { additionalProperties: false, description: 'Calendar grid data should be refetched' })

const CalendarsChangedMessageSchema = Type.Object({
  type: Type.Literal('calendarsChanged'),
  reasons: Reasons,
  refetchAll: Type.Boolean({ description: 'true: refetch the whole calendar list' }),
  calendarIds: Type.Optional(IdList(CalendarIdSchema, 'Calendars that changed')),
  connectionIds: Type.Optional(IdList(ConnectionIdSchema, 'Connections whose calendars or state changed'))
}, { additionalProperties: false, description: 'Calendar list should be refetched' })

/** The attention code of a revoked provider grant. */
export const CONNECTION_REVOKED = 'CONNECTION_REVOKED'
/** Legacy name of CONNECTION_REVOKED, sent as a second message for one release, then dropped. */
export const LEGACY_CONNECTION_REVOKED = 'GOOGLE_REVOKED'

const AttentionCodeSchema = Type.String({
  pattern: '^[A-Z][A-Z0-9_]{1,63}$',
  description: `Why a connection needs attention. ${CONNECTION_REVOKED}: the provider grant was revoked and the user must reconnect; ` +
    `for one release the same condition is also sent as a second message with the legacy code ${LEGACY_CONNECTION_REVOKED}`
})

const ImportSchema = Type.Object({
  operation: ImportOperationSchema,
  counts: ImportCountsSchema
}, { additionalProperties: false })

const SyncStatusCommon = {
  type: Type.Literal('syncStatusChanged'),
  connectionId: ConnectionIdSchema,
  provider: Type.Optional(ProviderSchema),
  unsyncedWrites: Type.Optional(Type.Integer({
    minimum: 0,
    description: 'Events of this connection whose change the provider does not have (refused, or failing); absent: unchanged'
  }))
}

const SyncStatusChangedMessageSchema = Type.Union([
  Type.Object({
    ...SyncStatusCommon,
    status: Type.Literal('syncing'),
    import: Type.Optional(ImportSchema)
  }, { additionalProperties: false }),
  Type.Object({
    ...SyncStatusCommon,
    status: Type.Literal('healthy')
  }, { additionalProperties: false }),
  Type.Object({
    ...SyncStatusCommon,
    status: Type.Literal('attention'),
    code: AttentionCodeSchema,
    retryable: Type.Boolean({ description: 'true: the service retries on its own; false: the user must act (reconnect)' }),
    aliasOf: Type.Optional(Type.Literal(CONNECTION_REVOKED, {
      description: 'Set on a legacy alias message only: the same condition was already sent with this current code'
    }))
  }, { additionalProperties: false })
], { description: 'Connection health changed (syncing, healthy, attention)' })

const ImportCompletedMessageSchema = Type.Object({
  type: Type.Literal('importCompleted'),
  connectionId: ConnectionIdSchema,
  operation: ImportOperationSchema,
  counts: ImportCountsSchema
}, { additionalProperties: false, description: 'A full, incremental or repair import finished' })

const UserMetadataChangedMessageSchema = Type.Object({
  type: Type.Literal('userMetadataChanged'),
  session: Type.Object({
    userId: UserIdSchema,
    metadata: Type.Union([
      Type.Record(Type.String(), Type.Unknown()),
      Type.Null()
    ], { description: 'The session library\'s user metadata (for example sync flags such as RESTART); null when it could not be read now' })
  }, { additionalProperties: false }),
  sync: Type.Union([SyncMetadataSchema, Type.Null()], {
    description: 'The Sync service\'s metadata of the user (connections, states, import progress); null when Sync could not be reached now'
  })
}, { additionalProperties: false, description: 'Replays or pushes session and sync metadata' })

const ServerMessageSchema = Type.Union([
  EventsChangedMessageSchema,
  CalendarsChangedMessageSchema,
  SyncStatusChangedMessageSchema,
  ImportCompletedMessageSchema,
  UserMetadataChangedMessageSchema
], { description: 'The JSON data of every `message` event on the stream' })

export type InvalidationReason = Static<typeof InvalidationReasonSchema>
export type EventsChangedMessage = Static<typeof EventsChangedMessageSchema>
export type CalendarsChangedMessage = Static<typeof CalendarsChangedMessageSchema>
export type SyncStatusChangedMessage = Static<typeof SyncStatusChangedMessageSchema>
export type ImportCompletedMessage = Static<typeof ImportCompletedMessageSchema>
export type UserMetadataChangedMessage = Static<typeof UserMetadataChangedMessageSchema>
export type ServerMessage = Static<typeof ServerMessageSchema>

// Compiled once at load; every frame goes through it before it is written.
export const serverMessageCheck = TypeCompiler.Compile(ServerMessageSchema)
