// When each user last used the service, as the Sync service sees it: the backend's internal calls
// that act for a user (feed polls of an open stream, event-change reports, metadata reads, connects).
// Watch maintenance reads it to stop the channels of users who stopped coming.
import type { Collection, Db } from 'mongodb'
import { databaseCall } from './database-calls.js'

interface ActivityRow {
  _id: string
  lastSeenAt: Date
}

/** A user's activity is written at most this often; the rule it feeds counts in days. */
const WRITE_INTERVAL_MS = 60 * 60_000

export class UserActivityStore {
  readonly #rows: Collection<ActivityRow>
  /** Last write per user in this process, so a poll every 2 s is not a database write every 2 s. */
  readonly #written = new Map<string, number>()

  constructor (db: Db) {
    this.#rows = db.collection<ActivityRow>('userActivity')
  }

  async touch (userIds: Iterable<string>, now: Date): Promise<void> {
    const due = [...new Set(userIds)].filter((userId) => now.getTime() - (this.#written.get(userId) ?? 0) >= WRITE_INTERVAL_MS)
    if (due.length === 0) return
    for (const userId of due) this.#written.set(userId, now.getTime())
    if (this.#written.size > 100_000) this.#written.clear()
    await databaseCall(async () => await this.#rows.bulkWrite(due.map((userId) => ({
      updateOne: { filter: { _id: userId }, update: { $max: { lastSeenAt: now } }, upsert: true }
    })), { ordered: false }))
  }

  /** When the user was last seen; null when never. */
  async lastSeen (userId: string): Promise<Date | null> {
    return (await databaseCall(async (signal) => await this.#rows.findOne({ _id: userId }, { signal })))?.lastSeenAt ?? null
  }
}
