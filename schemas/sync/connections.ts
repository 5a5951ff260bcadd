import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import {
  CalendarIdSchema, ConnectionIdSchema, ConnectionReasonSchema, ConnectionStateSchema, ImportCountsSchema, ImportOperationSchema, IsoDateTimeSchema, providerRemindersSchema, ProviderSchema, UserIdSchema
} from './common.js'

const ImportProgressSchema = Type.Object({
  phase: Type.Union([Type.Literal('progress'), Type.Literal('completed')]),
  operation: ImportOperationSchema,
  counts: ImportCountsSchema,
  updatedAt: IsoDateTimeSchema
}, { additionalProperties: false })

const ConnectionSummarySchema = Type.Object({
  connectionId: ConnectionIdSchema,
  provider: ProviderSchema,
  state: ConnectionStateSchema,
  reason: Type.Union([ConnectionReasonSchema, Type.Null()]),
  lastReadFailureAt: Type.Union([IsoDateTimeSchema, Type.Null()]),
  lastSyncedAt: Type.Union([IsoDateTimeSchema, Type.Null()]),
  lastHealthyAt: Type.Union([IsoDateTimeSchema, Type.Null()]),
  importProgress: Type.Union([ImportProgressSchema, Type.Null()]),
  pendingWrites: Type.Optional(Type.Integer({
    minimum: 0,
    description: 'Changes made here that are not yet written to the provider (waiting for it to answer again, or for a retry)'
  })),
  unsyncedWrites: Type.Optional(Type.Integer({
    minimum: 0,
    description: 'Events whose change made here the provider does not have: it refused it, or the write keeps failing (each such event carries `syncIssue`)'
  })),
  providerRetryAt: Type.Optional(Type.Union([IsoDateTimeSchema, Type.Null()], {
    description: 'The provider answered "unavailable": when Sync tries it again (POST /api/connections/refresh tries at once); null while it answers'
  })),
  createdAt: IsoDateTimeSchema
}, { additionalProperties: false })

export const SyncMetadataSchema = Type.Object({
  userId: UserIdSchema,
  cloudMutationMode: Type.Union([Type.Literal('enabled'), Type.Literal('maintenance')], {
    description: 'The backend may refuse cloud edits up front with MAINTENANCE when this is `maintenance`'
  }),
  execution: Type.Union([Type.Literal('passive'), Type.Literal('active')]),
  connections: Type.Array(ConnectionSummarySchema, { description: 'Every connection of the user, oldest first' })
}, { additionalProperties: false, description: 'A user\'s sync metadata, source of userMetadataChanged' })

const SyncCalendarSchema = Type.Object({
  connectionId: ConnectionIdSchema,
  provider: ProviderSchema,
  calendarId: CalendarIdSchema,
  name: Type.String({ maxLength: 1024, description: 'The calendar\'s name at the provider' }),
  color: Type.Union([Type.String({ pattern: '^#[0-9a-f]{6}$' }), Type.Null()], { description: 'The calendar\'s colour at the provider (#rrggbb); null when it names none' }),
  primary: Type.Boolean({ description: 'Where the user\'s own events are written' }),
  defaultReminders: Type.Optional(providerRemindersSchema('The reminders of an event that keeps the calendar\'s default (its reminders absent), as the provider keeps them for the account; absent when the provider has none'))
}, { additionalProperties: false })

export const SyncCalendarListSchema = Type.Object({
  calendars: Type.Array(SyncCalendarSchema, { description: 'The calendars of the user\'s connections that are not disconnected, by connection (oldest first), then by calendar id' })
}, { additionalProperties: false, description: 'The provider calendars Sync keeps for a user' })

export const UserParamsSchema = Type.Object({ userId: UserIdSchema }, { additionalProperties: false })

export const BeginConnectionRequestSchema = Type.Object({
  provider: ProviderSchema,
  intent: Type.Union([Type.Literal('connect'), Type.Literal('reconnect')]),
  connectionId: Type.Optional(Type.Union([ConnectionIdSchema, Type.Null()], {
    description: 'The connection to repair; with intent `reconnect` and none given, the user\'s newest connection of that provider'
  })),
  correlationId: Type.Optional(Type.String({
    pattern: '^[A-Za-z0-9_-]{4,64}$',
    description: 'Short id tying the analytics of one connect round trip together (the `cid` redirect parameter)'
  }))
}, { additionalProperties: false })

export const BeginConnectionResponseSchema = Type.Object({
  authorizationUrl: Type.String({ description: 'Where the browser goes to grant access' }),
  correlationId: Type.String({ description: 'The given or a generated correlation id' }),
  intent: Type.Union([Type.Literal('connect'), Type.Literal('reconnect')]),
  connectionId: Type.Union([ConnectionIdSchema, Type.Null()], { description: 'The connection the signed state names, if any' })
}, { additionalProperties: false })

/**
 * The header the backend's `/sync` proxy passes the browser's connect binder in (read from the
 * cookie the begin set); Sync's callback finishes only an attempt whose binder it is.
 */
export const BROWSER_BINDER_HEADER = 'x-calendar-connect-binder'

/** Sync's answer to the backend's begin: the public answer and the binder the browser is to hold. */
export const SyncBeginConnectionResponseSchema = Type.Object({
  ...BeginConnectionResponseSchema.properties,
  browserBinder: Type.String({
    pattern: '^[A-Za-z0-9_-]{43}$',
    description: 'A random secret for the browser that began the connect (a cookie the backend sets); Sync keeps only its hash, and the callback must present it'
  })
}, { additionalProperties: false })

/** A CalDAV account (for example iCloud with an app password): connected without OAuth. */
export const CalDavConnectRequestSchema = Type.Object({
  serverUrl: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://', description: 'The CalDAV server (its origin is enough where it serves /.well-known/caldav)' }),
  username: Type.String({ minLength: 1, maxLength: 256 }),
  password: Type.String({ minLength: 1, maxLength: 1024, description: 'An app password; stored encrypted, never logged' }),
  connectionId: Type.Optional(ConnectionIdSchema)
}, { additionalProperties: false, description: 'With connectionId (or the same server and user name as a connection of the user): that connection is repaired' })

export const CalDavConnectResponseSchema = Type.Object({
  connectionId: ConnectionIdSchema,
  created: Type.Boolean({ description: 'false: the user\'s connection of the same account was repaired with the new password' }),
  calendars: Type.Integer({ minimum: 0, description: 'Calendars found on the server; the import reads them next' })
}, { additionalProperties: false })

export const StopWatchesResponseSchema = Type.Object({
  stopped: Type.Integer({ minimum: 0, description: 'Notification channels stopped at the provider' })
}, { additionalProperties: false })

export const RestartSyncResponseSchema = Type.Object({
  queued: Type.Integer({ minimum: 0, description: 'Sync jobs queued (or already waiting) for the user\'s live connections' })
}, { additionalProperties: false })

export type ConnectionSummary = Static<typeof ConnectionSummarySchema>
export type SyncMetadata = Static<typeof SyncMetadataSchema>
export type BeginConnectionRequest = Static<typeof BeginConnectionRequestSchema>
export type SyncBeginConnectionResponse = Static<typeof SyncBeginConnectionResponseSchema>
export type CalDavConnectRequest = Static<typeof CalDavConnectRequestSchema>
export type CalDavConnectResponse = Static<typeof CalDavConnectResponseSchema>
export type StopWatchesResponse = Static<typeof StopWatchesResponseSchema>
export type RestartSyncResponse = Static<typeof RestartSyncResponseSchema>

export type SyncCalendar = Static<typeof SyncCalendarSchema>
export type SyncCalendarList = Static<typeof SyncCalendarListSchema>
