// Provider connections of users. Every change of state goes through the state machine
// (sync/lib/connections/state-machine.ts) and appends its `connection` invalidation in the same
// transaction.
import { ObjectId } from 'mongodb'
import type { Collection, Db } from 'mongodb'
import { objectIdFrom } from '../../lib/ids.js'
import type { ConnectionState, Provider } from '../../schemas/sync/index.js'
import type { ConnectionRecord, StoredImportProgress } from '../lib/connections/record.js'
import { transition } from '../lib/connections/state-machine.js'
import type { ConnectionEvent } from '../lib/connections/state-machine.js'
import type { Clock } from '../lib/clock.js'
import { providerRetryDelayMs } from '../lib/jobs/rules.js'
import type { ChangeFeed } from './change-feed.js'
import type { CredentialStore } from './credentials.js'
import { databaseCall } from './database-calls.js'

// A transition is written only if the connection still has the facts it was computed from; a
// concurrent writer makes us read again and recompute.
const MAX_TRANSITION_ATTEMPTS = 5

export class ConnectionStore {
  readonly #rows: Collection<ConnectionRecord>
  readonly #feed: ChangeFeed
  readonly #credentials: CredentialStore
  readonly #clock: Clock

  constructor (db: Db, feed: ChangeFeed, credentials: CredentialStore, clock: Clock) {
    this.#rows = db.collection<ConnectionRecord>('connections')
    this.#feed = feed
    this.#credentials = credentials
    this.#clock = clock
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ userId: 1, createdAt: 1 }, { name: 'user_created' })
  }

  /** Connections by provider and state, for the operator's gauges. */
  async countsByProviderAndState (): Promise<Array<{ provider: Provider, state: ConnectionState, count: number }>> {
    const groups = await databaseCall(async (signal) => await this.#rows.aggregate<{ _id: { provider: Provider, state: ConnectionState }, count: number }>([
      { $group: { _id: { provider: '$provider', state: '$state' }, count: { $sum: 1 } } }
    ], { signal }).toArray())
    return groups.map(({ _id, count }) => ({ ..._id, count }))
  }

  /** A new connection in state `connecting`; its first invalidation tells the user's tabs. */
  async create (userId: string, provider: Provider, account?: string): Promise<ConnectionRecord> {
    const now = this.#clock.now()
    const record: ConnectionRecord = {
      _id: new ObjectId(),
      userId,
      provider,
      ...(account === undefined ? {} : { account }),
      state: 'connecting',
      reason: null,
      lastReadFailureAt: null,
      lastSyncedAt: null,
      lastHealthyAt: null,
      importProgress: null,
      createdAt: now,
      updatedAt: now
    }
    await this.#feed.together(userId, async ({ session }) => {
      await databaseCall(async () => await this.#rows.insertOne(record, { session }))
      return { result: null, entries: [{ kind: 'connection', connectionId: record._id.toHexString(), provider, state: record.state, reason: null }] }
    })
    return record
  }

  /** Names the provider account of a connection made before accounts were recorded. */
  async recordAccount (connectionId: string, account: string): Promise<void> {
    const id = objectIdFrom(connectionId)
    if (id) await databaseCall(async () => await this.#rows.updateOne({ _id: id }, { $set: { account } }))
  }

  async get (connectionId: string): Promise<ConnectionRecord | null> {
    const id = objectIdFrom(connectionId)
    return id ? await databaseCall(async (signal) => await this.#rows.findOne({ _id: id }, { signal })) : null
  }

  async listByUser (userId: string): Promise<ConnectionRecord[]> {
    return await databaseCall(async (signal) => await this.#rows.find({ userId }, { signal }).sort({ createdAt: 1 }).toArray())
  }

  /**
   * Applies a state-machine event. Returns the connection as stored afterwards, or null when the
   * connection does not exist. Every change of state or reason appends a `connection` invalidation.
   */
  async apply (connectionId: string, event: ConnectionEvent): Promise<ConnectionRecord | null> {
    const id = objectIdFrom(connectionId)
    if (!id) return null
    for (let attempt = 0; attempt < MAX_TRANSITION_ATTEMPTS; attempt++) {
      const current = await databaseCall(async (signal) => await this.#rows.findOne({ _id: id }, { signal }))
      if (!current) return null
      const now = this.#clock.now()
      const next = transition(current, event, now)
      if (!next) return current
      if (next.discardCredential) await this.#credentials.discard(connectionId)
      const updated = await this.#feed.together(current.userId, async ({ session }) => {
        const written = await databaseCall(async () => await this.#rows.findOneAndUpdate(
          { _id: id, state: current.state, reason: current.reason },
          { $set: { state: next.state, reason: next.reason, ...next.set, updatedAt: now } },
          { returnDocument: 'after', session }
        ))
        const told = written !== null && next.changed
        return { result: written, entries: told ? [{ kind: 'connection' as const, connectionId, provider: current.provider, state: next.state, reason: next.reason }] : [] }
      })
      if (!updated) continue
      return updated
    }
    throw new Error(`connection ${connectionId} kept changing while a transition was applied`)
  }

  /**
   * The provider answered "unavailable" for this connection: one more in the streak, and the next
   * try after the provider's Retry-After or the streak's backoff. Answers that time (for a
   * connection removed meanwhile, the first step's: its jobs then find nothing to do).
   */
  async recordUnavailable (connectionId: string, retryAfterMs: number | null, random: () => number): Promise<Date> {
    const id = objectIdFrom(connectionId)
    const now = this.#clock.now()
    const counted = id ? await databaseCall(async () => await this.#rows.findOneAndUpdate({ _id: id }, { $inc: { unavailableStreak: 1 } }, { returnDocument: 'after' })) : null
    const retryAt = new Date(now.getTime() + providerRetryDelayMs(counted?.unavailableStreak ?? 1, retryAfterMs, random))
    if (id) await databaseCall(async () => await this.#rows.updateOne({ _id: id }, { $set: { providerRetryAt: retryAt, updatedAt: now } }))
    return retryAt
  }

  /** The provider answered this connection again; true when it had been unavailable until now. */
  async recordAnswered (connectionId: string): Promise<boolean> {
    const id = objectIdFrom(connectionId)
    if (!id) return false
    const cleared = await databaseCall(async () => await this.#rows.updateOne({ _id: id, unavailableStreak: { $gt: 0 } }, { $set: { providerRetryAt: null, unavailableStreak: 0 } }))
    return cleared.modifiedCount === 1
  }

  /** The user asked to try now: the next job asks the provider at once (the streak stays, so a failure backs off further). */
  async tryProviderNow (connectionId: string): Promise<void> {
    const id = objectIdFrom(connectionId)
    if (id) await databaseCall(async () => await this.#rows.updateOne({ _id: id, providerRetryAt: { $ne: null } }, { $set: { providerRetryAt: null } }))
  }

  /** Stores import progress and appends the matching `importProgress` invalidation. */
  async recordImport (record: ConnectionRecord, progress: Omit<StoredImportProgress, 'updatedAt'>): Promise<void> {
    const importProgress = { ...progress, updatedAt: this.#clock.now() }
    // Two writes, not one transaction, as an import records its progress page by page: an
    // entry lost to a database that stopped in between is made good by the next one, and the
    // import's end is told by its change of state, which commits with its entry.
    await databaseCall(async () => await this.#rows.updateOne({ _id: record._id }, { $set: { importProgress } }))
    await this.#feed.append(record.userId, {
      kind: 'importProgress',
      connectionId: record._id.toHexString(),
      phase: progress.phase,
      operation: progress.operation,
      counts: progress.counts
    })
  }
}
