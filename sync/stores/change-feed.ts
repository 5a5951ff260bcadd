// The append-only change feed: per-user invalidations with a monotonic sequence, read in bounded
// pages after an opaque cursor (sync/lib/feed-cursor.ts), kept at least CHANGE_FEED_RETENTION_MS.
import { MongoServerError, type ChangeStreamDocument, type ClientSession, type Collection, type Db } from 'mongodb'
import type { ChangesPage, CursorRequest, Invalidation } from '../../schemas/sync/index.js'
import { isDuplicateKeyError } from '../../stores/database.js'
import { CHANGE_FEED_RETENTION_MS, CURSOR_MAX_AGE_MS, deliverableEntries } from '../lib/change-feed.js'
import type { InvalidationInput } from '../lib/change-feed.js'
import type { Clock } from '../lib/clock.js'
import { decodeCursor, encodeCursor } from '../lib/feed-cursor.js'
import { databaseCall } from './database-calls.js'
import type { InTransaction } from './database-calls.js'

export interface HeadWatch {
  close: () => Promise<void>
}

// 40573: "The $changeStream stage is only supported on replica sets" (a standalone mongod).
const CHANGE_STREAM_UNSUPPORTED = new Set([40573])

function isChangeStreamUnsupported (error: unknown): boolean {
  return error instanceof MongoServerError && typeof error.code === 'number' && CHANGE_STREAM_UNSUPPORTED.has(error.code)
}

interface FeedEntry {
  userId: string
  seq: number
  createdAt: Date
  invalidation: Invalidation
}

interface FeedCounter {
  _id: string
  seq: number
  updatedAt: Date
}

/** SyncDatabase.withTransaction: the work commits whole where the deployment has transactions. */
export type FeedTransaction = <T>(work: (session: ClientSession | undefined) => Promise<T>) => Promise<T>

/**
 * How often a write and its entries run before a duplicate key error is thrown: the user's first
 * entry, raced by another first entry, loses the counter's insert, which ends the transaction;
 * the next run finds the counter.
 */
const TOGETHER_RUNS = 3

export class ChangeFeed {
  readonly #entries: Collection<FeedEntry>
  readonly #counters: Collection<FeedCounter>
  readonly #clock: Clock
  readonly #transaction: FeedTransaction
  readonly #appendedListeners: Array<(userId: string) => void> = []

  constructor (db: Db, clock: Clock, transaction: FeedTransaction) {
    this.#entries = db.collection<FeedEntry>('changeFeed')
    this.#counters = db.collection<FeedCounter>('changeFeedCounters')
    this.#clock = clock
    this.#transaction = transaction
  }

  /**
   * Runs `write`, then appends the entries it names for the user, in one transaction where the
   * deployment has them: a state stored is never left without the entry that tells the user's
   * tabs, as it would be if the database stopped answering between the two writes.
   */
  async together<T> (userId: string, write: (inTransaction: InTransaction) => Promise<{ result: T, entries: InvalidationInput[] }>): Promise<T> {
    for (let run = 1; ; run++) {
      try {
        let appended = false
        const result = await this.#transaction(async (session) => {
          const { result, entries } = await write({ session })
          await this.appendWith({ session }, userId, ...entries)
          appended = entries.length > 0
          return result
        })
        if (appended) this.announce(userId)
        return result
      } catch (error) {
        if (run < TOGETHER_RUNS && isDuplicateKeyError(error)) continue
        throw error
      }
    }
  }

  async ensureIndexes (): Promise<void> {
    await this.#entries.createIndex({ userId: 1, seq: 1 }, { unique: true, name: 'user_seq' })
    await this.#entries.createIndex({ createdAt: 1 }, {
      name: 'retention',
      expireAfterSeconds: Math.ceil(CHANGE_FEED_RETENTION_MS / 1000)
    })
  }

  async append (userId: string, ...items: InvalidationInput[]): Promise<void> {
    await this.appendWith({}, userId, ...items)
    if (items.length > 0) this.announce(userId)
  }

  /** Told of each user whose entries were committed in this process (held reads wake on it); must not throw. */
  onAppended (listener: (userId: string) => void): void {
    this.#appendedListeners.push(listener)
  }

  /** Tells the listeners the user's entries are committed: for callers of appendWith once their transaction is. */
  announce (userId: string): void {
    for (const listener of this.#appendedListeners) listener(userId)
  }

  /**
   * append() within the caller's transaction (`session`): the sequence numbers and the entries
   * commit with the rest of it. The caller announces the user once committed.
   */
  async appendWith ({ session }: InTransaction, userId: string, ...items: InvalidationInput[]): Promise<void> {
    if (items.length === 0) return
    const now = this.#clock.now()
    const last = await this.#allocate(userId, items.length, now, session)
    const first = last - items.length + 1
    await databaseCall(async () => await this.#entries.insertMany(items.map((item, index) => ({
      userId,
      seq: first + index,
      createdAt: now,
      invalidation: { ...item, at: now.toISOString() } as Invalidation
    })), { session }))
  }

  async page (userId: string, cursor: string | null, limit: number): Promise<ChangesPage> {
    const counter = await databaseCall(async (signal) => await this.#counters.findOne({ _id: userId }, { signal }))
    return await this.#pageAfter(userId, cursor, counter?.seq ?? 0, limit)
  }

  /** The same answers as page() for each user, with one counter read for all of them. */
  async pages (requests: CursorRequest[], limit: number): Promise<ChangesPage[]> {
    return (await this.pagesAndHeads(requests, limit)).pages
  }

  /** pages(), with the heads they were read at (a user without entries is at 0). */
  async pagesAndHeads (requests: CursorRequest[], limit: number): Promise<{ pages: ChangesPage[], heads: Map<string, number> }> {
    const found = await this.heads(requests.map((request) => request.userId))
    const heads = new Map(requests.map((request) => [request.userId, found.get(request.userId) ?? 0]))
    const pages = await Promise.all(requests.map((request) =>
      this.#pageAfter(request.userId, request.cursor, heads.get(request.userId) ?? 0, limit)))
    return { pages, heads }
  }

  /** The last sequence number of each user that has entries. */
  async heads (userIds: string[]): Promise<Map<string, number>> {
    const unique = [...new Set(userIds)]
    const counters = await databaseCall(async (signal) => await this.#counters.find({ _id: { $in: unique } }, { signal, projection: { seq: 1 } }).toArray())
    return new Map(counters.map((counter) => [counter._id, counter.seq]))
  }

  /**
   * Calls `changed` with each user whose counter moves, in any process, from a change stream on
   * the counters; null where the deployment offers none (a standalone server answers 40573).
   */
  async watchHeads (changed: (userId: string) => void, ended: (error: unknown) => void): Promise<HeadWatch | null> {
    const stream = this.#counters.watch<FeedCounter, ChangeStreamDocument<FeedCounter>>(
      [{ $match: { operationType: { $in: ['insert', 'update', 'replace'] } } }, { $project: { documentKey: 1, operationType: 1 } }])
    const state = { closing: false }
    const report = (change: ChangeStreamDocument<FeedCounter> | null): void => {
      if (change !== null && 'documentKey' in change) changed(change.documentKey._id)
    }
    try {
      // The stream's aggregate goes out with its first read; a deployment without change streams refuses it.
      report(await stream.tryNext())
    } catch (error) {
      await stream.close().catch(() => {})
      if (isChangeStreamUnsupported(error)) return null
      throw error
    }
    const pumped = (async () => {
      try {
        while (!state.closing) report(await stream.next())
      } catch (error) {
        if (!state.closing) ended(error)
      }
    })()
    return {
      close: async () => {
        state.closing = true
        await stream.close().catch(() => {})
        await pumped
      }
    }
  }

  async #allocate (userId: string, count: number, now: Date, session: InTransaction['session']): Promise<number> {
    const update = { $inc: { seq: count }, $set: { updatedAt: now } }
    try {
      const counter = await databaseCall(async () => await this.#counters.findOneAndUpdate({ _id: userId }, update, { upsert: true, returnDocument: 'after', session }))
      if (counter) return counter.seq
    } catch (error) {
      // Two first appends for the same user may both try to insert the counter; the loser retries.
      // In a transaction the failed insert ended the transaction: the caller runs it again.
      if (!isDuplicateKeyError(error) || session !== undefined) throw error
    }
    const counter = await databaseCall(async () => await this.#counters.findOneAndUpdate({ _id: userId }, update, { upsert: true, returnDocument: 'after' }))
    if (!counter) throw new Error('change feed counter was not written')
    return counter.seq
  }

  async #pageAfter (userId: string, cursor: string | null, head: number, limit: number): Promise<ChangesPage> {
    const nowMs = this.#clock.now().getTime()
    const watermark = (resyncRequired: boolean): ChangesPage => ({
      userId,
      cursor: encodeCursor(userId, { seq: head, issuedAtMs: nowMs }),
      invalidations: [],
      hasMore: false,
      resyncRequired
    })
    if (cursor === null || cursor === '') return watermark(false)
    const position = decodeCursor(userId, cursor)
    if (!position || position.seq > head || nowMs - position.issuedAtMs > CURSOR_MAX_AGE_MS) return watermark(true)
    if (position.seq === head) return watermark(false)

    const found = await databaseCall(async (signal) => await this.#entries
      .find({ userId, seq: { $gt: position.seq, $lte: head } }, { signal })
      .sort({ seq: 1 })
      .limit(limit)
      .toArray())

    const delivered = deliverableEntries(found, position.seq, nowMs)
    const lastEntry = delivered.at(-1)
    const lastSeq = lastEntry?.seq ?? position.seq
    // A cursor's age must say how old the oldest entry after it may be, so a cursor that stops
    // before the head keeps the time of the last entry it covers.
    const issuedAtMs = lastSeq === head ? nowMs : (lastEntry?.createdAt.getTime() ?? position.issuedAtMs)
    return {
      userId,
      cursor: encodeCursor(userId, { seq: lastSeq, issuedAtMs }),
      invalidations: delivered.map((entry) => entry.invalidation),
      hasMore: delivered.length === found.length && found.length === limit && lastSeq < head,
      resyncRequired: false
    }
  }
}
