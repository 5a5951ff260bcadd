import createError from '@fastify/error'
import type { AnyBulkWriteOperation, ClientSession, Collection, Document, Filter, FindCursor } from 'mongodb'
import type { EventRecord } from '../lib/events/record.js'
import { isDuplicateKeyError, PROVIDER_PAGE_DEADLINE_MS, withDatabaseDeadline } from './database.js'
import type { OwnWrite, PersistencePlan } from '../lib/events/transition.js'
import type { NewOutboxEntry } from '../lib/outbox.js'
import { foldOccurrence, PROVIDER_COPY_FIELDS, storedVersionOf, type ProviderWrite, type StoredVersion } from '../lib/events/provider-apply.js'
import type { ProviderRecord } from '../lib/events/record.js'
import type { MongoHandle } from './database.js'
import { assembleRange, RangeBudget, storageFields } from '../lib/events/range.js'
import { eventInstant } from '../lib/events/time.js'
import { movedExceptions } from '../lib/events/series-move.js'
import { EVENT_LIMITS } from '../schemas/event.js'
import type { SearchPosition } from '../lib/events/search.js'
import { EventMigrations, MIGRATIONS_COLLECTION, PROVIDER_EVENT_INDEX } from './event-migrations.js'
import { storageKey, type StoredEvent } from './event-documents.js'

export { MIGRATIONS_COLLECTION }
import type { WriteIssue } from '../schemas/sync/index.js'

const DAY_MS = 86_400_000

/** Where an event write puts what Sync must hear, in the write's own transaction (the outbox). */
export interface OutboxWriter {
  add: (userId: string, entries: NewOutboxEntry[], options?: { session?: ClientSession, now?: Date }) => Promise<void>
}

const EVENTS_COLLECTION = 'events'

/** A stored document as the API shows it: its own id, without the owner's prefix. */
function fromStorage<T extends { _id: string, eventId?: string }> (document: T): Omit<T, 'eventId'> {
  const { eventId, ...record } = document
  return eventId === undefined ? record : { ...record, _id: eventId }
}

const TOMBSTONES_COLLECTION = 'eventTombstones'

/**
 * How long a deletion made here is remembered: far longer than a provider page can be in flight,
 * so a page read before the provider learnt of the deletion cannot bring the event back.
 */
const TOMBSTONE_RETENTION_SECONDS = 30 * 24 * 60 * 60

/** An event the user deleted here, with the provider identity it had. */
export interface EventTombstone {
  user: string
  eventId: string
  calendarId?: string
  providerEventId?: string
  deletedAt: Date
}

const STORAGE_ONLY = { startsAt: 0, endsAt: 0, seriesEndsAt: 0, originalStartsAt: 0, searchWords: 0 } as const
/** STORAGE_ONLY but the start, which orders a search and names where its page ended. */
const SEARCH_PROJECTION = { endsAt: 0, seriesEndsAt: 0, originalStartsAt: 0, searchWords: 0 } as const

export const EventIdTakenError = createError('EVENT_ID_TAKEN', 'Event id %s is already in use', 409)
export const EventChangedMeanwhileError = createError('EVENT_CHANGED', 'Event %s changed or was removed meanwhile; reload and try again', 409)

function stored (event: ProviderRecord): StoredEvent {
  return { ...event, ...storageFields(event), _id: storageKey(event.user, event._id), eventId: event._id }
}

/**
 * An update that writes a person's change (`document`) over the stored event, with the provider
 * copy's fields (PROVIDER_COPY_FIELDS) as they are stored at that moment; one the event no longer
 * has is left out.
 */
function withStoredProviderCopy (document: StoredEvent): Document[] {
  const planned: Document = { ...document }
  for (const field of PROVIDER_COPY_FIELDS) delete planned[field]
  return [{ $replaceWith: { $mergeObjects: [{ $literal: planned }, Object.fromEntries(PROVIDER_COPY_FIELDS.map((field) => [field, `$${field}`]))] } }]
}

/** The event, only while it is still the version a plan read. */
function unchangedSince (userId: string, eventId: string, version: StoredVersion): Filter<StoredEvent> {
  return { _id: storageKey(userId, eventId), lastUpdated: version.lastUpdated, syncIssue: version.syncIssue ?? { $exists: false } }
}

/** How often an occurrence's two records are folded when the own one keeps changing under the fold. */
const FOLD_ATTEMPTS = 3

function keysOf (userId: string, eventIds: readonly string[]): string[] {
  return eventIds.map((eventId) => storageKey(userId, eventId))
}

/**
 * The events of the backend's own database. Plans come from lib/events; this class only carries
 * them out, together with the outbox entries they owe the Sync service. Every query names the
 * owner, so another user's event is indistinguishable from a missing one. Every call has a
 * deadline (withDatabaseDeadline): the person's ones DATABASE_CALL_DEADLINE_MS, a page of
 * provider changes PROVIDER_PAGE_DEADLINE_MS.
 */
export class EventStore {
  readonly events: Collection<StoredEvent>
  readonly tombstones: Collection<EventTombstone>
  readonly #mongo: Pick<MongoHandle, 'withTransaction'>
  readonly #outbox: OutboxWriter
  readonly #migrations: EventMigrations

  constructor (mongo: Pick<MongoHandle, 'db' | 'withTransaction'>, outbox: OutboxWriter) {
    this.events = mongo.db.collection<StoredEvent>(EVENTS_COLLECTION)
    this.tombstones = mongo.db.collection<EventTombstone>(TOMBSTONES_COLLECTION)
    this.#migrations = new EventMigrations(this.events, mongo.db.collection(MIGRATIONS_COLLECTION))
    this.#mongo = mongo
    this.#outbox = outbox
  }

  async ensureIndexes (): Promise<void> {
    await this.#migrations.keyByOwner()
    await this.tombstones.createIndexes([
      { key: { user: 1, eventId: 1 }, name: 'user_event' },
      { key: { user: 1, calendarId: 1, providerEventId: 1 }, name: 'user_provider_event', partialFilterExpression: { providerEventId: { $exists: true } } },
      { key: { deletedAt: 1 }, name: 'retention', expireAfterSeconds: TOMBSTONE_RETENTION_SECONDS }
    ])
    await this.events.createIndexes([
      { key: { user: 1, startsAt: 1 }, name: 'user_start' },
      { key: { user: 1, 'recurrence.eventId': 1, originalStartsAt: 1 }, name: 'user_series_occurrence' },
      { key: { user: 1, seriesEndsAt: 1 }, name: 'user_series_end' },
      // One stored event per provider event; also how a page of provider changes finds its events.
      // A query's words are prefixes, each a range of this index (lib/events/search.ts).
      { key: { user: 1, searchWords: 1 }, name: 'user_search_words' },
      {
        key: { user: 1, calendarId: 1, providerEventId: 1 },
        name: PROVIDER_EVENT_INDEX,
        unique: true,
        partialFilterExpression: { providerEventId: { $exists: true } }
      },
      // Exceptions that arrived before their series master, found when it comes.
      {
        key: { user: 1, calendarId: 1, waitingForSeries: 1 },
        name: 'user_waiting_for_series',
        partialFilterExpression: { waitingForSeries: { $exists: true } }
      }
    ])
    // After the index: the words of events stored before search are added a batch at a time.
    await this.#migrations.addSearchWords()
  }

  /** Events of a provider calendar by their provider ids. */
  async findByProviderIds (userId: string, calendarId: string, providerEventIds: string[]): Promise<ProviderRecord[]> {
    if (providerEventIds.length === 0) return []
    return await withDatabaseDeadline(async (signal) => (await this.events.find({ user: userId, calendarId, providerEventId: { $in: providerEventIds } }, { projection: STORAGE_ONLY, signal }).toArray()).map(fromStorage), PROVIDER_PAGE_DEADLINE_MS)
  }

  /** Exceptions of a provider calendar waiting for one of these series masters. */
  async findWaitingFor (userId: string, calendarId: string, masterProviderIds: string[]): Promise<ProviderRecord[]> {
    if (masterProviderIds.length === 0) return []
    return await withDatabaseDeadline(async (signal) => (await this.events.find({ user: userId, calendarId, waitingForSeries: { $in: masterProviderIds } }, { projection: STORAGE_ONLY, signal }).toArray()).map(fromStorage), PROVIDER_PAGE_DEADLINE_MS)
  }

  /** The stored edits (changed or cancelled occurrences) of these series. */
  async findEditsOf (userId: string, seriesIds: string[]): Promise<EventRecord[]> {
    if (seriesIds.length === 0) return []
    return await withDatabaseDeadline(async (signal) => (await this.events.find({ user: userId, 'recurrence.eventId': { $in: seriesIds } }, { projection: STORAGE_ONLY, signal }).toArray()).map(fromStorage), PROVIDER_PAGE_DEADLINE_MS)
  }

  /** Deletions made here of these events, by our id or by their provider id in this calendar. */
  async findTombstones (userId: string, calendarId: string, eventIds: string[], providerEventIds: string[]): Promise<EventTombstone[]> {
    if (eventIds.length === 0 && providerEventIds.length === 0) return []
    return await withDatabaseDeadline(async (signal) => await this.tombstones.find({
      user: userId,
      $or: [{ eventId: { $in: eventIds } }, { calendarId, providerEventId: { $in: providerEventIds } }]
    }, { projection: { _id: 0 }, signal }).toArray(), PROVIDER_PAGE_DEADLINE_MS)
  }

  async findByIds (userId: string, eventIds: string[]): Promise<EventRecord[]> {
    if (eventIds.length === 0) return []
    return await withDatabaseDeadline(async (signal) => (await this.events.find({ _id: { $in: keysOf(userId, eventIds) } }, { projection: STORAGE_ONLY, signal }).toArray()).map(fromStorage), PROVIDER_PAGE_DEADLINE_MS)
  }

  /**
   * Carries out a page of provider changes as one bulk write. These are the provider's changes,
   * not the user's: nothing is reported back to Sync. A write planned on a version of an event
   * that is no longer stored (changed here meanwhile, marked by Sync, or written by another page)
   * changes nothing: `missed` counts such changes and deletions (null when none), and the page is
   * to be planned again. Otherwise `supersede` (the last page of an import) then removes the
   * calendar's provider events that the import did not write.
   */
  async applyProviderWrites (userId: string, writes: ProviderWrite[], supersede?: { calendarId: string, connectionId: string, generation: string }): Promise<{ missed: { changes: number, deletions: number } | null, superseded: number }> {
    const versioned = (eventId: string, unchanged: StoredVersion | undefined): Filter<StoredEvent> =>
      unchanged === undefined ? { _id: storageKey(userId, eventId) } : unchangedSince(userId, eventId, unchanged)
    const expected = { matched: 0, deleted: 0 }
    const operations: Array<AnyBulkWriteOperation<StoredEvent>> = []
    // A series' occurrences go after the bulk write, so its count of deletions is the single events'.
    const seriesGone: string[] = []
    for (const write of writes) {
      switch (write.kind) {
        case 'insert':
          operations.push({ insertOne: { document: stored(write.record) } })
          break
        case 'replace':
          operations.push({ replaceOne: { filter: versioned(write.record._id, write.unchanged), replacement: stored(write.record) } })
          expected.matched++
          break
        case 'touch':
          operations.push({ updateOne: { filter: versioned(write.eventId, write.unchanged), update: { $set: write.set, ...(write.agreed === true ? { $unset: { providerBase: '' as const } } : {}) } } })
          expected.matched++
          break
        case 'delete':
          operations.push({ deleteOne: { filter: versioned(write.eventId, write.unchanged) } })
          expected.deleted++
          break
        case 'deleteInstances':
          seriesGone.push(write.seriesId)
          break
        default:
          throw new Error(`unknown provider write: ${JSON.stringify(write satisfies never)}`)
      }
    }
    const done = operations.length === 0 ? null : await withDatabaseDeadline(async () => await this.events.bulkWrite(operations, { ordered: true }), PROVIDER_PAGE_DEADLINE_MS)
    if (seriesGone.length > 0) {
      // Only of a series whose own record went: a series the person changed meanwhile stays whole.
      const kept = new Set((await withDatabaseDeadline(async (signal) => await this.events.find({ _id: { $in: keysOf(userId, seriesGone) } }, { projection: { eventId: 1 }, signal }).toArray(), PROVIDER_PAGE_DEADLINE_MS)).map((record) => record.eventId))
      const ended = seriesGone.filter((seriesId) => !kept.has(seriesId))
      if (ended.length > 0) await withDatabaseDeadline(async () => await this.events.deleteMany({ user: userId, 'recurrence.eventId': { $in: ended } }), PROVIDER_PAGE_DEADLINE_MS)
    }
    const shortOf = done === null ? { changes: 0, deletions: 0 } : { changes: expected.matched - done.matchedCount, deletions: expected.deleted - done.deletedCount }
    const missed = shortOf.changes > 0 || shortOf.deletions > 0 ? shortOf : null
    if (missed !== null || supersede === undefined) return { missed, superseded: 0 }
    const gone = await withDatabaseDeadline(async () => await this.events.deleteMany({
      user: userId,
      calendarId: supersede.calendarId,
      connectionId: supersede.connectionId,
      providerEventId: { $exists: true },
      generation: { $ne: supersede.generation }
    }), PROVIDER_PAGE_DEADLINE_MS)
    return { missed, superseded: gone.deletedCount }
  }

  /**
   * One stored record per occurrence of a series: a page of provider changes and the user's own
   * edit of the same occurrence, each planned without seeing the other, can both insert one. Run
   * after either inserted occurrence records; folds such a pair into the own edit
   * (lib/events/provider-apply.ts foldOccurrence). Answers how many records went. `deadlineMs`:
   * a page's longer one; a person's write keeps the request's.
   */
  async foldOccurrences (userId: string, inserted: readonly EventRecord[], deadlineMs?: number): Promise<number> {
    const occurrences = inserted.flatMap((event) => event.recurrence?.eventId === undefined || event.originalStartDate === undefined
      ? []
      : [{ seriesId: event.recurrence.eventId, at: eventInstant(event.originalStartDate, event.isAllDay, event.timeZone) }])
    if (occurrences.length === 0) return 0
    // A fold needs an own record at one of these occurrences. Most pages (an import) meet none, and
    // the own records of their series are few: they are read first, by series alone.
    const instants = new Set(occurrences.map((occurrence) => occurrence.at.getTime()))
    const own = await withDatabaseDeadline(async (signal) => await this.events.find({
      user: userId,
      'recurrence.eventId': { $in: [...new Set(occurrences.map((occurrence) => occurrence.seriesId))] },
      providerEventId: { $exists: false }
    }, { projection: { recurrence: 1, originalStartsAt: 1 }, signal }).toArray(), deadlineMs)
    const met = own.filter((record) => record.originalStartsAt instanceof Date && instants.has(record.originalStartsAt.getTime()))
    if (met.length === 0) return 0
    const found = await withDatabaseDeadline(async (signal) => await this.events.find({
      user: userId,
      'recurrence.eventId': { $in: [...new Set(met.map((record) => record.recurrence?.eventId))] },
      originalStartsAt: { $in: met.map((record) => record.originalStartsAt) }
    }, { projection: { startsAt: 0, endsAt: 0, seriesEndsAt: 0 }, signal }).toArray(), deadlineMs)
    const byOccurrence = new Map<string, ProviderRecord[]>()
    for (const record of found) {
      const { originalStartsAt, ...event } = fromStorage(record)
      const key = `${event.recurrence?.eventId ?? ''}|${originalStartsAt?.getTime() ?? ''}`
      byOccurrence.set(key, [...byOccurrence.get(key) ?? [], event])
    }
    let dropped = 0
    for (const records of byOccurrence.values()) {
      const fold = records.length < 2 ? null : foldOccurrence(records)
      if (fold === null) continue
      // The provider's record goes first: its provider id is unique per calendar.
      await withDatabaseDeadline(async () => await this.events.deleteMany({ _id: { $in: keysOf(userId, fold.drop) } }), deadlineMs)
      dropped += fold.drop.length
      await this.#keepFolded(userId, fold.keep, records, deadlineMs)
    }
    return dropped
  }

  /**
   * Writes the own record of a fold, over the own edit as the fold read it. When a person's write
   * (or Sync's mark) came between, the edit as it is now is folded again, so that write is not undone.
   */
  async #keepFolded (userId: string, keep: ProviderRecord, records: ProviderRecord[], deadlineMs?: number): Promise<void> {
    const imported = records.filter((record) => record.providerEventId !== undefined)
    let mine: ProviderRecord | undefined = records.find((record) => record._id === keep._id)
    let folded: ProviderRecord = keep
    for (let attempt = 1; mine !== undefined; attempt++) {
      const filter = unchangedSince(userId, folded._id, storedVersionOf(mine))
      const replacement = stored(folded)
      const written = await withDatabaseDeadline(async () => await this.events.replaceOne(filter, replacement), deadlineMs)
      if (written.matchedCount > 0 || attempt === FOLD_ATTEMPTS) return
      const now: StoredEvent | null = await withDatabaseDeadline(async (signal) => await this.events.findOne({ _id: storageKey(userId, keep._id) }, { projection: STORAGE_ONLY, signal }), deadlineMs)
      // Deleted here meanwhile: nothing to keep (the provider's exception comes back with a page, unless the deletion reaches it first).
      if (now === null) return
      mine = fromStorage(now)
      const again = foldOccurrence([mine, ...imported])
      if (again === null) return
      folded = again.keep
    }
  }

  /**
   * Forgets a connection's provider calendars (or one of them): imported events go; the user's own
   * events that were also written to the provider stay, without their provider identity.
   */
  async removeProviderEvents (userId: string, connectionId: string, calendarId?: string): Promise<number> {
    const scope = { user: userId, connectionId, ...(calendarId === undefined ? {} : { calendarId }) }
    const removed = await withDatabaseDeadline(async () => await this.events.deleteMany({ ...scope, origin: 'providerImport' }), PROVIDER_PAGE_DEADLINE_MS)
    await withDatabaseDeadline(async () => await this.events.updateMany(scope, {
      $unset: { calendarId: '', providerEventId: '', connectionId: '', iCalUID: '', providerEtag: '', providerUpdated: '', generation: '', waitingForSeries: '', syncIssue: '', providerBase: '' }
    }), PROVIDER_PAGE_DEADLINE_MS)
    return removed.deletedCount
  }

  /** Marks (or, with null, unmarks) an event whose change is not at its provider; false when no such event is stored. */
  async setSyncIssue (userId: string, eventId: string, issue: WriteIssue | null): Promise<boolean> {
    const update = issue === null ? { $unset: { syncIssue: '' as const } } : { $set: { syncIssue: issue } }
    const result = await withDatabaseDeadline(async () => await this.events.updateOne({ _id: storageKey(userId, eventId) }, update))
    return result.matchedCount > 0
  }

  async findById (userId: string, eventId: string): Promise<EventRecord | null> {
    const found = await withDatabaseDeadline(async (signal) => await this.events.findOne({ _id: storageKey(userId, eventId) }, { projection: STORAGE_ONLY, signal }))
    return found === null ? null : fromStorage(found)
  }

  /**
   * The user's events holding a word that begins with each of `terms`, in start order after
   * `after`: at most `limit`, and where the next page would begin. Cancelled events and
   * exceptions still waiting for their series are not shown, as in a range read.
   */
  async search (userId: string, terms: string[], after: SearchPosition | undefined, limit: number): Promise<{ events: EventRecord[], next: SearchPosition | null }> {
    const found = await withDatabaseDeadline(async (signal) => await this.events.find({
      user: userId,
      // A search term is letters and digits only (searchTermsOf), so it reads as itself in a pattern.
      $and: terms.map((term) => ({ searchWords: { $regex: `^${term}` } })),
      status: 'confirmed',
      waitingForSeries: { $exists: false },
      ...(after === undefined ? {} : { $or: [{ startsAt: { $gt: after.startsAt } }, { startsAt: after.startsAt, _id: { $gt: after.key } }] })
    }, { sort: { startsAt: 1, _id: 1 }, limit: limit + 1, projection: SEARCH_PROJECTION, signal }).toArray())
    const page = found.slice(0, limit)
    const last = page.at(-1)
    const next = found.length > limit && last !== undefined ? { startsAt: last.startsAt, key: last._id } : null
    return { events: page.map((event) => { const { startsAt: _startsAt, ...shown } = event; return fromStorage(shown) }), next }
  }

  /** The stored edit (changed or cancelled) of one occurrence of a series, if there is one. */
  async findOccurrenceEdit (userId: string, seriesId: string, originalStart: Date): Promise<EventRecord | null> {
    const found = await withDatabaseDeadline(async (signal) => await this.events.findOne(
      { user: userId, 'recurrence.eventId': seriesId, originalStartsAt: originalStart },
      { projection: STORAGE_ONLY, signal }
    ))
    return found === null ? null : fromStorage(found)
  }

  /**
   * Every event and occurrence of the user overlapping [from, to), in start order. What the read
   * holds (stored events read, occurrences made) is counted as it comes and bounded
   * (RangeBudget): past the bound the read is refused before it holds much more.
   */
  async findRange (userId: string, from: Date, to: Date): Promise<EventRecord[]> {
    const budget = new RangeBudget()
    const [singles, bases] = await Promise.all([
      this.#readBounded((signal) => this.events.find({
        user: userId,
        status: 'confirmed',
        'recurrence.rule': { $exists: false },
        // An exception still waiting for its series master is not shown until it is linked.
        waitingForSeries: { $exists: false },
        startsAt: { $lt: to },
        endsAt: { $gt: from }
      }, { projection: STORAGE_ONLY, signal }), budget),
      this.#readBounded((signal) => this.events.find({
        user: userId,
        'recurrence.rule': { $exists: true },
        startsAt: { $lt: to },
        $or: [{ seriesEndsAt: null }, { seriesEndsAt: { $gt: from } }]
      }, { projection: STORAGE_ONLY, signal }), budget)
    ])
    // Only edits of occurrences that can reach into the range matter: an occurrence overlapping
    // it starts at most one occurrence length before it (expansion keeps two days of margin too).
    const longest = bases.reduce((most, base) => Math.max(most, eventInstant(base.endDate, base.isAllDay, base.timeZone).getTime() -
      eventInstant(base.startDate, base.isAllDay, base.timeZone).getTime()), 0)
    const edits = bases.length === 0
      ? []
      : await this.#readBounded((signal) => this.events.find({
        user: userId,
        'recurrence.eventId': { $in: bases.map((base) => base._id) },
        originalStartsAt: { $gte: new Date(from.getTime() - longest - 2 * DAY_MS), $lt: new Date(to.getTime() + 2 * DAY_MS) }
      }, { projection: STORAGE_ONLY, signal }), budget)
    const series = bases.map((base) => ({ series: base, edits: edits.filter((edit) => edit.recurrence?.eventId === base._id) }))
    return await assembleRange(singles, series, from, to, budget)
  }

  /**
   * The stored events of one calendar (null: the user's own, events without a calendarId) that
   * reach into [from, to), as stored: single events, series (whole, with their rules) and every
   * edited or cancelled occurrence of those series. Null when there are more than `limit`.
   */
  async findCalendarEvents (userId: string, calendarId: string | null, from: Date, to: Date, limit: number): Promise<EventRecord[] | null> {
    const read = async (filter: Record<string, unknown>, most: number) => await withDatabaseDeadline(async (signal) =>
      (await this.events.find({ user: userId, waitingForSeries: { $exists: false }, ...filter }, { projection: STORAGE_ONLY, signal, sort: { startsAt: 1 }, limit: most + 1 }).toArray()).map(fromStorage))
    const events = await read({
      ...(calendarId === null ? { calendarId: { $exists: false } } : { calendarId }),
      status: 'confirmed',
      'recurrence.eventId': { $exists: false },
      startsAt: { $lt: to },
      $or: [
        { 'recurrence.rule': { $exists: false }, endsAt: { $gt: from } },
        { 'recurrence.rule': { $exists: true }, $or: [{ seriesEndsAt: null }, { seriesEndsAt: { $gt: from } }] }
      ]
    }, limit)
    if (events.length > limit) return null
    const seriesIds = events.flatMap((event) => event.recurrence?.rule === undefined ? [] : [event._id])
    const edits = seriesIds.length === 0 ? [] : await read({ 'recurrence.eventId': { $in: seriesIds } }, limit - events.length)
    return events.length + edits.length > limit ? null : [...events, ...edits]
  }

  /** Reads a cursor whole within the database deadline, counting what it holds. */
  async #readBounded (open: (signal: AbortSignal) => FindCursor<EventRecord>, budget: RangeBudget): Promise<EventRecord[]> {
    return await withDatabaseDeadline(async (signal) => {
      const cursor = open(signal)
      const read: EventRecord[] = []
      try {
        for await (const event of cursor.limit(EVENT_LIMITS.rangeItems + 1).map(fromStorage)) {
          budget.hold(event)
          read.push(event)
        }
      } finally {
        await cursor.close()
      }
      return read
    })
  }

  /**
   * Carries out the plans of one request and stores the outbox entries they owe Sync: all in one
   * transaction when the deployment has them; otherwise in order, own data first, so a crash
   * can lose a report but never report a change that was not made.
   */
  async apply (userId: string, plans: PersistencePlan[], entries: NewOutboxEntry[], now: Date): Promise<void> {
    const writes = plans.flatMap((plan) => plan.writes)
    if (writes.length === 0 && entries.length === 0) return
    await this.#mongo.withTransaction(async (session, signal) => {
      // Past the deadline the client was told 503. In a transaction nothing more is written, so
      // it is not committed; without one, the writes go on to the end with their reports, since
      // a change made must not go unreported.
      const stopIfLate = () => { if (session !== undefined) signal.throwIfAborted() }
      await this.#write(userId, writes, session, now, stopIfLate)
      stopIfLate()
      await this.#outbox.add(userId, entries, { now, ...(session === undefined ? {} : { session }) })
    })
  }

  async #write (userId: string, writes: OwnWrite[], session: ClientSession | undefined, now: Date, stopIfLate: () => void): Promise<void> {
    const options = session === undefined ? {} : { session }
    for (const write of writes) {
      stopIfLate()
      switch (write.kind) {
        case 'insert':
          try {
            await this.events.insertOne(stored(write.event), options)
          } catch (error) {
            // Only this user's own events can hold the key.
            if (isDuplicateKeyError(error)) throw new EventIdTakenError(write.event._id)
            throw error
          }
          break
        case 'replace': {
          const result = await this.events.updateOne({ _id: storageKey(userId, write.event._id) }, withStoredProviderCopy(stored(write.event)), options)
          if (result.matchedCount === 0) throw new EventChangedMeanwhileError(write.event._id)
          break
        }
        case 'delete': {
          const gone = await this.events.findOneAndDelete({ _id: storageKey(userId, write.eventId) }, { ...options, projection: { calendarId: 1, providerEventId: 1 } })
          // Remembered so that a provider page read before the provider learns of this deletion
          // (or the answer to our own earlier write) cannot bring the event back.
          if (gone !== null) {
            await this.tombstones.insertOne({
              user: userId,
              eventId: write.eventId,
              ...(gone.calendarId === undefined ? {} : { calendarId: gone.calendarId }),
              ...(gone.providerEventId === undefined ? {} : { providerEventId: gone.providerEventId }),
              deletedAt: now
            }, options)
          }
          break
        }
        case 'deleteInstances': {
          const gone = await this.events.find({
            user: userId,
            'recurrence.eventId': write.seriesId,
            ...(write.fromOriginalStart === undefined ? {} : { originalStartsAt: { $gte: write.fromOriginalStart } })
          }, { ...options, projection: { _id: 1, eventId: 1, calendarId: 1, providerEventId: 1 } }).toArray()
          if (gone.length === 0) break
          await this.events.deleteMany({ _id: { $in: gone.map((event) => event._id) } }, options)
          // As for one deleted event: the provider's copy of an edited occurrence, read before
          // the cut reached it (its exception still names our id), must not bring it back.
          await this.tombstones.insertMany(gone.map((event) => ({
            user: userId,
            eventId: event.eventId,
            ...(event.calendarId === undefined ? {} : { calendarId: event.calendarId }),
            ...(event.providerEventId === undefined ? {} : { providerEventId: event.providerEventId }),
            deletedAt: now
          })), options)
          break
        }
        case 'followSeries': {
          const seriesId = write.after._id
          const exceptions = (await this.events.find({ user: userId, 'recurrence.eventId': seriesId }, { ...options, projection: STORAGE_ONLY }).toArray()).map(fromStorage)
          const moved = movedExceptions(write.before, write.after, exceptions, now)
          // Those read, not every one now stored: without a transaction, a provider page can store
          // an exception of the series in between, and it was never moved.
          if (exceptions.length > 0) await this.events.deleteMany({ _id: { $in: keysOf(userId, exceptions.map((exception) => exception._id)) } }, options)
          if (moved.length > 0) await this.events.insertMany(moved.map(stored), options)
          break
        }
      }
    }
  }
}
