import type { ClientSession, Collection, Db, ObjectId } from 'mongodb'
import type { OutboxEntryKind, OutboxLease, OutboxRecord } from '../lib/outbox.js'
import { isDuplicateKeyError, withDatabaseDeadline } from './database.js'

export const OUTBOX_COLLECTION = 'syncOutbox'
export const OUTBOX_LEASES_COLLECTION = 'syncOutboxLeases'

const ORDER = { createdAt: 1, seq: 1, _id: 1 } as const

export interface OutboxCollections {
  records: Collection<OutboxRecord>
  leases: Collection<OutboxLease>
}

export function outboxCollections (db: Db): OutboxCollections {
  return { records: db.collection<OutboxRecord>(OUTBOX_COLLECTION), leases: db.collection<OutboxLease>(OUTBOX_LEASES_COLLECTION) }
}

/**
 * What the backend owes the Sync service, in `syncOutbox`, and which process sends each user's
 * entries, in `syncOutboxLeases` (one claim per user, renewed while its holder sends).
 */
export class OutboxStore {
  readonly #records: Collection<OutboxRecord>
  readonly #leases: Collection<OutboxLease>

  constructor ({ records, leases }: OutboxCollections) {
    this.#records = records
    this.#leases = leases
  }

  async ensureIndexes (): Promise<void> {
    await this.#records.createIndexes([
      { key: { user: 1, createdAt: 1, seq: 1 }, name: 'user_order' },
      { key: { nextAttemptAt: 1 }, name: 'due' },
      { key: { idempotencyKey: 1 }, name: 'idempotency_key_unique', unique: true }
    ])
  }

  /** Inside a transaction (`session`) the records exist exactly when the change they report does. */
  async insert (records: OutboxRecord[], session?: ClientSession): Promise<void> {
    // Called on people's requests (a write, a sign-out, a provider connect), which answer 503
    // rather than wait on a silent database.
    await withDatabaseDeadline(async () => await this.#records.insertMany(records, session === undefined ? {} : { session }))
  }

  /** Entries not yet delivered (an operator's gauge: it drains to 0 while Sync answers), from the collection's metadata. */
  async depth (): Promise<number> {
    return await this.#records.estimatedDocumentCount()
  }

  /**
   * When the oldest undelivered entry was written (to the second), or null when none waits: the
   * smallest ObjectId is the oldest, found on the _id index, so a scrape costs the same however
   * long the backlog.
   */
  async oldestWrittenAt (): Promise<Date | null> {
    const [oldest] = await this.#records.find({}, { projection: { _id: 1 } }).sort({ _id: 1 }).limit(1).toArray()
    return oldest?._id.getTimestamp() ?? null
  }

  /** The users with an entry due by `now`. */
  async dueUsers (now: Date): Promise<string[]> {
    return await this.#records.distinct('user', { nextAttemptAt: { $lte: now } })
  }

  /** The user's oldest entries, in the order they were written. */
  async oldest (userId: string, limit: number): Promise<OutboxRecord[]> {
    return await this.#records.find({ user: userId }).sort(ORDER).limit(limit).toArray()
  }

  async remove (id: ObjectId): Promise<void> {
    await this.#records.deleteOne({ _id: id })
  }

  /** Counts one more failed attempt and when the entry is due again. */
  async postpone (id: ObjectId, nextAttemptAt: Date, lastError: string): Promise<void> {
    await this.#records.updateOne({ _id: id }, { $inc: { attempts: 1 }, $set: { nextAttemptAt, lastError } })
  }

  async count (userId?: string, kind?: OutboxEntryKind): Promise<number> {
    return await this.#records.countDocuments({
      ...(userId === undefined ? {} : { user: userId }),
      ...(kind === undefined ? {} : { 'entry.kind': kind })
    })
  }

  /**
   * Takes or renews `holder`'s claim on the user's entries until `until`; false while another
   * holder's claim is live (one that lapsed by `now` is taken over).
   */
  async claim (userId: string, holder: string, until: Date, now: Date): Promise<boolean> {
    const renewed = await this.#leases.updateOne({ _id: userId, $or: [{ holder }, { until: { $lte: now } }] }, { $set: { holder, until } })
    if (renewed.matchedCount === 1) return true
    try {
      await this.#leases.insertOne({ _id: userId, holder, until })
      return true
    } catch (error) {
      if (isDuplicateKeyError(error)) return false
      throw error
    }
  }

  /** Extends a claim `holder` still has; false when it lapsed and another holder took it. */
  async extend (userId: string, holder: string, until: Date): Promise<boolean> {
    const renewed = await this.#leases.updateOne({ _id: userId, holder }, { $set: { until } })
    return renewed.matchedCount === 1
  }

  async release (userId: string, holder: string): Promise<void> {
    await this.#leases.deleteOne({ _id: userId, holder })
  }
}
