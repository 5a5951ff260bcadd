import { randomUUID } from 'node:crypto'
import { ObjectId } from 'bson'
import type { EventChangeReport, GoogleAuthModeWire, Provider } from '../schemas/sync/index.js'

// The backend's one durable channel to the Sync service: everything the backend must tell Sync
// and must not lose when Sync is away is written here first, in the same transaction as the
// change it follows from where there is one, and delivered afterwards.

/** What Sync is told. One user's entries are delivered in the order they were written. */
export type OutboxEntry =
  /** The backend changed its own copy of an event; Sync carries the effect to the provider. */
  | { kind: 'eventChange', report: EventChangeReport }
  /** The user signed out: stop their provider watches. */
  | { kind: 'watchStop' }
  /** A provider was connected again: restart the user's sync in the background. */
  | { kind: 'restartSync' }
  /** A provider credential for the user's connection; Sync stores it and acts on the mode. */
  | { kind: 'credentialHandOver', handOver: StoredCredentialHandOver }

/**
 * A credential as it waits in the outbox: the refresh token sealed (lib/credential-cipher.ts,
 * bound to the user's outbox) so it is never at rest in the clear; it is opened only to be sent.
 */
interface StoredCredentialHandOver {
  provider: Provider
  providerAccountId: string
  sealedRefreshToken: string
  scopes: string[]
  mode: GoogleAuthModeWire
  /** The record's key, so every retry of the hand-over carries the same one. */
  idempotencyKey: string
}

export type OutboxEntryKind = OutboxEntry['kind']

/** An entry as a writer states it; the user and the idempotency key are filled in when it is stored. */
export type NewOutboxEntry =
  | { kind: 'eventChange', report: Omit<EventChangeReport, 'userId' | 'idempotencyKey'> }
  | { kind: 'watchStop' }
  | { kind: 'restartSync' }
  | { kind: 'credentialHandOver', handOver: Omit<StoredCredentialHandOver, 'idempotencyKey'> }

export interface OutboxRecord {
  _id: ObjectId
  user: string
  entry: OutboxEntry
  /** Chosen once when stored, so every retry of the entry carries the same key and Sync applies it once. */
  idempotencyKey: string
  createdAt: Date
  /** Position within the write that stored it; with createdAt it orders one user's entries. */
  seq: number
  attempts: number
  nextAttemptAt: Date
  lastError: string | null
  /** The request that wrote it (lib/request-id.ts): its delivery, later and elsewhere, carries the id on. */
  requestId?: string
}

/**
 * Which process delivers a user's entries right now. Several backend processes may share one
 * database; a user's entries keep their order only if one of them sends at a time.
 */
export interface OutboxLease {
  /** The user id. */
  _id: string
  holder: string
  until: Date
}

export function outboxRecords (userId: string, entries: NewOutboxEntry[], now: Date, requestId?: string): OutboxRecord[] {
  return entries.map((entry, seq) => {
    const idempotencyKey = randomUUID()
    const stored: OutboxEntry = entry.kind === 'eventChange'
      ? { kind: 'eventChange', report: { userId, ...entry.report, idempotencyKey } }
      : entry.kind === 'credentialHandOver'
        ? { kind: 'credentialHandOver', handOver: { ...entry.handOver, idempotencyKey } }
        : entry
    return {
      _id: new ObjectId(),
      user: userId,
      entry: stored,
      idempotencyKey,
      createdAt: now,
      seq,
      attempts: 0,
      nextAttemptAt: now,
      lastError: null,
      ...(requestId === undefined ? {} : { requestId })
    }
  })
}
