// The answer given to each credential hand-over of the backend (its outbox retries with the same
// idempotency key), so a repeated hand-over is answered as the first one was and changes nothing.
import type { Collection, Db } from 'mongodb'
import type { CredentialHandOverResult } from '../../schemas/sync/index.js'
import { isDuplicateKeyError } from '../../stores/database.js'
import { databaseCall } from './database-calls.js'

const RETENTION_SECONDS = 8 * 24 * 60 * 60

interface HandOverRow {
  /** `<userId>:<idempotencyKey>` */
  _id: string
  result: CredentialHandOverResult
  createdAt: Date
}

export class CredentialHandOverStore {
  readonly #rows: Collection<HandOverRow>

  constructor (db: Db) {
    this.#rows = db.collection<HandOverRow>('credentialHandOvers')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ createdAt: 1 }, { name: 'retention', expireAfterSeconds: RETENTION_SECONDS })
  }

  async find (userId: string, idempotencyKey: string): Promise<CredentialHandOverResult | null> {
    return (await databaseCall(async (signal) => await this.#rows.findOne({ _id: `${userId}:${idempotencyKey}` }, { signal })))?.result ?? null
  }

  async record (userId: string, idempotencyKey: string, result: CredentialHandOverResult, now: Date): Promise<void> {
    try {
      await databaseCall(async () => await this.#rows.insertOne({ _id: `${userId}:${idempotencyKey}`, result, createdAt: now }))
    } catch (error) {
      // A concurrent delivery of the same hand-over recorded it first; both did the same.
      if (!isDuplicateKeyError(error)) throw error
    }
  }
}
