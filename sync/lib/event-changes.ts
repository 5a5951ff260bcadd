// Rules of the backend's own-data event-change reports, over plain data: which answer a report
// gets from the user's connections and the service modes, and how a repeated idempotency key is
// recognised. sync/services/event-changes.ts carries them out.
import { createHash } from 'node:crypto'
import type { EventChangeAccepted, EventChangeReport, SyncErrorCode } from '../../schemas/sync/index.js'
import type { ConnectionRecord } from './connections/record.js'
import { isLive } from './connections/state-machine.js'
import { SyncServiceError } from './errors.js'

export interface Modes {
  cloudMutationMode: 'enabled' | 'maintenance'
  execution: 'passive' | 'active'
}

export type Refusal = { kind: 'refused', code: Extract<SyncErrorCode, 'CONNECTION_REVOKED' | 'MAINTENANCE'>, connectionId: string | null }
/** The change waits for the user to reconnect the revoked connection (sync/stores/held-writes.ts). */
type Held = { kind: 'held', connectionId: string }
export type Outcome = { kind: 'accepted', providerWriteQueued: boolean } | Held | Refusal

/** What identifies the change a key was first used for; the same key with another change is a reuse. */
export function fingerprint (report: EventChangeReport): string {
  const { eventId, operation, connectionId, calendarId } = report
  return createHash('sha256').update(JSON.stringify([eventId, operation, connectionId ?? null, calendarId ?? null])).digest('hex')
}

export function refusal (outcome: Refusal): SyncServiceError {
  return outcome.code === 'MAINTENANCE'
    ? new SyncServiceError('MAINTENANCE', 'Cloud calendar edits are paused for maintenance; try again later')
    : new SyncServiceError('CONNECTION_REVOKED', 'The provider grant of this connection was revoked; reconnect it', outcome.connectionId ?? undefined)
}

type ReportTarget = Pick<ConnectionRecord, '_id' | 'state' | 'reason'>

/**
 * The answer to a new report, and the connections its provider write goes to. An event belongs to
 * one calendar, and its change goes to the connection holding that calendar and no other: an
 * event with no provider calendar (the user's own) goes to none, nor does one naming a calendar no
 * connection of the user holds. MAINTENANCE is answered only when the change could reach a
 * provider; a user without a connection edits as usual. When the calendar's connection is revoked,
 * the change is held for it until the user reconnects it: the backend's write stood, so it must
 * reach the provider then rather than be dropped. (Records from before holding answer 410 as recorded.)
 */
export function decideReport<C extends ReportTarget> (report: EventChangeReport, connections: C[], holders: string[], modes: Modes): { outcome: Outcome, writable: C[] } {
  const targets = connections
    .filter((connection) => connection.state !== 'disconnected')
    .filter((connection) => holders.includes(connection._id.toHexString()))
    .filter((connection) => !report.connectionId || connection._id.toHexString() === report.connectionId)
  if (modes.cloudMutationMode === 'maintenance' && targets.length > 0) {
    return { outcome: { kind: 'refused', code: 'MAINTENANCE', connectionId: null }, writable: [] }
  }
  const writable = targets.filter((connection) => isLive(connection.state))
  const revoked = writable.length === 0
    ? targets.find((connection) => connection.state === 'actionRequired' && connection.reason === 'authorizationRevoked')
    : undefined
  const outcome: Outcome = revoked
    ? { kind: 'held', connectionId: revoked._id.toHexString() }
    : { kind: 'accepted', providerWriteQueued: modes.execution === 'active' && writable.length > 0 }
  return { outcome, writable }
}

/** The answer to a key seen before: the first answer again, or a refusal when the change differs. */
export function replayAnswer (recorded: { fingerprint: string, outcome: Outcome }, print: string): EventChangeAccepted {
  if (recorded.fingerprint !== print) {
    throw new SyncServiceError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was already used for a different event change')
  }
  if (recorded.outcome.kind === 'refused') throw refusal(recorded.outcome)
  if (recorded.outcome.kind === 'held') return { duplicate: true, providerWriteQueued: false, heldUntilReconnect: true }
  return { duplicate: true, providerWriteQueued: recorded.outcome.providerWriteQueued }
}
