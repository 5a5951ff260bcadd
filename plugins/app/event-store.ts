import fp from 'fastify-plugin'
import createError from '@fastify/error'
import type { ClientSession, Collection } from 'mongodb'
import type { EventRecord } from '../../lib/events/record.js'
import { isDuplicateKeyError } from '../../lib/mongo-errors.js'
import type { OwnWrite, PersistencePlan } from '../../lib/events/transition.js'
import type { NewOutboxEntry } from '../../lib/outbox.js'
import type { MongoHandle } from '../external/mongo.js'
import type { Outbox } from './outbox.js'
import { assembleRange, storageFields, type StorageFields } from '../../lib/events/range.js'

declare module 'fastify' {
  interface FastifyInstance {
    eventStore: EventStore
  }
}

export const EVENTS_COLLECTION = 'events'

type StoredEvent = EventRecord & StorageFields

const STORAGE_ONLY = { startsAt: 0, endsAt: 0, seriesEndsAt: 0, originalStartsAt: 0 } as const

export const EventIdTakenError = createError('EVENT_ID_TAKEN', 'Event id %s is already in use', 409)
export const EventChangedMeanwhileError = createError('EVENT_CHANGED', 'Event %s changed or was removed meanwhile; reload and try again', 409)

function stored (event: EventRecord): StoredEvent {
  return { ...event, ...storageFields(event) }
}

/**
 * The events of the backend's own database. Plans come from lib/events; this class only carries
 * them out, together with the outbox entries they owe the Sync service. Every query names the
 * owner, so another user's event is indistinguishable from a missing one.
 */
export class EventStore {
  readonly events: Collection<StoredEvent>
  readonly #mongo: Pick<MongoHandle, 'withTransaction'>
  readonly #outbox: Pick<Outbox, 'add'>

  constructor (mongo: Pick<MongoHandle, 'db' | 'withTransaction'>, outbox: Pick<Outbox, 'add'>) {
    this.events = mongo.db.collection<StoredEvent>(EVENTS_COLLECTION)
    this.#mongo = mongo
    this.#outbox = outbox
  }

  async ensureIndexes (): Promise<void> {
    await this.events.createIndexes([
      { key: { user: 1, startsAt: 1 }, name: 'user_start' },
      { key: { user: 1, 'recurrence.eventId': 1, originalStartsAt: 1 }, name: 'user_series_occurrence' },
      { key: { user: 1, seriesEndsAt: 1 }, name: 'user_series_end' }
    ])
  }

  async findById (userId: string, eventId: string): Promise<EventRecord | null> {
    return await this.events.findOne({ _id: eventId, user: userId }, { projection: STORAGE_ONLY })
  }

  /** The stored edit (changed or cancelled) of one occurrence of a series, if there is one. */
  async findOccurrenceEdit (userId: string, seriesId: string, originalStart: Date): Promise<EventRecord | null> {
    return await this.events.findOne(
      { user: userId, 'recurrence.eventId': seriesId, originalStartsAt: originalStart },
      { projection: STORAGE_ONLY }
    )
  }

  /** Every event and occurrence of the user overlapping [from, to), in start order. */
  async findRange (userId: string, from: Date, to: Date): Promise<EventRecord[]> {
    const [singles, bases] = await Promise.all([
      this.events.find({
        user: userId,
        status: 'confirmed',
        'recurrence.rule': { $exists: false },
        startsAt: { $lt: to },
        endsAt: { $gt: from }
      }, { projection: STORAGE_ONLY }).toArray(),
      this.events.find({
        user: userId,
        'recurrence.rule': { $exists: true },
        startsAt: { $lt: to },
        $or: [{ seriesEndsAt: null }, { seriesEndsAt: { $gt: from } }]
      }, { projection: STORAGE_ONLY }).toArray()
    ])
    const edits = bases.length === 0
      ? []
      : await this.events.find({ user: userId, 'recurrence.eventId': { $in: bases.map((base) => base._id) } }, { projection: STORAGE_ONLY }).toArray()
    const series = bases.map((base) => ({ series: base, edits: edits.filter((edit) => edit.recurrence?.eventId === base._id) }))
    return assembleRange(singles, series, from, to)
  }

  /**
   * Carries out the plans of one request and stores the outbox entries they owe Sync: all in one
   * transaction when the deployment has them; otherwise in order, own data first, so a crash
   * can lose a report but never report a change that was not made.
   */
  async apply (userId: string, plans: PersistencePlan[], entries: NewOutboxEntry[], now: Date): Promise<void> {
    const writes = plans.flatMap((plan) => plan.writes)
    if (writes.length === 0 && entries.length === 0) return
    await this.#mongo.withTransaction(async (session) => {
      await this.#write(userId, writes, session)
      await this.#outbox.add(userId, entries, { now, ...(session === undefined ? {} : { session }) })
    })
  }

  async #write (userId: string, writes: OwnWrite[], session: ClientSession | undefined): Promise<void> {
    const options = session === undefined ? {} : { session }
    for (const write of writes) {
      switch (write.kind) {
        case 'insert':
          try {
            await this.events.insertOne(stored(write.event), options)
          } catch (error) {
            if (isDuplicateKeyError(error)) throw new EventIdTakenError(write.event._id)
            throw error
          }
          break
        case 'replace': {
          const result = await this.events.replaceOne({ _id: write.event._id, user: userId }, stored(write.event), options)
          if (result.matchedCount === 0) throw new EventChangedMeanwhileError(write.event._id)
          break
        }
        case 'delete':
          await this.events.deleteOne({ _id: write.eventId, user: userId }, options)
          break
        case 'deleteInstances':
          await this.events.deleteMany({
            user: userId,
            'recurrence.eventId': write.seriesId,
            ...(write.fromOriginalStart === undefined ? {} : { originalStartsAt: { $gte: write.fromOriginalStart } })
          }, options)
          break
      }
    }
  }
}

export default fp(async function eventStore (fastify) {
  const store = new EventStore(fastify.mongo, fastify.outbox)
  await store.ensureIndexes()
  fastify.decorate('eventStore', store)
}, { name: 'event-store', dependencies: ['mongo', 'outbox'] })
