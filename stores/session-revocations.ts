import type { AnyBulkWriteOperation, Collection, Db } from 'mongodb'
import { withDatabaseDeadline } from './database.js'

export type RevocationReason = 'signOut' | 'passwordReset' | 'tokenTheft' | 'providerRevoked'

export interface EndedSession { sessionHandle: string, userId: string, reason: RevocationReason }

/** An ended session, kept until its last access token has expired. */
export interface StoredEnd extends EndedSession { expiresAt: Date }

interface RevocationRow {
  _id: string
  userId: string
  reason: RevocationReason
  /** The database's clock, so processes with skewed clocks still agree on what is new. */
  revokedAt: Date
  /** When the last access token of the session has expired; the TTL index removes the row then. */
  expiresAt: Date
}

export type RevocationSeen = Pick<RevocationRow, '_id' | 'revokedAt' | 'expiresAt'>

/** The `sessionRevocations` collection: every ended session, shared by all backend processes. */
export class SessionRevocationStore {
  readonly #rows: Collection<RevocationRow>

  constructor (db: Db) {
    this.#rows = db.collection('sessionRevocations')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0 })
    await this.#rows.createIndex({ revokedAt: 1 })
  }

  /** Writes the ends; a session ended twice keeps the later expiry and is stamped again. */
  async record (ends: StoredEnd[]): Promise<void> {
    const operations: Array<AnyBulkWriteOperation<RevocationRow>> = ends.map((end) => ({
      updateOne: {
        filter: { _id: end.sessionHandle },
        update: { $currentDate: { revokedAt: true }, $set: { userId: end.userId, reason: end.reason, expiresAt: end.expiresAt } },
        upsert: true
      }
    }))
    await withDatabaseDeadline(async () => await this.#rows.bulkWrite(operations, { ordered: false }))
  }

  /** Every session whose access tokens may still be live. */
  async live (): Promise<RevocationSeen[]> {
    return await this.#find({ expiresAt: { $gt: new Date() } })
  }

  /** The sessions stamped at or after `since`. */
  async stampedSince (since: Date): Promise<RevocationSeen[]> {
    return await this.#find({ revokedAt: { $gte: since } })
  }

  async #find (filter: Record<string, unknown>): Promise<RevocationSeen[]> {
    // A silent database must not stop a poll for longer than a read's deadline.
    return await withDatabaseDeadline(async (signal) => await this.#rows.find(filter, { projection: { revokedAt: 1, expiresAt: 1 }, signal }).toArray())
  }
}
