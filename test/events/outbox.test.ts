import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { ObjectId } from 'mongodb'
import { isDuplicateKeyError } from '../../lib/mongo-errors.js'
import { Outbox, deliverThrough } from '../../plugins/app/outbox.js'
import { SyncClient } from '../../lib/sync-client.js'
import { eventChangeEntries, outboxRecordsFor } from '../../lib/events/outbox.js'
import { outboxRecords } from '../../lib/outbox.js'
import type { PersistencePlan } from '../../lib/events/transition.js'
import { buildEventsInstance, databaseName, startMongoServer, startRecordingSync } from './fixtures.js'
import { USER } from '../lib/events/fixtures.js'

const OTHER_USER = 'b'.repeat(24)

function reportPlans (...eventIds: string[]): PersistencePlan[] {
  return eventIds.map((eventId) => ({ writes: [], report: { eventId, operation: 'update' as const } }))
}

test('the sender', async (t) => {
  const mongo = await startMongoServer(t, { replicaSet: true })
  const sync = await startRecordingSync(t)
  const { app, log } = await buildEventsInstance(t, { mongoUri: mongo.uri(databaseName()), syncUrl: sync.url })
  await app.outbox.stop()
  const { collection, leases } = Outbox.collections(app.mongo.db)
  let now = new Date('2026-03-01T00:00:00.000Z')
  const client = new SyncClient({ baseUrl: sync.url, internalAuthToken: 'x'.repeat(32), timeoutMs: 2000 })
  t.teardown(() => client.close())
  const sender = new Outbox({
    collection,
    leases,
    deliver: deliverThrough(client),
    log: app.log,
    pollIntervalMs: 60_000,
    backoff: { baseMs: 1000, capMs: 8000 },
    now: () => now,
    random: () => 1
  })

  await t.test('delivers one user\'s reports in the order they were written', async (t) => {
    sync.applied.length = 0
    await collection.insertMany(outboxRecordsFor(USER, reportPlans('e1', 'e2'), now))
    now = new Date(now.getTime() + 1000)
    await collection.insertMany(outboxRecordsFor(USER, reportPlans('e3'), now))
    await sender.flush(USER)
    t.same(sync.applied.map((report) => report.eventId), ['e1', 'e2', 'e3'])
    t.equal(await sender.pending(USER), 0)
  })

  await t.test('keeps reports while Sync is down, in order, and retries with backoff', async (t) => {
    sync.applied.length = 0
    sync.attempts.length = 0
    sync.behaviour = 'unavailable'
    await collection.insertMany(outboxRecordsFor(USER, reportPlans('f1', 'f2'), now))
    await collection.insertMany(outboxRecordsFor(OTHER_USER, reportPlans('g1'), now))
    await sender.flushDue()
    t.same(sync.attempts.map((report) => report.eventId), ['f1', 'g1'], 'a failing report holds back the later ones of its user only')
    const held = await collection.findOne({ 'entry.report.eventId': 'f1' })
    t.equal(held?.attempts, 1)
    t.same(held?.nextAttemptAt, new Date(now.getTime() + 1000))
    t.match(held?.lastError, /502/)
    t.ok(log.lines().some((line) => line.msg === 'Sync did not take an event change report; will retry' && line.eventId === 'f1'))

    await sender.flushDue()
    t.equal(sync.attempts.length, 2, 'nothing is retried before it is due')

    sync.behaviour = 'maintenance'
    now = new Date(now.getTime() + 1000)
    await sender.flushDue()
    t.equal((await collection.findOne({ 'entry.report.eventId': 'f1' }))?.attempts, 2, 'maintenance is waited out too')
    t.same((await collection.findOne({ 'entry.report.eventId': 'f1' }))?.nextAttemptAt, new Date(now.getTime() + 2000))

    sync.behaviour = 'accept'
    now = new Date(now.getTime() + 2000)
    await sender.flushDue()
    t.same(sync.applied.map((report) => report.eventId).sort(), ['f1', 'f2', 'g1'])
    t.same(sync.applied.filter((report) => report.userId === USER).map((report) => report.eventId), ['f1', 'f2'])
    t.equal(await sender.pending(), 0)
    const keys = sync.attempts.filter((report) => report.eventId === 'f1').map((report) => report.idempotencyKey)
    t.equal(new Set(keys).size, 1, 'every retry carries the same idempotency key')
  })

  await t.test('a report Sync refuses for good is dropped and does not block the next', async (t) => {
    sync.applied.length = 0
    sync.behaviour = 'revoked'
    await collection.insertMany(outboxRecordsFor(USER, reportPlans('h1'), now))
    await sender.flush(USER)
    t.equal(await sender.pending(USER), 0)
    t.ok(log.lines().some((line) => line.msg === 'Sync refused an event change report; dropped' && line.code === 'CONNECTION_REVOKED'))
    sync.behaviour = 'accept'
  })

  await t.test('one process at a time sends a user\'s reports', async (t) => {
    sync.applied.length = 0
    await collection.insertMany(outboxRecordsFor(USER, reportPlans('j1', 'j2'), now))
    // Another backend process is delivering this user's reports right now.
    await leases.insertOne({ _id: USER, holder: 'another-process', until: new Date(now.getTime() + 30_000) })
    await sender.flush(USER)
    t.same(sync.applied, [], 'nothing is sent while the other process holds the claim')
    t.equal(await sender.pending(USER), 2)
    now = new Date(now.getTime() + 30_000)
    await sender.flush(USER)
    t.same(sync.applied.map((report) => report.eventId), ['j1', 'j2'], 'a lapsed claim is taken over')
    t.equal(await leases.countDocuments({ _id: USER }), 0, 'the claim is given up after the run')
  })

  await t.test('every kind of entry keeps the user\'s order, waits out Sync being down, and is refused for good alone', async (t) => {
    sync.deliveries.length = 0
    sync.behaviour = 'unavailable'
    await collection.insertMany(outboxRecords(USER, [
      { kind: 'eventChange', report: { eventId: 'k1', operation: 'update' } },
      { kind: 'watchStop' },
      { kind: 'restartSync' }
    ], now))
    await collection.insertMany(outboxRecords(OTHER_USER, [{ kind: 'watchStop' }], now))
    await sender.flushDue()
    t.same(sync.deliveries, [], 'nothing is taken while Sync is down')
    t.equal((await collection.findOne({ user: OTHER_USER }))?.attempts, 1, 'a watch stop is retried like a report')
    t.ok(log.lines().some((line) => line.msg === 'sign-out: Sync did not stop the user\'s watches; will retry' && line.userId === OTHER_USER))

    sync.behaviour = 'accept'
    now = new Date(now.getTime() + 10_000)
    await sender.flushDue()
    t.same(sync.deliveries.filter((delivery) => delivery.userId === USER).map((delivery) => delivery.what), ['eventChange:k1', 'watchStop', 'restartSync'], 'in the order they were written')
    t.same(sync.deliveries.filter((delivery) => delivery.userId === OTHER_USER).map((delivery) => delivery.what), ['watchStop'])
    t.equal(await sender.pending(), 0)

    sync.behaviour = 'revoked'
    await collection.insertMany(outboxRecords(USER, [{ kind: 'watchStop' }, { kind: 'restartSync' }], now))
    await sender.flush(USER)
    t.equal(await sender.pending(USER), 0, 'refused for good: dropped, and the next entry is not blocked')
    t.ok(log.lines().some((line) => line.msg === 'sign-out: Sync refused to stop the user\'s watches; dropped' && line.code === 'CONNECTION_REVOKED'))
    t.ok(log.lines().some((line) => line.msg === 'Sync refused a sync restart; dropped'))
    sync.behaviour = 'accept'
  })

  await t.test('an entry is stored once per idempotency key', async (t) => {
    const [record] = outboxRecords(USER, [{ kind: 'restartSync' }], now)
    if (record === undefined) throw new Error('no record')
    await collection.insertOne(record)
    const again = await collection.insertOne({ ...record, _id: new ObjectId() }).catch((error: unknown) => error)
    t.ok(isDuplicateKeyError(again), 'the same key cannot be stored twice')
    await collection.deleteMany({ user: USER })
  })

  await t.test('one process at a time sends a user\'s watch stops too', async (t) => {
    sync.deliveries.length = 0
    await collection.insertMany(outboxRecords(USER, [{ kind: 'watchStop' }], now))
    await leases.insertOne({ _id: USER, holder: 'another-process', until: new Date(now.getTime() + 30_000) })
    await sender.flush(USER)
    t.same(sync.deliveries, [], 'nothing is sent while the other process holds the claim')
    now = new Date(now.getTime() + 30_000)
    await sender.flush(USER)
    t.same(sync.deliveries.map((delivery) => delivery.what), ['watchStop'], 'a lapsed claim is taken over')
  })

  await t.test('an unreachable Sync is retried like an answer of 5xx', async (t) => {
    sync.applied.length = 0
    const down = new SyncClient({ baseUrl: 'http://127.0.0.1:9', internalAuthToken: 'x'.repeat(32), timeoutMs: 1000 })
    t.teardown(() => down.close())
    const unreachable = new Outbox({
      collection, leases, deliver: deliverThrough(down), log: app.log, pollIntervalMs: 60_000, backoff: { baseMs: 1000, capMs: 8000 }, now: () => now
    })
    await collection.insertMany(outboxRecordsFor(USER, reportPlans('i1'), now))
    await unreachable.flush(USER)
    t.equal((await collection.findOne({ 'entry.report.eventId': 'i1' }))?.attempts, 1)
    now = new Date(now.getTime() + 10_000)
    await sender.flush(USER)
    t.same(sync.applied.map((report) => report.eventId), ['i1'])
  })
})

test('reports written while Sync is down arrive once after a backend restart', async (t) => {
  const mongo = await startMongoServer(t, { replicaSet: true })
  const database = mongo.uri(databaseName())
  const first = await buildEventsInstance(t, { mongoUri: database, syncUrl: 'http://127.0.0.1:9' })
  const plans = reportPlans('r1', 'r2', 'r3')
  for (const userId of [USER, OTHER_USER]) {
    await first.app.eventStore.apply(userId, plans, eventChangeEntries(plans), new Date())
    await first.app.outbox.add(userId, [{ kind: 'watchStop' }, { kind: 'restartSync' }])
    await first.app.outbox.flush(userId)
  }
  t.equal(await first.app.outbox.pending(), 10, 'all entries wait in the outbox')
  await first.app.close()

  const sync = await startRecordingSync(t)
  const second = await buildEventsInstance(t, { mongoUri: database, syncUrl: sync.url })
  // The failed attempts before the restart set a retry time within the first backoff step.
  await waitUntil(async () => await second.app.outbox.pending() === 0, 'the outbox to drain')
  t.equal(sync.applied.length, 6)
  t.equal(sync.attempts.length, 6, 'each report was sent exactly once')
  for (const userId of [USER, OTHER_USER]) {
    t.same(sync.deliveries.filter((delivery) => delivery.userId === userId).map((delivery) => delivery.what),
      ['eventChange:r1', 'eventChange:r2', 'eventChange:r3', 'watchStop', 'restartSync'], 'in order, each once')
  }
})
