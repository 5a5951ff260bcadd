// The provider's version of each event as our own last write left it (Google's etag, Microsoft's
// change key), and the provider id it has there. A write that finds the provider holding exactly
// that version knows nobody changed the event there since: the provider's later `updated` is only
// the time our earlier write reached it, so the backend's change goes out even when it was made
// before that write arrived. The provider id finds an event our insert made for a change the
// backend reported before it learnt that id (created and deleted while the provider was away).
import type { Collection, Db } from 'mongodb'

export interface WrittenVersion {
  connectionId: string
  eventId: string
  version: string
  /** Absent on rows written before it was kept. */
  providerEventId?: string
  writtenAt: Date
}

export interface OwnWrite { version: string, providerEventId?: string }

/** Versions are kept as long as a queued write can wait for its provider (a revoked grant aside). */
const RETENTION_SECONDS = 30 * 24 * 60 * 60

export class WrittenVersionStore {
  readonly #rows: Collection<WrittenVersion>

  constructor (db: Db) {
    this.#rows = db.collection<WrittenVersion>('providerWrittenVersions')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ connectionId: 1, eventId: 1 }, { unique: true, name: 'connection_event' })
    await this.#rows.createIndex({ writtenAt: 1 }, { name: 'retention', expireAfterSeconds: RETENTION_SECONDS })
  }

  async get (connectionId: string, eventId: string): Promise<OwnWrite | undefined> {
    const row = await this.#rows.findOne({ connectionId, eventId })
    if (row === null) return undefined
    return { version: row.version, ...(row.providerEventId === undefined ? {} : { providerEventId: row.providerEventId }) }
  }

  /** Writes of one event run one at a time (one job per event), so a plain upsert is enough. */
  async record (connectionId: string, eventId: string, written: OwnWrite, writtenAt: Date): Promise<void> {
    await this.#rows.updateOne({ connectionId, eventId }, { $set: { ...written, writtenAt } }, { upsert: true })
  }
}
