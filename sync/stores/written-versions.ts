// The provider's version of each event as our own last write left it (Google's etag, Microsoft's
// change key), and the provider id it has there. A write that finds the provider holding exactly
// that version knows nobody changed the event there since: the provider's later `updated` is only
// the time our earlier write reached it, so the backend's change goes out even when it was made
// before that write arrived. The provider id finds an event our insert made for a change the
// backend reported before it learnt that id (created and deleted while the provider was away).
import type { Collection, Db } from 'mongodb'
import { databaseCall } from './database-calls.js'

export interface WrittenVersion {
  connectionId: string
  eventId: string
  version: string
  /** Absent on rows written before it was kept. */
  providerEventId?: string
  /** The backend's version (its lastUpdated) that the write carried; absent on older rows. */
  lastUpdated?: string
  /**
   * The time the version is read back at: the provider's own, to the millisecond where the
   * provider keeps less (CalDAV's LAST-MODIFIED); absent on older rows.
   */
  updated?: string
  /**
   * The versions our earlier writes of the event left, newest first (at most EARLIER_KEPT): a page
   * read before our last write arrived can still hold one of them. With them, the version our last
   * write was made over where another client left it, dated just before the change that write
   * carried: it is older than that write, whatever time it says.
   */
  earlier?: Array<{ version: string, lastUpdated?: string }>
  writtenAt: Date
}

export interface OwnWrite {
  version: string
  providerEventId?: string
  lastUpdated?: string
  updated?: string
  /** The version the write was made over (`WriteResult.replaced`); kept among the earlier ones. */
  replaced?: string
}

export type OwnWriteRow = Pick<WrittenVersion, 'eventId' | 'version' | 'providerEventId' | 'lastUpdated' | 'updated' | 'earlier'>

/** Earlier versions kept per event: the writes of one event that can be in flight behind a page read. */
const EARLIER_KEPT = 4

export interface OwnWriteIndex {
  byEventId: ReadonlyMap<string, OwnWriteRow>
  byProviderEventId: ReadonlyMap<string, OwnWriteRow>
}

/** Versions are kept as long as a queued write can wait for its provider (a revoked grant aside). */
const RETENTION_SECONDS = 30 * 24 * 60 * 60

export class WrittenVersionStore {
  readonly #rows: Collection<WrittenVersion>

  constructor (db: Db) {
    this.#rows = db.collection<WrittenVersion>('providerWrittenVersions')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ connectionId: 1, eventId: 1 }, { unique: true, name: 'connection_event' })
    await this.#rows.createIndex({ connectionId: 1, providerEventId: 1 }, { name: 'connection_provider_event', partialFilterExpression: { providerEventId: { $exists: true } } })
    await this.#rows.createIndex({ writtenAt: 1 }, { name: 'retention', expireAfterSeconds: RETENTION_SECONDS })
  }

  async get (connectionId: string, eventId: string): Promise<OwnWrite | undefined> {
    const row = await databaseCall(async (signal) => await this.#rows.findOne({ connectionId, eventId }, { signal }))
    if (row === null) return undefined
    return { version: row.version, ...(row.providerEventId === undefined ? {} : { providerEventId: row.providerEventId }), ...(row.updated === undefined ? {} : { updated: row.updated }) }
  }

  /**
   * Our own writes among these provider events: those named by our event id (an insert's answer,
   * Google's private property) or by the provider id our insert got (Graph's delta leaves the
   * event id out).
   */
  async ownWritesOf (connectionId: string, events: ReadonlyArray<{ eventId?: string, providerEventId: string }>): Promise<OwnWriteIndex> {
    const eventIds = [...new Set(events.flatMap((item) => item.eventId === undefined ? [] : [item.eventId]))]
    const providerEventIds = [...new Set(events.map((item) => item.providerEventId))]
    const rows = events.length === 0
      ? []
      : await databaseCall(async (signal) => await this.#rows.find({ connectionId, $or: [{ eventId: { $in: eventIds } }, { providerEventId: { $in: providerEventIds } }] }, { projection: { _id: 0, eventId: 1, version: 1, providerEventId: 1, lastUpdated: 1, updated: 1, earlier: 1 }, signal }).toArray())
    return {
      byEventId: new Map(rows.map((row) => [row.eventId, row])),
      byProviderEventId: new Map(rows.flatMap((row) => row.providerEventId === undefined ? [] : [[row.providerEventId, row] as const]))
    }
  }

  /**
   * Writes of one event run one at a time (one job per event), so reading the row and writing it
   * back is enough; the version it held joins the earlier ones.
   */
  async record (connectionId: string, eventId: string, { replaced, ...written }: OwnWrite, writtenAt: Date): Promise<void> {
    const before = await databaseCall(async (signal) => await this.#rows.findOne({ connectionId, eventId }, { projection: { version: 1, lastUpdated: 1, earlier: 1 }, signal }))
    const kept = before === null || before.version === written.version
      ? before?.earlier ?? []
      : [{ version: before.version, ...(before.lastUpdated === undefined ? {} : { lastUpdated: before.lastUpdated }) }, ...before.earlier ?? []]
    const theirs = replaced === undefined || replaced === written.version || replaced === before?.version || written.lastUpdated === undefined
      ? null
      : { version: replaced, lastUpdated: new Date(Date.parse(written.lastUpdated) - 1).toISOString() }
    const earlier = (theirs === null ? kept : [theirs, ...kept.filter((version) => version.version !== theirs.version)]).slice(0, EARLIER_KEPT)
    await databaseCall(async () => await this.#rows.updateOne({ connectionId, eventId }, { $set: { ...written, earlier, writtenAt } }, { upsert: true }))
  }
}
