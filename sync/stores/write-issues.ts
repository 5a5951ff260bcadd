// Events whose change made here their provider does not have: it refused the change, the calendar
// is gone from the account, or the write keeps failing. One row per connection and event, removed
// when a later write of the event reaches the provider. The count per connection is what the
// status line shows; the backend marks the event itself.
import type { Collection, Db } from 'mongodb'
import type { WriteIssue } from '../../schemas/sync/index.js'
import { databaseCall } from './database-calls.js'

export interface WriteIssueRow {
  connectionId: string
  eventId: string
  userId: string
  reason: WriteIssue['reason']
  retrying: boolean
  at: Date
}

export class WriteIssueStore {
  readonly #rows: Collection<WriteIssueRow>

  constructor (db: Db) {
    this.#rows = db.collection<WriteIssueRow>('providerWriteIssues')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ connectionId: 1, eventId: 1 }, { unique: true, name: 'connection_event' })
  }

  async get (connectionId: string, eventId: string): Promise<WriteIssueRow | null> {
    return await databaseCall(async (signal) => await this.#rows.findOne({ connectionId, eventId }, { projection: { _id: 0 }, signal }))
  }

  async record (row: WriteIssueRow): Promise<void> {
    const { connectionId, eventId } = row
    await databaseCall(async () => await this.#rows.updateOne({ connectionId, eventId }, { $set: row }, { upsert: true }))
  }

  /** Writes of one event run one at a time (one job per event), so no write races this. */
  async clear (connectionId: string, eventId: string): Promise<void> {
    await databaseCall(async () => await this.#rows.deleteOne({ connectionId, eventId }))
  }

  async count (connectionId: string): Promise<number> {
    return await databaseCall(async (signal) => await this.#rows.countDocuments({ connectionId }, { signal }))
  }

  async countByConnection (connectionIds: string[]): Promise<Map<string, number>> {
    if (connectionIds.length === 0) return new Map()
    const rows = await databaseCall(async (signal) => await this.#rows.aggregate<{ _id: string, count: number }>([
      { $match: { connectionId: { $in: connectionIds } } },
      { $group: { _id: '$connectionId', count: { $sum: 1 } } }
    ], { signal }).toArray())
    return new Map(rows.map((row) => [row._id, row.count]))
  }
}
