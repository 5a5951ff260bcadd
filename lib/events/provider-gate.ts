import type { SyncCalendar, SyncMetadata } from '../../schemas/sync/index.js'
import { EventRequestError, invalidEvent } from './errors.js'

// Whether the provider side lets an event write go ahead, decided before anything is written
// (specification, Endpoints note 3; Errors: 503 MAINTENANCE, 410 CONNECTION_REVOKED).

export interface ProviderGateFacts {
  /**
   * The user has a provider connection (lib/provider-connection.ts: a linked Google account, or a
   * connection the Sync service has named, whose credential Sync keeps), or the event has a provider
   * copy. Without one there is no provider effect (the specification's `MissingGoogleRefreshToken`).
   */
  hasProviderRefreshToken: boolean
  /** The provider calendars (calendarId) of the events the write touches; none for the user's own events. */
  calendarIds: string[]
  /**
   * The calendars new events of the write name (the client's choice, with the path it came by):
   * each must be one of the user's calendars as Sync lists them.
   */
  namedCalendars?: Array<{ calendarId: string, path: string }>
}

/** What the Sync service said when it was asked. */
export type SyncAnswer =
  | { kind: 'metadata', metadata: SyncMetadata, calendars: SyncCalendar[] }
  | { kind: 'unavailable' }
  | { kind: 'maintenance' }

export type ProviderGate =
  /** Write own data; the provider effect (if any) follows through the outbox. */
  | { outcome: 'write', note?: 'MissingGoogleRefreshToken' | 'SyncUnavailable' }
  /** Sync must be asked first; call again with its answer. */
  | { outcome: 'askSync' }
  | { outcome: 'refuse', error: EventRequestError }

function maintenance (): ProviderGate {
  return { outcome: 'refuse', error: new EventRequestError(503, 'MAINTENANCE', 'Provider calendars are in maintenance; try again later') }
}

/**
 * - No provider refresh token (`MissingGoogleRefreshToken`): nothing to refuse; the own-data write
 *   goes ahead and the provider effect is skipped.
 * - A change to an event of a provider calendar: Sync's metadata says whether cloud edits are in
 *   maintenance (503) or the grant of the connection holding that calendar is revoked (410),
 *   whatever the state of the user's other connections.
 * - A new event in a calendar Sync does not list for the user: 400 (never a write to a calendar
 *   the user does not hold, nor a hint at whether it exists).
 * - Sync cannot be asked: the write goes ahead and its report waits in the outbox; a refusal Sync
 *   gives when the report arrives is logged there.
 */
export function gateProviderEffect (facts: ProviderGateFacts, sync?: SyncAnswer): ProviderGate {
  if (!facts.hasProviderRefreshToken) return { outcome: 'write', note: 'MissingGoogleRefreshToken' }
  if (facts.calendarIds.length === 0) return { outcome: 'write' }
  if (sync === undefined) return { outcome: 'askSync' }
  if (sync.kind === 'unavailable') return { outcome: 'write', note: 'SyncUnavailable' }
  if (sync.kind === 'maintenance' || sync.metadata.cloudMutationMode === 'maintenance') return maintenance()
  const unknown = (facts.namedCalendars ?? []).find((named) => !sync.calendars.some((calendar) => calendar.calendarId === named.calendarId))
  if (unknown !== undefined) return { outcome: 'refuse', error: invalidEvent(`${unknown.path}/calendarId`, 'must be one of your calendars (GET /api/calendars)') }
  // Every provider kind counts, as in Sync's own answer to the report: a CalDAV account whose
  // password was withdrawn refuses like a Google grant that was revoked.
  const holders = new Set(sync.calendars.filter((calendar) => facts.calendarIds.includes(calendar.calendarId)).map((calendar) => calendar.connectionId))
  const revoked = sync.metadata.connections.find((connection) => holders.has(connection.connectionId) &&
    connection.state === 'actionRequired' && connection.reason === 'authorizationRevoked')
  if (revoked !== undefined) {
    return {
      outcome: 'refuse',
      error: new EventRequestError(410, 'CONNECTION_REVOKED', 'The provider connection was revoked; reconnect it to change this event', { connectionId: revoked.connectionId })
    }
  }
  return { outcome: 'write' }
}
