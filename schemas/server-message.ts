// The payload of every frame on GET /api/events/stream. Clients parse the JSON once and switch on
// `type`; every other field exists so a client can refetch only what changed and show why.
import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'

const Identifier = Type.String({ minLength: 1, maxLength: 200, description: 'An opaque identifier' })

// Id lists are bounded so one frame stays small; when more ids changed than fit, the message says
// `refetchAll: true` and leaves the list out.
export const MAX_IDS_PER_MESSAGE = 200
const IdList = (description: string) => Type.Array(Identifier, { maxItems: MAX_IDS_PER_MESSAGE, description })

export const InvalidationReason = Type.Union([
  Type.Literal('event'),
  Type.Literal('calendar'),
  Type.Literal('connection'),
  Type.Literal('resync')
], { description: 'What the Sync service reported: an event, a calendar or a connection changed, or the feed must be read again from scratch (resync)' })
export type InvalidationReason = Static<typeof InvalidationReason>

const Reasons = Type.Array(InvalidationReason, { minItems: 1, maxItems: 4, uniqueItems: true })

export const EventsChangedMessage = Type.Object({
  type: Type.Literal('eventsChanged'),
  reasons: Reasons,
  refetchAll: Type.Boolean({ description: 'true: refetch every event query; false: only those touching the listed ids' }),
  eventIds: Type.Optional(IdList('Events that changed')),
  calendarIds: Type.Optional(IdList('Calendars whose events may all have changed')),
  connectionIds: Type.Optional(IdList('Connections whose events may all have changed'))
}, { additionalProperties: false, description: 'Calendar grid data should be refetched' })

export const CalendarsChangedMessage = Type.Object({
  type: Type.Literal('calendarsChanged'),
  reasons: Reasons,
  refetchAll: Type.Boolean({ description: 'true: refetch the whole calendar list' }),
  calendarIds: Type.Optional(IdList('Calendars that changed')),
  connectionIds: Type.Optional(IdList('Connections whose calendars may have changed'))
}, { additionalProperties: false, description: 'Calendar list should be refetched' })

export const AttentionCode = Type.String({
  pattern: '^[A-Z][A-Z0-9_]{1,63}$',
  description: 'Why a connection needs attention. CONNECTION_REVOKED (and, for one release, its legacy alias GOOGLE_REVOKED sent as a second message) means the provider grant was revoked and the user must reconnect'
})

const SyncStatusCommon = {
  type: Type.Literal('syncStatusChanged'),
  connectionId: Identifier,
  provider: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'google, microsoft or caldav' }))
}

export const SyncStatusChangedMessage = Type.Union([
  Type.Object({
    ...SyncStatusCommon,
    status: Type.Union([Type.Literal('syncing'), Type.Literal('healthy')])
  }, { additionalProperties: false }),
  Type.Object({
    ...SyncStatusCommon,
    status: Type.Literal('attention'),
    code: AttentionCode,
    retryable: Type.Boolean({ description: 'true: the service retries on its own; false: the user must act (for example reconnect)' }),
    detail: Type.Optional(Type.String({ maxLength: 500, description: 'Human-readable text for the status line' }))
  }, { additionalProperties: false })
], { description: 'Connection health changed (syncing, healthy, attention)' })

const Count = Type.Integer({ minimum: 0 })

export const ImportOperation = Type.Union([
  Type.Literal('full'),
  Type.Literal('incremental'),
  Type.Literal('repair')
])

export const ImportCompletedMessage = Type.Object({
  type: Type.Literal('importCompleted'),
  connectionId: Identifier,
  operation: ImportOperation,
  counts: Type.Object({
    calendars: Type.Optional(Count),
    created: Count,
    updated: Count,
    deleted: Count
  }, { additionalProperties: false })
}, { additionalProperties: false, description: 'A full, incremental or repair import finished' })

export const ConnectionSummary = Type.Object({
  connectionId: Identifier,
  provider: Type.String({ minLength: 1, maxLength: 40 }),
  state: Type.String({ minLength: 1, maxLength: 40, description: 'Sync connection state, for example importing or healthy' }),
  reason: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
  status: Type.Union([Type.Literal('syncing'), Type.Literal('healthy'), Type.Literal('attention')]),
  importProgress: Type.Optional(Type.Union([Type.Unknown(), Type.Null()]))
}, { additionalProperties: true })

export const UserMetadataChangedMessage = Type.Object({
  type: Type.Literal('userMetadataChanged'),
  session: Type.Object({
    userId: Identifier,
    metadata: Type.Record(Type.String(), Type.Unknown(), { description: 'Session-level metadata, for example sync flags' })
  }, { additionalProperties: false }),
  sync: Type.Union([
    Type.Object({
      connections: Type.Array(ConnectionSummary, { maxItems: 100 })
    }, { additionalProperties: true }),
    Type.Null()
  ], { description: 'The Sync service metadata; null when it could not be read at this moment' })
}, { additionalProperties: false, description: 'Replays or pushes session and sync metadata' })

export const ServerMessage = Type.Union([
  EventsChangedMessage,
  CalendarsChangedMessage,
  SyncStatusChangedMessage,
  ImportCompletedMessage,
  UserMetadataChangedMessage
], { $id: 'ServerMessage', description: 'The JSON data of every `message` event on the stream' })

export type EventsChangedMessage = Static<typeof EventsChangedMessage>
export type CalendarsChangedMessage = Static<typeof CalendarsChangedMessage>
export type SyncStatusChangedMessage = Static<typeof SyncStatusChangedMessage>
export type ImportCompletedMessage = Static<typeof ImportCompletedMessage>
export type UserMetadataChangedMessage = Static<typeof UserMetadataChangedMessage>
export type ServerMessage = Static<typeof ServerMessage>
export type ServerMessageType = ServerMessage['type']

// Compiled once at load; every frame goes through it before it is written.
export const serverMessageCheck = TypeCompiler.Compile(ServerMessage)
