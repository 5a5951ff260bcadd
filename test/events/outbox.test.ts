import { test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { OutboxSender } from '../../plugins/outbox.js'
import { SyncClient } from '../../lib/sync-client.js'
import { outboxRecordsFor, retryDelay } from '../../lib/events/outbox.js'
import type { PersistencePlan } from '../../lib/events/transition.js'
import { buildEventsInstance, databaseName, startMongoServer, startRecordingSync } from './fixtures.js'
import { USER } from '../lib/events/fixtures.js'

const OTHER_USER = 'b'.repeat(24)

function reportPlans (...eventIds: string[]): PersistencePlan[] {
  return eventIds.map((eventId) => ({ writes: [], report: { eventId, operation: 'update' as const } }))
}

async function waitFor (condition: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    if (await condition()) return
    await sleep(25)
  }
  throw new Error(`gave up waiting for ${what}`)
}

test('backoff grows exponentially with full jitter and a ceiling', async (t) => {
  const policy = { baseDelayMs: 500, maxDelayMs: 60_000 }
  t.equal(retryDelay(0, policy, () => 1), 500)
  t.equal(retryDelay(3, policy, () => 1), 4000)
  t.equal(retryDelay(3, policy, () => 0.5), 2000)
  t.equal(retryDelay(20, policy, () => 1), 60_000)
  t.equal(retryDelay(2, policy, () => 0), 1, 'never zero: a retry is never immediate')
})

test('the sender', async (t) => {
  const mongo = await startMongoServer(t, { replicaSet: true })
  const sync = await startRecordingSync(t)
  const { app, log } = await buildEventsInstance(t, { mongoUri: mongo.uri(databaseName()), syncUrl: sync.url })
  await app.outbox.stop()
  const collection = app.eventStore.outbox
  let now = new Date('2026-03-01T00:00:00.000Z')
  const client = new SyncClient({ baseUrl: sync.url, internalAuthToken: 'x'.repeat(32), timeoutMs: 2000 })
  t.teardown(() => client.close())
  const leases = app.eventStore.outboxLeases
  const sender = new OutboxSender({
    collection,
    leases,
    send: async (report) => await client.reportEventChange(report),
    log: app.log,
    pollIntervalMs: 60_000,
    baseDelayMs: 1000,
    maxDelayMs: 8000,
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
    const held = await collection.findOne({ 'report.eventId': 'f1' })
    t.equal(held?.attempts, 1)
    t.same(held?.nextAttemptAt, new Date(now.getTime() + 1000))
    t.match(held?.lastError, /502/)
    t.ok(log.lines().some((line) => line.msg === 'Sync did not take an event change report; will retry' && line.eventId === 'f1'))

    await sender.flushDue()
    t.equal(sync.attempts.length, 2, 'nothing is retried before it is due')

    sync.behaviour = 'maintenance'
    now = new Date(now.getTime() + 1000)
    await sender.flushDue()
    t.equal((await collection.findOne({ 'report.eventId': 'f1' }))?.attempts, 2, 'maintenance is waited out too')
    t.same((await collection.findOne({ 'report.eventId': 'f1' }))?.nextAttemptAt, new Date(now.getTime() + 2000))

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

  await t.test('an unreachable Sync is retried like an answer of 5xx', async (t) => {
    sync.applied.length = 0
    const down = new SyncClient({ baseUrl: 'http://127.0.0.1:9', internalAuthToken: 'x'.repeat(32), timeoutMs: 1000 })
    t.teardown(() => down.close())
    const unreachable = new OutboxSender({
      collection, leases, send: async (report) => await down.reportEventChange(report), log: app.log, pollIntervalMs: 60_000, baseDelayMs: 1000, maxDelayMs: 8000, now: () => now
    })
    await collection.insertMany(outboxRecordsFor(USER, reportPlans('i1'), now))
    await unreachable.flush(USER)
    t.equal((await collection.findOne({ 'report.eventId': 'i1' }))?.attempts, 1)
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
    await first.app.eventStore.apply(userId, plans, outboxRecordsFor(userId, plans, new Date()))
    await first.app.outbox.flush(userId)
  }
  t.equal(await first.app.outbox.pending(), 6, 'all reports wait in the outbox')
  await first.app.close()

  const sync = await startRecordingSync(t)
  const second = await buildEventsInstance(t, { mongoUri: database, syncUrl: sync.url })
  // The failed attempts before the restart set a retry time within the first backoff step.
  await waitFor(async () => await second.app.outbox.pending() === 0, 'the outbox to drain')
  t.equal(sync.applied.length, 6)
  t.equal(sync.attempts.length, 6, 'each report was sent exactly once')
  for (const userId of [USER, OTHER_USER]) {
    t.same(sync.applied.filter((report) => report.userId === userId).map((report) => report.eventId), ['r1', 'r2', 'r3'])
  }
})
