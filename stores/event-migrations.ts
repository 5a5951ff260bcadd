// Changes made once to the events already stored, when a backend starts. Each is safe to stop
// midway and to run in two processes at once, and is noted by name in `migrations` when done, so
// later starts do not look through every event again.
import type { Collection } from 'mongodb'
import { searchWordsOf } from '../lib/events/search-words.js'
import { storageKey, type StoredEvent } from './event-documents.js'

/** Changes made once to the stored data at a start, each noted here by name when done. */
export const MIGRATIONS_COLLECTION = 'migrations'
export const PROVIDER_EVENT_INDEX = 'user_provider_event_unique'
const KEYED_BY_OWNER = 'events-keyed-by-owner'
const SEARCH_WORDS_ADDED = 'events-search-words'
const BATCH = 500

export class EventMigrations {
  readonly #events: Collection<StoredEvent>
  readonly #done: Collection<{ _id: string, doneAt: Date }>

  constructor (events: Collection<StoredEvent>, done: Collection<{ _id: string, doneAt: Date }>) {
    this.#events = events
    this.#done = done
  }

  /**
   * Events stored when an id was unique across users were keyed by the id alone: each is stored
   * again under its owner's key. A copy and its original name the same provider event, so the
   * unique provider index goes first; the store makes it again. A start that stops midway, or two
   * starting at once, leave nothing behind: the copy is an upsert, and the original goes only
   * after it.
   */
  async keyByOwner (): Promise<void> {
    await this.#once(KEYED_BY_OWNER, async () => {
      const unkeyed = { eventId: { $exists: false } }
      if (await this.#events.findOne(unkeyed, { projection: { _id: 1 } }) === null) return
      if (await this.#events.indexExists(PROVIDER_EVENT_INDEX)) await this.#events.dropIndex(PROVIDER_EVENT_INDEX)
      const nextBatch = async () => await this.#events.find(unkeyed).limit(BATCH).toArray()
      for (let batch = await nextBatch(); batch.length > 0; batch = await nextBatch()) {
        await this.#events.bulkWrite(batch.map((event) => {
          const keyed = { ...event, _id: storageKey(event.user, event._id), eventId: event._id }
          return { replaceOne: { filter: { _id: keyed._id }, replacement: keyed, upsert: true } }
        }), { ordered: false })
        await this.#events.deleteMany({ _id: { $in: batch.map((event) => event._id) } })
      }
    })
  }

  /** Events stored before search are given the words they are found by (lib/events/search.ts). */
  async addSearchWords (): Promise<void> {
    await this.#once(SEARCH_WORDS_ADDED, async () => {
      const wordless = { searchWords: { $exists: false } }
      const nextBatch = async () => await this.#events.find(wordless, { projection: { title: 1, location: 1, description: 1 } }).limit(BATCH).toArray()
      for (let batch = await nextBatch(); batch.length > 0; batch = await nextBatch()) {
        // Only where the words are still missing: an event written meanwhile has its own already.
        await this.#events.bulkWrite(batch.map((event) => ({
          updateOne: { filter: { _id: event._id, ...wordless }, update: { $set: { searchWords: searchWordsOf(event) } } }
        })), { ordered: false })
      }
    })
  }

  async #once (name: string, change: () => Promise<void>): Promise<void> {
    if (await this.#done.findOne({ _id: name }) !== null) return
    await change()
    await this.#done.updateOne({ _id: name }, { $set: { doneAt: new Date() } }, { upsert: true })
  }
}
