import { createHash, timingSafeEqual } from 'node:crypto'
import type { Collection, Db } from 'mongodb'
import { databaseCall } from './database-calls.js'

/** One notification channel at a provider. The channel token is kept only as a digest. */
export interface WatchRecord {
  _id: string
  userId: string
  connectionId: string
  calendarId: string
  resourceId: string
  tokenDigest: string
  expiresAt: Date
  /**
   * The highest message number of the channel whose pull was queued (Google numbers each message
   * of a channel, increasing; a redelivery or a second copy keeps its number). Absent until then.
   */
  lastMessageNumber?: number
}

function digest (token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

export class WatchStore {
  readonly #rows: Collection<WatchRecord>

  constructor (db: Db) {
    this.#rows = db.collection<WatchRecord>('watches')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ userId: 1 }, { name: 'user' })
    await this.#rows.createIndex({ connectionId: 1, calendarId: 1 }, { name: 'connection_calendar' })
    await this.#rows.createIndex({ resourceId: 1 }, { name: 'resource' })
    await this.#rows.createIndex({ expiresAt: 1 }, { name: 'expires' })
  }

  async get (channelId: string): Promise<WatchRecord | null> {
    return await databaseCall(async (signal) => await this.#rows.findOne({ _id: channelId }, { signal }))
  }

  async listByConnection (connectionId: string): Promise<WatchRecord[]> {
    return await databaseCall(async (signal) => await this.#rows.find({ connectionId }, { signal }).toArray())
  }

  /** A channel of ours on the same provider resource (resource ids are stable per calendar). */
  async findByResource (resourceId: string): Promise<WatchRecord | null> {
    return await databaseCall(async (signal) => await this.#rows.findOne({ resourceId }, { signal }))
  }

  /** How many channels expire before `before` (on the expires index). */
  async countExpiringBefore (before: Date): Promise<number> {
    return await databaseCall(async () => await this.#rows.countDocuments({ expiresAt: { $lt: before } }))
  }

  /** Channels that expire before `before`, soonest first. */
  async listExpiringBefore (before: Date, limit: number): Promise<WatchRecord[]> {
    return await databaseCall(async (signal) => await this.#rows.find({ expiresAt: { $lt: before } }, { signal }).sort({ expiresAt: 1 }).limit(limit).toArray())
  }

  async add (watch: Omit<WatchRecord, 'tokenDigest' | '_id'> & { channelId: string, token: string }): Promise<void> {
    const { channelId, token, ...rest } = watch
    await databaseCall(async () => await this.#rows.insertOne({ _id: channelId, ...rest, tokenDigest: digest(token).toString('hex') }))
  }

  /** A channel the provider extended in place. */
  async renew (channelId: string, expiresAt: Date): Promise<void> {
    await databaseCall(async () => await this.#rows.updateOne({ _id: channelId }, { $set: { expiresAt } }))
  }

  /** Remembers that the pull for message `messageNumber` of the channel is queued. */
  async recordMessage (channelId: string, messageNumber: number): Promise<void> {
    await databaseCall(async () => await this.#rows.updateOne({ _id: channelId }, { $max: { lastMessageNumber: messageNumber } }))
  }

  /** A message at or below the channel's recorded number was handled already (or is older than one that was). */
  static alreadyHandled (record: WatchRecord, messageNumber: number | undefined): boolean {
    return messageNumber !== undefined && record.lastMessageNumber !== undefined && messageNumber <= record.lastMessageNumber
  }

  async listByUser (userId: string): Promise<WatchRecord[]> {
    return await databaseCall(async (signal) => await this.#rows.find({ userId }, { signal }).toArray())
  }

  async remove (channelId: string): Promise<void> {
    await databaseCall(async () => await this.#rows.deleteOne({ _id: channelId }))
  }

  /** The channel token a notification presents, compared in constant time with the stored digest. */
  static tokenMatches (record: WatchRecord, presented: string): boolean {
    return timingSafeEqual(Buffer.from(record.tokenDigest, 'hex'), digest(presented))
  }
}
