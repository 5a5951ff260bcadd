import type { Collection, Db } from 'mongodb'

/** Sync record of one provider calendar of a connection. */
export interface CalendarRecord {
  _id: string
  connectionId: string
  userId: string
  calendarId: string
  name: string
  /** Provider cursor (for example nextSyncToken) for the next incremental pull. */
  cursor: string
  /** Incremented each time the calendar is imported from scratch and the new data replaces the old. */
  generation: number
  /** Consecutive pulls whose cursor the provider no longer accepted. */
  expiryStreak: number
  lastUpdatedAt: Date
}

export class CalendarStore {
  readonly #rows: Collection<CalendarRecord>

  constructor (db: Db) {
    this.#rows = db.collection<CalendarRecord>('calendars')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ connectionId: 1 }, { name: 'connection' })
  }

  async listByConnection (connectionId: string): Promise<CalendarRecord[]> {
    return await this.#rows.find({ connectionId }).sort({ calendarId: 1 }).toArray()
  }

  /** Records a completed import: the new generation is promoted and the streak is kept as given. */
  async promoteImport (record: Omit<CalendarRecord, '_id' | 'generation' | 'lastUpdatedAt'>, now: Date): Promise<void> {
    await this.#rows.updateOne(
      { _id: `${record.connectionId}:${record.calendarId}` },
      {
        $set: { connectionId: record.connectionId, userId: record.userId, calendarId: record.calendarId, name: record.name, cursor: record.cursor, expiryStreak: record.expiryStreak, lastUpdatedAt: now },
        $inc: { generation: 1 }
      },
      { upsert: true }
    )
  }

  async recordPull (calendar: CalendarRecord, cursor: string, now: Date): Promise<void> {
    await this.#rows.updateOne({ _id: calendar._id }, { $set: { cursor, expiryStreak: 0, lastUpdatedAt: now } })
  }
}
