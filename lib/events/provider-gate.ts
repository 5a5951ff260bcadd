import type { SyncMetadata } from '../../schemas/sync/index.js'
import { EventRequestError } from './errors.js'

// Whether the provider side lets an event write go ahead, decided before anything is written
// (specification, Endpoints note 3; Errors: 503 MAINTENANCE, 410 CONNECTION_REVOKED).

export interface ProviderGateFacts {
  /**
   * The user has a provider connection (lib/provider-connection.ts: a linked Google account, or a
   * connection the Sync service has named, whose credential Sync keeps), or the event has a provider
   * copy. Without one there is no provider effect (the specification's `MissingGoogleRefreshToken`).
   */
  hasProviderRefreshToken: boolean
  /** The write touches an event of a provider calendar (one with a calendarId). */
  touchesProviderCalendar: boolean
}

/** What the Sync service said when it was asked. */
export type SyncAnswer =
  | { kind: 'metadata', metadata: SyncMetadata }
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
 *   maintenance (503) or the user's grant is revoked with no live connection left (410).
 * - Sync cannot be asked: the write goes ahead and its report waits in the outbox; a refusal Sync
 *   gives when the report arrives is logged there.
 */
export function gateProviderEffect (facts: ProviderGateFacts, sync?: SyncAnswer): ProviderGate {
  if (!facts.hasProviderRefreshToken) return { outcome: 'write', note: 'MissingGoogleRefreshToken' }
  if (!facts.touchesProviderCalendar) return { outcome: 'write' }
  if (sync === undefined) return { outcome: 'askSync' }
  if (sync.kind === 'unavailable') return { outcome: 'write', note: 'SyncUnavailable' }
  if (sync.kind === 'maintenance' || sync.metadata.cloudMutationMode === 'maintenance') return maintenance()
  // Every provider kind counts, as in Sync's own answer to the report: a CalDAV account whose
  // password was withdrawn refuses like a Google grant that was revoked.
  const { connections } = sync.metadata
  const revoked = connections.find((connection) => connection.state === 'actionRequired' && connection.reason === 'authorizationRevoked')
  const live = connections.some((connection) => connection.state !== 'actionRequired' && connection.state !== 'disconnected')
  if (revoked !== undefined && !live) {
    return {
      outcome: 'refuse',
      error: new EventRequestError(410, 'CONNECTION_REVOKED', 'The provider connection was revoked; reconnect it to change this event', { connectionId: revoked.connectionId })
    }
  }
  return { outcome: 'write' }
}
