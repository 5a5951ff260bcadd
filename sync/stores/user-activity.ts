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
    // Marked before the write, so the polls that arrive while it runs do not write again; a write
    // that failed gives the marks back, so the next poll writes instead of an hour later.
    const before = due.map((userId) => [userId, this.#written.get(userId)] as const)
    for (const userId of due) this.#written.set(userId, now.getTime())
    if (this.#written.size > 100_000) this.#written.clear()
    try {
      await databaseCall(async () => await this.#rows.bulkWrite(due.map((userId) => ({
        updateOne: { filter: { _id: userId }, update: { $max: { lastSeenAt: now } }, upsert: true }
      })), { ordered: false }))
    } catch (error) {
      for (const [userId, at] of before) {
        if (this.#written.get(userId) !== now.getTime()) continue
        if (at === undefined) this.#written.delete(userId)
        else this.#written.set(userId, at)
      }
      throw error
    }
  }

  /** When the user was last seen; null when never. */
  async lastSeen (userId: string): Promise<Date | null> {
    return (await databaseCall(async (signal) => await this.#rows.findOne({ _id: userId }, { signal })))?.lastSeenAt ?? null
  }
}
