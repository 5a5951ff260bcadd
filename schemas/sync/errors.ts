import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { ConnectionIdSchema } from './common.js'

export const SyncErrorCodeSchema = Type.Union([
  Type.Literal('UNAUTHORIZED'),
  Type.Literal('FORBIDDEN_USER'),
  Type.Literal('VALIDATION'),
  Type.Literal('NOT_FOUND'),
  Type.Literal('CONNECTION_NOT_FOUND'),
  Type.Literal('CONNECTION_REVOKED'),
  Type.Literal('IDEMPOTENCY_KEY_REUSED'),
  Type.Literal('EXECUTION_PASSIVE'),
  Type.Literal('PROVIDER_NOT_CONFIGURED'),
  Type.Literal('CREDENTIAL_ENCRYPTION_KEY_MISSING'),
  Type.Literal('CALDAV_CONNECT_FAILED'),
  Type.Literal('RATE_LIMITED'),
  Type.Literal('MAINTENANCE'),
  Type.Literal('DATABASE_UNAVAILABLE'),
  Type.Literal('INTERNAL')
], { description: 'Machine-readable error code of a Sync service answer' })

export const SyncErrorBodySchema = Type.Object({
  statusCode: Type.Integer({ minimum: 400, maximum: 599 }),
  code: SyncErrorCodeSchema,
  error: Type.String({ description: 'HTTP reason phrase' }),
  message: Type.String({ description: 'Human-readable text; generic for every 5xx except MAINTENANCE' }),
  connectionId: Type.Optional(ConnectionIdSchema)
}, { additionalProperties: false, description: 'The one error body of the Sync service' })

/** HTTP status of each code; both the service and the client read it from here. */
export const SYNC_ERROR_STATUS = {
  UNAUTHORIZED: 401,
  FORBIDDEN_USER: 403,
  VALIDATION: 400,
  NOT_FOUND: 404,
  CONNECTION_NOT_FOUND: 404,
  CONNECTION_REVOKED: 410,
  IDEMPOTENCY_KEY_REUSED: 409,
  EXECUTION_PASSIVE: 409,
  PROVIDER_NOT_CONFIGURED: 400,
  CREDENTIAL_ENCRYPTION_KEY_MISSING: 400,
  /**
   * A CalDAV server did not take the account: a refused password, no calendars, an address Sync
   * may not reach, no answer. One code, so a connect tells nothing of what listens where.
   */
  CALDAV_CONNECT_FAILED: 422,
  /** The user's connects under way hold their share already: try again once one has finished. */
  RATE_LIMITED: 429,
  MAINTENANCE: 503,
  /** The Sync database did not answer (in time): retry after Retry-After; nothing of the request was applied. */
  DATABASE_UNAVAILABLE: 503,
  INTERNAL: 500
} as const satisfies Record<Static<typeof SyncErrorCodeSchema>, number>

export type SyncErrorCode = Static<typeof SyncErrorCodeSchema>
export type SyncErrorBody = Static<typeof SyncErrorBodySchema>
