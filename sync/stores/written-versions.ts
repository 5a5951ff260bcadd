// The provider's version of each event as our own last write left it (Google's etag). A write
// that finds the provider holding exactly that version knows nobody changed the event there since:
// the provider's later `updated` is only the time our earlier write reached it, so the backend's
// change goes out even when it was made before that write arrived.
import type { Collection, Db } from 'mongodb'

export interface WrittenVersion {
  connectionId: string
  eventId: string
  version: string
  writtenAt: Date
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
    await this.#rows.createIndex({ writtenAt: 1 }, { name: 'retention', expireAfterSeconds: RETENTION_SECONDS })
  }

  async get (connectionId: string, eventId: string): Promise<string | undefined> {
    return (await this.#rows.findOne({ connectionId, eventId }))?.version
  }

  /** Writes of one event run one at a time (one job per event), so a plain upsert is enough. */
  async record (connectionId: string, eventId: string, version: string, writtenAt: Date): Promise<void> {
    await this.#rows.updateOne({ connectionId, eventId }, { $set: { version, writtenAt } }, { upsert: true })
  }
}
