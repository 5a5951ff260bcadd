// The answer given to each idempotency key of the backend's event-change reports, so a repeated
// report is answered as the first one was and changes nothing.
import type { Collection, Db } from 'mongodb'
import { isDuplicateKeyError } from '../../stores/database.js'
import type { Outcome } from '../lib/event-changes.js'
import { databaseCall } from './database-calls.js'
import type { InTransaction } from './database-calls.js'

/** Idempotency keys are remembered as long as the change feed keeps entries. */
const REPORT_RETENTION_SECONDS = 8 * 24 * 60 * 60

export interface ReportRow {
  userId: string
  idempotencyKey: string
  fingerprint: string
  outcome: Outcome
  createdAt: Date
}

export class EventChangeReportStore {
  readonly #rows: Collection<ReportRow>

  constructor (db: Db) {
    this.#rows = db.collection<ReportRow>('eventChangeReports')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ userId: 1, idempotencyKey: 1 }, { unique: true, name: 'user_key' })
    await this.#rows.createIndex({ createdAt: 1 }, { name: 'retention', expireAfterSeconds: REPORT_RETENTION_SECONDS })
  }

  async find (userId: string, idempotencyKey: string, { session }: InTransaction = {}): Promise<ReportRow | null> {
    return await databaseCall(async (signal) => await this.#rows.findOne({ userId, idempotencyKey }, { session, signal }))
  }

  /**
   * Records the answer to a key. Returns null when it was recorded, or the row of a concurrent
   * report with the same key that was recorded first. In a transaction (`session`) that report's
   * row makes the insert fail, which ends the transaction: the duplicate key error is thrown, and
   * the caller runs the transaction again, whose find() sees the row.
   */
  async record (row: ReportRow, { session }: InTransaction = {}): Promise<ReportRow | null> {
    try {
      await databaseCall(async () => await this.#rows.insertOne(row, { session }))
      return null
    } catch (error) {
      if (!isDuplicateKeyError(error) || session !== undefined) throw error
      const winner = await this.find(row.userId, row.idempotencyKey)
      if (winner) return winner
      throw error
    }
  }
}
