// The connection states and transitions of the specification ("States and transitions"), as a pure
// function. The store applies the result and appends a `connection` invalidation for every change.
import type { ConnectionReason, ConnectionState } from '../../../schemas/sync/index.js'

export type ConnectionEvent =
  /** Credentials were stored after an OAuth connect or reconnect: (re)import from scratch. */
  | { type: 'authorized' }
  /** The import job finished every calendar. */
  | { type: 'importFinished' }
  /** A pull of every calendar succeeded, whether or not anything changed. */
  | { type: 'pullSucceeded' }
  /** Reading from the provider failed for a reason other than a dead grant. */
  | { type: 'readFailed' }
  /** The provider grant is dead (`authorizationRevoked`). */
  | { type: 'grantRevoked' }
  /** The user removed the connection. */
  | { type: 'disconnected' }

export interface ConnectionFacts {
  state: ConnectionState
  reason: ConnectionReason | null
  lastReadFailureAt: Date | null
}

export interface ConnectionTransition {
  state: ConnectionState
  reason: ConnectionReason | null
  /** The connection moved to another state or reason: a `connection` invalidation is due. */
  changed: boolean
  /** Fields to store besides state and reason. */
  set: {
    lastReadFailureAt?: Date | null
    lastSyncedAt?: Date
    lastHealthyAt?: Date
  }
  /** The stored credential must be discarded (dead grant). */
  discardCredential: boolean
}

const READING: ReadonlySet<ConnectionState> = new Set(['importing', 'catchingUp', 'healthy', 'delayed'])

/**
 * The next facts of a connection after an event, or null when the event does not apply in the
 * current state (a late job result for a connection that moved on changes nothing).
 */
export function transition (current: ConnectionFacts, event: ConnectionEvent, now: Date): ConnectionTransition | null {
  const to = (state: ConnectionState, reason: ConnectionReason | null, set: ConnectionTransition['set'] = {}, discardCredential = false): ConnectionTransition => ({
    state,
    reason,
    changed: state !== current.state || reason !== current.reason,
    set,
    discardCredential
  })

  switch (event.type) {
    case 'authorized':
      return to('importing', null, { lastReadFailureAt: null })
    case 'importFinished':
      return current.state === 'importing' ? to('catchingUp', null) : null
    case 'pullSucceeded': {
      if (!READING.has(current.state) || current.state === 'importing') return null
      // The first successful pull after the import, even with no changes, makes the connection healthy.
      return to('healthy', null, { lastReadFailureAt: null, lastSyncedAt: now, lastHealthyAt: now })
    }
    case 'readFailed':
      if (!READING.has(current.state)) return null
      // An import keeps its state (it is retried); a connection that was reading becomes delayed.
      return current.state === 'importing'
        ? to('importing', 'readFailure', { lastReadFailureAt: now })
        : to('delayed', 'readFailure', { lastReadFailureAt: now })
    case 'grantRevoked':
      return to('actionRequired', 'authorizationRevoked', {}, true)
    case 'disconnected':
      return to('disconnected', 'userDisconnected', {}, true)
  }
}

/** A connection whose provider data is being read and written: jobs run for it. */
export function isLive (state: ConnectionState): boolean {
  return READING.has(state)
}
