// Provider writes held while their connection's grant is revoked. The backend's own write stood
// (the user got 204), so the change must reach the provider once the user reconnects instead of
// being dropped: one row per connection and event, a later change replacing an earlier one, queued
// as provider writes when the connection is authorized again.
import type { Collection, Db } from 'mongodb'
import { isDuplicateKeyError } from '../../stores/database.js'
import type { EventOperation, ProviderWriteSubject } from '../../schemas/sync/index.js'
import { databaseCall } from './database-calls.js'
import type { InTransaction } from './database-calls.js'

export interface HeldWrite {
  connectionId: string
  userId: string
  eventId: string
  operation: EventOperation
  calendarId: string | null
  subject?: ProviderWriteSubject
  heldAt: Date
}

export class HeldWriteStore {
  readonly #rows: Collection<HeldWrite>

  constructor (db: Db) {
    this.#rows = db.collection<HeldWrite>('heldProviderWrites')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ connectionId: 1, eventId: 1 }, { unique: true, name: 'connection_event' })
  }

  /** Writes held for connections whose provider cannot take them now. */
  async count (): Promise<number> {
    return await databaseCall(async () => await this.#rows.estimatedDocumentCount())
  }

  /** Keeps the latest change of an event for its connection. */
  async hold (write: HeldWrite, { session }: InTransaction = {}): Promise<void> {
    const replace = async () => await databaseCall(async () => await this.#rows.replaceOne({ connectionId: write.connectionId, eventId: write.eventId }, write, { upsert: true, session }))
    try {
      await replace()
    } catch (error) {
      // Two upserts of one key at once: the loser replaces the row the winner made (in a
      // transaction, which the failed upsert ended, the caller runs the transaction again).
      if (!isDuplicateKeyError(error) || session !== undefined) throw error
      await replace()
    }
  }

  async list (connectionId: string): Promise<HeldWrite[]> {
    return await databaseCall(async (signal) => await this.#rows.find({ connectionId }, { projection: { _id: 0 }, signal }).sort({ heldAt: 1 }).toArray())
  }

  /** Forgets a held write once it is queued, unless a newer change of the event arrived meanwhile. */
  async release (write: HeldWrite): Promise<void> {
    await databaseCall(async () => await this.#rows.deleteOne({ connectionId: write.connectionId, eventId: write.eventId, heldAt: write.heldAt }))
  }
}
