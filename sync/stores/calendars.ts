import { randomBytes } from 'node:crypto'
import type { Collection, Db } from 'mongodb'
import { databaseCall } from './database-calls.js'
import type { Reminder } from '../../lib/events/reminders.js'

/** Where an interrupted import of one calendar goes on from. */
export interface ImportCheckpoint {
  /** The import run (job) it belongs to; another run starts the calendar afresh. */
  run: string
  /** The generation the backend files this import's pages under. */
  generation: string
  /** `window`: the weeks around today; `full`: the whole calendar, which ends with the sync cursor. */
  pass: 'window' | 'full'
  /** The page to read next; null at the start of the pass. */
  pageToken: string | null
  /** Events handed to the backend in this import so far. */
  eventsImported: number
}

/** Sync record of one provider calendar of a connection. */
export interface CalendarRecord {
  _id: string
  connectionId: string
  userId: string
  calendarId: string
  name: string
  /** The account's own calendar, where the user's own events are written. */
  primary: boolean
  timeZone: string
  /** The provider's colour of the calendar (#rrggbb); null when it names none. Absent on rows from before colours were kept. */
  color?: string | null
  /** What an event keeping the calendar's default reminds of (ProviderCalendar); absent when the provider keeps none. */
  defaultReminders?: Reminder[]
  /** Provider cursor (for example nextSyncToken) for the next incremental pull; null until imported. */
  cursor: string | null
  /** Incremented each time the calendar is imported from scratch and the new data replaces the old. */
  generation: number
  /** Consecutive pulls whose cursor the provider no longer accepted. */
  expiryStreak: number
  /** The import run that last completed this calendar. */
  importedInRun: string | null
  checkpoint: ImportCheckpoint | null
  lastUpdatedAt: Date
  /** When the provider last listed the calendar (import or a pull's look at the list); absent on older rows. */
  listedAt?: Date
}

/** What the provider says of a calendar, and whose it is. */
export type CalendarFacts = Pick<CalendarRecord, 'connectionId' | 'userId' | 'calendarId' | 'name' | 'primary' | 'timeZone' | 'color' | 'defaultReminders'>

/** A calendar whose default reminders were removed at the provider loses the stored ones. */
function unsetDropped (facts: CalendarFacts): { $unset?: { defaultReminders: '' } } {
  return facts.defaultReminders === undefined ? { $unset: { defaultReminders: '' } } : {}
}

function rowId (connectionId: string, calendarId: string): string {
  return `${connectionId}:${calendarId}`
}

export class CalendarStore {
  readonly #rows: Collection<CalendarRecord>

  constructor (db: Db) {
    this.#rows = db.collection<CalendarRecord>('calendars')
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ connectionId: 1 }, { name: 'connection' })
    await this.#rows.createIndex({ userId: 1, calendarId: 1 }, { name: 'user_calendar' })
  }

  /** The connections of a user that hold a calendar of this id (one, unless two accounts share an id). */
  async connectionsHolding (userId: string, calendarId: string): Promise<string[]> {
    const rows = await databaseCall(async (signal) => await this.#rows.find({ userId, calendarId }, { projection: { connectionId: 1 }, signal }).toArray())
    return rows.map((row) => row.connectionId)
  }

  /** Imported calendars last pulled before `before`, oldest first. */
  async listPulledBefore (before: Date, limit: number): Promise<CalendarRecord[]> {
    return await databaseCall(async (signal) => await this.#rows.find({ cursor: { $ne: null }, lastUpdatedAt: { $lt: before } }, { signal }).sort({ lastUpdatedAt: 1 }).limit(limit).toArray())
  }

  async listByConnection (connectionId: string): Promise<CalendarRecord[]> {
    return await databaseCall(async (signal) => await this.#rows.find({ connectionId }, { signal }).sort({ calendarId: 1 }).toArray())
  }

  async get (connectionId: string, calendarId: string): Promise<CalendarRecord | null> {
    return await databaseCall(async (signal) => await this.#rows.findOne({ _id: rowId(connectionId, calendarId) }, { signal }))
  }

  /**
   * The checkpoint of a calendar's import in `run`: the stored one when this run was interrupted,
   * else a fresh one under a new generation. The calendar's facts are refreshed on the way.
   */
  async beginImport (facts: CalendarFacts, run: string, now: Date): Promise<ImportCheckpoint> {
    const _id = rowId(facts.connectionId, facts.calendarId)
    const existing = await databaseCall(async (signal) => await this.#rows.findOne({ _id }, { signal }))
    const resumed = existing?.checkpoint?.run === run ? existing.checkpoint : null
    const checkpoint: ImportCheckpoint = resumed ?? { run, generation: randomBytes(9).toString('base64url'), pass: 'window', pageToken: null, eventsImported: 0 }
    await databaseCall(async () => await this.#rows.updateOne({ _id }, {
      $set: { ...facts, checkpoint, lastUpdatedAt: now, listedAt: now },
      ...unsetDropped(facts),
      $setOnInsert: { cursor: null, generation: 0, expiryStreak: 0, importedInRun: null }
    }, { upsert: true }))
    return checkpoint
  }

  /** What the provider now says of a calendar already imported (its name, colour, default reminders). */
  async refreshFacts (facts: CalendarFacts, now: Date): Promise<void> {
    await databaseCall(async () => await this.#rows.updateOne({ _id: rowId(facts.connectionId, facts.calendarId) }, { $set: { ...facts, listedAt: now }, ...unsetDropped(facts) }))
  }

  /** The generation of the calendar's import under way, or null when none is. */
  async importUnderWay (connectionId: string, calendarId: string): Promise<string | null> {
    const row = await databaseCall(async (signal) => await this.#rows.findOne({ _id: rowId(connectionId, calendarId) }, { projection: { checkpoint: 1 }, signal }))
    return row?.checkpoint?.generation ?? null
  }

  async saveCheckpoint (connectionId: string, calendarId: string, checkpoint: ImportCheckpoint): Promise<void> {
    await databaseCall(async () => await this.#rows.updateOne({ _id: rowId(connectionId, calendarId) }, { $set: { checkpoint } }))
  }

  /** Records a completed import: the new generation is promoted and the streak is kept as given. */
  async promoteImport (connectionId: string, calendarId: string, update: { cursor: string, run: string, expiryStreak: number }, now: Date): Promise<void> {
    await databaseCall(async () => await this.#rows.updateOne({ _id: rowId(connectionId, calendarId) }, {
      $set: { cursor: update.cursor, importedInRun: update.run, expiryStreak: update.expiryStreak, checkpoint: null, lastUpdatedAt: now },
      $inc: { generation: 1 }
    }))
  }

  async recordPull (calendar: CalendarRecord, cursor: string, now: Date): Promise<void> {
    await databaseCall(async () => await this.#rows.updateOne({ _id: calendar._id }, { $set: { cursor, expiryStreak: 0, lastUpdatedAt: now } }))
  }

  async remove (connectionId: string, calendarId: string): Promise<void> {
    await databaseCall(async () => await this.#rows.deleteOne({ _id: rowId(connectionId, calendarId) }))
  }
}
