import { test } from 'tap'
import { EventIdTakenError, EventChangedMeanwhileError, EventStore, MIGRATIONS_COLLECTION } from '../../stores/events.js'
import { connectMongo } from '../../plugins/external/mongo.js'
import { planTransition, type PersistencePlan } from '../../lib/events/transition.js'
import { eventChangeEntries } from '../../lib/events/change-reports.js'
import { planOccurrenceDelete } from '../../lib/events/apply-to.js'
import { occurrenceAt, storageFields } from '../../lib/events/range.js'
import type { EventRecord } from '../../lib/events/record.js'
import { outboxCollections } from '../../stores/outbox.js'
import { buildEventsInstance, databaseName, startMongoServer, startRecordingSync } from './fixtures.js'
import { instance, series, standalone, USER } from '../lib/events/fixtures.js'

const NOW = new Date('2026-03-01T00:00:00.000Z')
const OTHER_USER = 'b'.repeat(24)

function plan (before: EventRecord | null, after: EventRecord | null): PersistencePlan {
  const result = planTransition(before, after, NOW)
  if (!result.ok) throw new Error(result.reason)
  return result.plan
}

for (const replicaSet of [true, false]) {
  test(`event store on a ${replicaSet ? 'replica set' : 'single server'}`, async (t) => {
    const mongo = await startMongoServer(t, { replicaSet })
    const sync = await startRecordingSync(t)
    const { app } = await buildEventsInstance(t, { mongoUri: mongo.uri(databaseName()), syncUrl: sync.url, start: false })
    // The sender stays idle here: these tests look at what is stored, not at delivery.
    await app.ready()
    await app.outbox.stop()
    const store = app.eventStore
    const { records: outboxRecords } = outboxCollections(app.mongo.db)
    t.equal(app.mongo.transactional, replicaSet, 'transactions exactly when the deployment has them')

    const indexes = (await store.events.indexes()).map((index) => index.name).sort()
    t.same(indexes, ['_id_', 'user_provider_event_unique', 'user_search_words', 'user_series_end', 'user_series_occurrence', 'user_start', 'user_waiting_for_series'])

    await t.test('a write stores the events and their reports together', async (t) => {
      const single = standalone({ startDate: '2026-03-03T10:00:00Z', endDate: '2026-03-03T11:00:00Z' })
      const base = series({ _id: 'a'.repeat(24), recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=4'] } })
      const plans = [plan(null, single), plan(null, base)]
      await store.apply(USER, plans, eventChangeEntries(plans), NOW)

      t.same(await store.findById(USER, single._id), single, 'read back without storage fields')
      t.equal(await store.findById(OTHER_USER, single._id), null, 'another user does not see it')
      const raw = await store.events.findOne({ user: USER, eventId: base._id })
      t.same(raw?.startsAt, new Date('2026-03-02T08:00:00Z'))
      t.same(raw?.seriesEndsAt, new Date('2026-03-23T09:00:00Z'))
      const outbox = await outboxRecords.find({ user: USER }).sort({ seq: 1 }).toArray()
      t.same(outbox.map((record) => record.entry.kind === 'eventChange' && [record.entry.report.eventId, record.entry.report.operation, record.seq]), [[single._id, 'create', 0], [base._id, 'create', 1]])
      t.not(outbox[0]?.idempotencyKey, outbox[1]?.idempotencyKey)
    })

    await t.test('range reads expand the series and leave out cancelled occurrences', async (t) => {
      const base = await store.findById(USER, 'a'.repeat(24)) as EventRecord
      const second = occurrenceAt(base, '20260309T080000Z') as EventRecord
      const cancel = planOccurrenceDelete(base, { stored: null, expanded: { ...second, _id: 'c'.repeat(24) } }, 'this', NOW)
      if (!cancel.ok) throw new Error(cancel.reason)
      await store.apply(USER, [cancel.plan], [], NOW)
      const range = await store.findRange(USER, new Date('2026-03-01T00:00:00Z'), new Date('2026-04-01T00:00:00Z'))
      t.same(range.map((event) => event.startDate), [
        '2026-03-02T09:00:00+01:00', '2026-03-03T10:00:00Z', '2026-03-16T09:00:00+01:00', '2026-03-23T09:00:00+01:00'
      ])
      t.same(await store.findRange(OTHER_USER, new Date('2026-03-01T00:00:00Z'), new Date('2026-04-01T00:00:00Z')), [])
      t.same(await store.findRange(USER, new Date('2026-03-24T00:00:00Z'), new Date('2026-04-01T00:00:00Z')), [], 'the series has ended')
      const edit = await store.findOccurrenceEdit(USER, base._id, new Date('2026-03-09T08:00:00Z'))
      t.equal(edit?.status, 'cancelled')
    })

    await t.test('this and following removes later edits and ends the series', async (t) => {
      const base = await store.findById(USER, 'a'.repeat(24)) as EventRecord
      const moved = instance(base, {
        _id: 'd'.repeat(24),
        originalStartDate: '2026-03-23T09:00:00+01:00',
        startDate: '2026-03-24T09:00:00+01:00',
        endDate: '2026-03-24T10:00:00+01:00'
      })
      await store.apply(USER, [plan(null, moved)], [], NOW)
      const third = occurrenceAt(base, '20260316T080000Z') as EventRecord
      const cut = planOccurrenceDelete(base, { stored: null, expanded: third }, 'thisAndFollowing', NOW)
      if (!cut.ok) throw new Error(cut.reason)
      await store.apply(USER, [cut.plan], [], NOW)
      t.equal(await store.findById(USER, moved._id), null, 'the later edit is gone')
      t.equal((await store.findOccurrenceEdit(USER, base._id, new Date('2026-03-09T08:00:00Z')))?.status, 'cancelled', 'the earlier one stays')
      const range = await store.findRange(USER, new Date('2026-03-01T00:00:00Z'), new Date('2026-04-01T00:00:00Z'))
      t.same(range.map((event) => event.startDate), ['2026-03-02T09:00:00+01:00', '2026-03-03T10:00:00Z'])
    })

    await t.test('a failing write', async (t) => {
      const taken = standalone()
      await store.apply(USER, [plan(null, taken)], [], NOW)
      const fresh = standalone()
      const plans = [plan(null, fresh), plan(null, { ...taken, title: 'made twice' })]
      const error = await store.apply(USER, plans, eventChangeEntries(plans), NOW).catch((error: unknown) => error)
      t.ok(error instanceof EventIdTakenError, 'an id the user holds is refused to a second insert')
      t.equal((error as Error & { statusCode: number }).statusCode, 409)
      const reports = async () => await outboxRecords.countDocuments({ user: USER, 'entry.report.eventId': fresh._id })
      if (replicaSet) {
        t.equal(await store.findById(USER, fresh._id), null, 'nothing of the transaction is kept')
        t.equal(await reports(), 0, 'and no report')
      } else {
        t.ok(await store.findById(USER, fresh._id), 'without transactions the writes before the failure stay')
        t.equal(await reports(), 0, 'but their reports are not written')
      }
      t.same(await store.findById(USER, taken._id), taken, 'the stored event is untouched')

      const theirs = { ...taken, user: OTHER_USER, title: 'another user\'s' }
      await store.apply(OTHER_USER, [plan(null, theirs)], [], NOW)
      t.same(await store.findById(OTHER_USER, taken._id), theirs, 'another user may hold the same id')
      t.same(await store.findById(USER, taken._id), taken, 'each reads their own')

      const gone = standalone()
      const replaced = await store.apply(USER, [plan(gone, { ...gone, title: 'x' })], [], NOW).catch((error: unknown) => error)
      t.ok(replaced instanceof EventChangedMeanwhileError, 'replacing a vanished event is a conflict')
    })
  })
}

test('events stored under their id alone are keyed by their owner at start, with their provider identity kept unique', async (t) => {
  const mongo = await startMongoServer(t, { replicaSet: false })
  const sync = await startRecordingSync(t)
  const { app } = await buildEventsInstance(t, { mongoUri: mongo.uri(databaseName()), syncUrl: sync.url, start: false })
  await app.ready()
  await app.outbox.stop()
  const events = app.mongo.db.collection('events')
  // As an earlier version stored them: the id is the document key.
  const own = standalone()
  const imported = standalone({ user: OTHER_USER, title: 'Imported', calendarId: 'cal-1', providerEventId: 'g-1', origin: 'providerImport' })
  const older = [own, imported].map((event) => ({ ...event, ...storageFields(event) }))
  await events.deleteMany({})
  await events.insertMany(older as never[])
  // The store of this app started on an empty collection and noted the keying done; an install of
  // the earlier version has no such note.
  await app.mongo.db.collection(MIGRATIONS_COLLECTION).deleteMany({})

  const restarted = new EventStore(app.mongo, app.outbox)
  await restarted.ensureIndexes()
  t.same(await restarted.findById(USER, own._id), own, 'the own event reads as before')
  t.same(await restarted.findById(OTHER_USER, imported._id), imported, 'so does the imported one')
  t.same((await events.find({}, { projection: { _id: 1, eventId: 1 } }).sort({ eventId: 1 }).toArray()).map((document) => [document._id, document.eventId]).sort(),
    [[`${USER}:${own._id}`, own._id], [`${OTHER_USER}:${imported._id}`, imported._id]].sort(), 'each document once, under its owner\'s key')
  t.ok((await events.indexes()).some((index) => index.name === 'user_provider_event_unique' && index.unique === true), 'the provider index is made again')
  const duplicate = await events.insertOne({ ...older[1], _id: 'elsewhere' } as never).catch((error: unknown) => error)
  t.match(duplicate, { code: 11000 }, 'and holds')

  t.match(await app.mongo.db.collection(MIGRATIONS_COLLECTION).findOne({ _id: 'events-keyed-by-owner' as never }), { doneAt: Date }, 'and notes it done')
  // Another process that started before the note was written runs it again: nothing changes.
  await app.mongo.db.collection(MIGRATIONS_COLLECTION).deleteMany({})
  await restarted.ensureIndexes()
  t.equal(await events.countDocuments(), 2, 'run again, it finds nothing to do')
  t.same(await restarted.findById(USER, own._id), own)
  await events.insertOne({ ...older[0], _id: 'written-by-hand' } as never)
  await restarted.ensureIndexes()
  t.equal(await events.countDocuments({ _id: 'written-by-hand' as never }), 1, 'a later start does not look again')
  t.equal(await events.countDocuments(), 3)
})

test('opening on a server without transactions does not claim them', async (t) => {
  const mongo = await startMongoServer(t, { replicaSet: false })
  const handle = await connectMongo(mongo.uri(databaseName()))
  t.teardown(() => handle.client.close())
  t.equal(handle.transactional, false)
  let ran = false
  await handle.withTransaction(async (session) => {
    ran = true
    t.equal(session, undefined, 'the work runs without a transaction')
  })
  t.ok(ran)
})
