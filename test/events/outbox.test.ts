import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { ObjectId } from 'mongodb'
import { isDuplicateKeyError } from '../../stores/database.js'
import { Outbox, deliverThrough, type DeliverEntry, type OpenOutboxCredential } from '../../services/outbox.js'
import { outboxCollections, OutboxStore } from '../../stores/outbox.js'
import { SyncClient } from '../../clients/sync.js'
import { createCredentialCipher, outboxCredentialBinding } from '../../lib/credential-cipher.js'
import { outboxRecordsFor } from '../../lib/events/change-reports.js'
import { outboxRecords, type NewOutboxEntry, type OutboxEntryKind } from '../../lib/outbox.js'
import type { PersistencePlan } from '../../lib/events/transition.js'
import { buildEventsInstance, databaseName, startMongoServer, startRecordingSync } from './fixtures.js'
import { USER } from '../lib/events/fixtures.js'

const OTHER_USER = 'b'.repeat(24)

const CREDENTIAL_KEY = randomBytes(32).toString('base64')
const cipher = createCredentialCipher(CREDENTIAL_KEY)
const openCredential: OpenOutboxCredential = (sealed, userId) => cipher.open(sealed, outboxCredentialBinding(userId))

interface KindCase {
  /** The entry as a writer states it; `label` tells entries of the kind apart where the kind carries anything. */
  entry: (userId: string, label: string) => NewOutboxEntry
  /** How the recording Sync lists the delivery (test/events/fixtures.ts). */
  delivered: (label: string) => string
  /**
   * The kind carries its idempotency key to Sync, which applies a repeat once. The kinds that do not
   * are idempotent by nature (a second stop finds no watch, a second restart joins the queued pull;
   * test/sync/internal-routes.test.ts), so a repeat is delivered again and harmless.
   */
  sendsKey: boolean
}

// A Record over every kind: a fifth kind of entry does not compile until it has a row here, and
// then every property tested over KIND_NAMES below is tested for it too.
const KINDS: Record<OutboxEntryKind, KindCase> = {
  eventChange: {
    entry: (_userId, label) => ({ kind: 'eventChange', report: { eventId: label, operation: 'update' } }),
    delivered: (label) => `eventChange:${label}`,
    sendsKey: true
  },
  watchStop: { entry: () => ({ kind: 'watchStop' }), delivered: () => 'watchStop', sendsKey: false },
  restartSync: { entry: () => ({ kind: 'restartSync' }), delivered: () => 'restartSync', sendsKey: false },
  credentialHandOver: {
    entry: (userId, label) => ({
      kind: 'credentialHandOver',
      handOver: { provider: 'google', providerAccountId: label, sealedRefreshToken: cipher.seal(`refresh-${label}`, outboxCredentialBinding(userId)), scopes: ['openid'], mode: 'SIGNIN_INCREMENTAL' }
    }),
    delivered: (label) => `credentialHandOver:${label}`,
    sendsKey: true
  }
}
const KIND_NAMES = Object.keys(KINDS) as OutboxEntryKind[]

/** An event change around the entry under test, to see where in the user's order it was sent. */
function marker (label: string): NewOutboxEntry {
  return { kind: 'eventChange', report: { eventId: label, operation: 'update' } }
}

function reportPlans (...eventIds: string[]): PersistencePlan[] {
  return eventIds.map((eventId) => ({ writes: [], report: { eventId, operation: 'update' as const } }))
}

test('the sender', async (t) => {
  const mongo = await startMongoServer(t, { replicaSet: true })
  const sync = await startRecordingSync(t)
  const { app, log } = await buildEventsInstance(t, { mongoUri: mongo.uri(databaseName()), syncUrl: sync.url })
  await app.outbox.stop()
  const { records: collection, leases } = outboxCollections(app.mongo.db)
  let now = new Date('2026-03-01T00:00:00.000Z')
  const client = new SyncClient({ baseUrl: sync.url, internalAuthToken: 'x'.repeat(32), timeoutMs: 2000 })
  t.teardown(() => client.close())
  const sender = new Outbox({
    store: new OutboxStore({ records: collection, leases }),
    deliver: deliverThrough(client, openCredential),
    log: app.log,
    pollIntervalMs: 60_000,
    backoff: { baseMs: 1000, capMs: 8000 },
    now: () => now,
    random: () => 1
  })
  function forgetCalls (): void {
    sync.deliveries.length = 0
    sync.calls.length = 0
  }
  const deliveredTo = (userId: string) => sync.deliveries.filter((delivery) => delivery.userId === userId).map((delivery) => delivery.what)
  const callsOf = (userId: string) => sync.calls.filter((call) => call.userId === userId)

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

  for (const kind of KIND_NAMES) {
    const { entry, delivered, sendsKey } = KINDS[kind]

    await t.test(`${kind}: keeps its place in the user's order and waits out Sync being down without holding up other users`, async (t) => {
      forgetCalls()
      sync.behaviour = 'unavailable'
      await collection.insertMany(outboxRecords(USER, [marker('before'), entry(USER, 'middle')], now))
      await collection.insertMany(outboxRecords(USER, [marker('after')], new Date(now.getTime() + 1)))
      await collection.insertMany(outboxRecords(OTHER_USER, [entry(OTHER_USER, 'other'), marker('other-after')], now))
      await sender.flushDue()
      t.same(callsOf(USER).map((call) => call.kind), ['eventChange'], 'the user\'s later entries wait behind the failing one')
      t.same(callsOf(OTHER_USER).map((call) => call.kind), [kind], 'another user is tried all the same')
      t.equal((await collection.findOne({ user: OTHER_USER, 'entry.kind': kind }, { sort: { seq: 1 } }))?.attempts, 1, 'kept for a retry')
      t.ok(log.lines().some((line) => line.kind === kind && line.userId === OTHER_USER && typeof line.retryInMs === 'number'), 'the retry is logged with its kind')

      sync.behaviour = 'accept'
      now = new Date(now.getTime() + 10_000)
      await sender.flushDue()
      t.same(deliveredTo(USER), ['eventChange:before', delivered('middle'), 'eventChange:after'], 'in the order they were written')
      t.same(deliveredTo(OTHER_USER), [delivered('other'), 'eventChange:other-after'])
      t.equal(await sender.pending(), 0)
    })

    await t.test(`${kind}: refused for good, it is dropped and does not block the next entry`, async (t) => {
      forgetCalls()
      sync.behaviour = 'revoked'
      await collection.insertMany(outboxRecords(USER, [entry(USER, 'refused'), marker('next')], now))
      await sender.flush(USER)
      t.same(callsOf(USER).map((call) => call.kind), [kind, 'eventChange'])
      t.equal(await sender.pending(USER), 0)
      t.ok(log.lines().some((line) => line.kind === kind && line.code === 'CONNECTION_REVOKED'), 'the refusal is logged with its kind')
      sync.behaviour = 'accept'
    })

    await t.test(`${kind}: every retry carries the key chosen when it was stored`, async (t) => {
      forgetCalls()
      const [record] = outboxRecords(USER, [entry(USER, 'retried')], now)
      if (record === undefined) throw new Error('no record')
      await collection.insertOne(record)
      for (const behaviour of ['unavailable', 'maintenance', 'accept'] as const) {
        sync.behaviour = behaviour
        await sender.flush(USER)
        if (behaviour !== 'accept') t.equal((await collection.findOne({ _id: record._id }))?.idempotencyKey, record.idempotencyKey, `still the stored key after Sync was ${behaviour}`)
        now = new Date(now.getTime() + 10_000)
      }
      t.equal(await sender.pending(USER), 0)
      t.same(callsOf(USER).map((call) => call.idempotencyKey), [1, 2, 3].map(() => sendsKey ? record.idempotencyKey : null),
        sendsKey ? 'three attempts, one key: the one stored' : 'three attempts; the kind carries no key')
      t.same(deliveredTo(USER), [delivered('retried')])
    })

    await t.test(`${kind}: the same key cannot be stored twice`, async (t) => {
      const [record] = outboxRecords(USER, [entry(USER, 'stored-once')], now)
      if (record === undefined) throw new Error('no record')
      await collection.insertOne(record)
      const again = await collection.insertOne({ ...record, _id: new ObjectId() }).catch((error: unknown) => error)
      t.ok(isDuplicateKeyError(again))
      await collection.deleteMany({ user: USER })
    })

    await t.test(`${kind}: one process at a time sends the user's entries, and a crashed holder's lease lapses`, async (t) => {
      forgetCalls()
      const deliver = deliverThrough(client, openCredential)
      let release = (): void => {}
      const released = new Promise<void>((resolve) => { release = resolve })
      let entered = (): void => {}
      const sending = new Promise<void>((resolve) => { entered = resolve })
      // The first process is caught mid-delivery, holding the user's lease.
      const held: DeliverEntry = async (userId, entry) => {
        entered()
        await released
        await deliver(userId, entry)
      }
      const backendProcess = (deliverEntry: DeliverEntry) => new Outbox({
        store: new OutboxStore({ records: collection, leases }), deliver: deliverEntry, log: app.log, pollIntervalMs: 60_000, backoff: { baseMs: 1000, capMs: 8000 }, now: () => now
      })
      const first = backendProcess(held)
      const second = backendProcess(deliver)
      await collection.insertMany(outboxRecords(USER, [entry(USER, 'leased'), marker('leased-after')], now))
      const firstRun = first.flush(USER)
      await sending
      await second.flush(USER)
      t.same(callsOf(USER), [], 'the second process sends nothing while the first holds the lease')
      t.equal(await second.pending(USER), 2)
      release()
      await firstRun
      t.same(deliveredTo(USER), [delivered('leased'), 'eventChange:leased-after'], 'the holder sends them all, in order')
      t.equal(await leases.countDocuments({ _id: USER }), 0, 'the lease is given up after the run')

      forgetCalls()
      await collection.insertMany(outboxRecords(USER, [entry(USER, 'taken-over')], now))
      await leases.insertOne({ _id: USER, holder: 'a-crashed-process', until: new Date(now.getTime() + 30_000) })
      await second.flush(USER)
      t.same(callsOf(USER), [], 'nothing is sent under a live lease of another process')
      now = new Date(now.getTime() + 30_000)
      await second.flush(USER)
      t.same(deliveredTo(USER), [delivered('taken-over')], 'a lapsed lease is taken over')
      t.equal(await leases.countDocuments({ _id: USER }), 0)
    })
  }

  await t.test('the claim is renewed while a delivery lasts, ends the run once lost, and a failed renewal is logged', async (t) => {
    const LEASE_MS = 300
    const deliver = deliverThrough(client, openCredential)
    // Real time here: the renewal runs on a timer.
    const backendProcess = (deliverEntry: DeliverEntry, leaseCollection = leases) => new Outbox({
      store: new OutboxStore({ records: collection, leases: leaseCollection }), deliver: deliverEntry, log: app.log, pollIntervalMs: 60_000, backoff: { baseMs: 1000, capMs: 8000 }, leaseMs: LEASE_MS
    })
    function gate (): { opened: Promise<void>, open: () => void } {
      let open = (): void => {}
      const opened = new Promise<void>((resolve) => { open = resolve })
      return { opened, open }
    }

    forgetCalls()
    const slowEntered = gate()
    const slow = backendProcess(async (userId, entry) => { slowEntered.open(); await sleep(LEASE_MS * 4); await deliver(userId, entry) })
    await collection.insertMany(outboxRecords(USER, [marker('slow'), marker('slow-after')], new Date()))
    const slowRun = slow.flush(USER)
    await slowEntered.opened
    await sleep(LEASE_MS * 2)
    await backendProcess(deliver).flush(USER)
    t.same(callsOf(USER), [], 'two leases into one delivery, the claim still holds: no other process sends')
    await slowRun
    t.same(deliveredTo(USER), ['eventChange:slow', 'eventChange:slow-after'], 'the holder sends them all, in order')

    forgetCalls()
    const stalledEntered = gate()
    const takenOver = gate()
    const stalled = backendProcess(async (userId, entry) => { stalledEntered.open(); await takenOver.opened; await deliver(userId, entry) })
    await collection.insertMany(outboxRecords(USER, [marker('lost'), marker('lost-after')], new Date()))
    const stalledRun = stalled.flush(USER)
    await stalledEntered.opened
    // This process stalled past its lease and another took the user's entries over.
    await leases.updateOne({ _id: USER }, { $set: { holder: 'another-process', until: new Date(Date.now() + 60_000) } })
    await sleep(LEASE_MS)
    takenOver.open()
    await stalledRun
    t.same(deliveredTo(USER), ['eventChange:lost'], 'the entry in flight completes; the next is left to the new holder')
    t.equal(await leases.countDocuments({ _id: USER, holder: 'another-process' }), 1, 'the new holder\'s claim is not taken back')
    await leases.deleteOne({ _id: USER })
    await backendProcess(deliver).flush(USER)
    t.same(deliveredTo(USER), ['eventChange:lost', 'eventChange:lost-after'])

    forgetCalls()
    // The database refuses renewals (the first update, the claim itself, goes through).
    let updates = 0
    const failingLeases = new Proxy(leases, {
      get (target, property, receiver) {
        if (property === 'updateOne') {
          return async (...args: Parameters<typeof leases.updateOne>) => {
            updates += 1
            if (updates > 1) throw new Error('database away')
            return await target.updateOne(...args)
          }
        }
        const value: unknown = Reflect.get(target, property, receiver)
        return typeof value === 'function' ? value.bind(target) : value
      }
    })
    await collection.insertMany(outboxRecords(USER, [marker('unrenewed')], new Date()))
    await backendProcess(async (userId, entry) => { await sleep(LEASE_MS * 2); await deliver(userId, entry) }, failingLeases).flush(USER)
    t.same(deliveredTo(USER), ['eventChange:unrenewed'], 'the delivery under way completes')
    t.ok(log.lines().some((line) => line.msg === 'outbox lease renewal failed' && line.userId === USER), 'operators see the failed renewal')
  })

  await t.test('an unreachable Sync is retried like an answer of 5xx', async (t) => {
    sync.applied.length = 0
    const down = new SyncClient({ baseUrl: 'http://127.0.0.1:9', internalAuthToken: 'x'.repeat(32), timeoutMs: 1000 })
    t.teardown(() => down.close())
    const unreachable = new Outbox({
      store: new OutboxStore({ records: collection, leases }), deliver: deliverThrough(down), log: app.log, pollIntervalMs: 60_000, backoff: { baseMs: 1000, capMs: 8000 }, now: () => now
    })
    await collection.insertMany(outboxRecordsFor(USER, reportPlans('i1'), now))
    await unreachable.flush(USER)
    t.equal((await collection.findOne({ 'entry.report.eventId': 'i1' }))?.attempts, 1)
    now = new Date(now.getTime() + 10_000)
    await sender.flush(USER)
    t.same(sync.applied.map((report) => report.eventId), ['i1'])
  })
})

test('after a backend restart every kind of entry arrives once, in order; one that was in flight is applied once', async (t) => {
  const mongo = await startMongoServer(t, { replicaSet: true })
  for (const kind of KIND_NAMES) {
    const { entry, delivered, sendsKey } = KINDS[kind]
    await t.test(kind, async (t) => {
      const database = mongo.uri(databaseName())
      const first = await buildEventsInstance(t, { mongoUri: database, syncUrl: 'http://127.0.0.1:9', credentialEncryptionKey: CREDENTIAL_KEY })
      // USER's first entry was in flight when the process died; OTHER_USER's were written while Sync was down.
      await first.app.outbox.add(USER, [entry(USER, 'in-flight'), marker('after')])
      await first.app.outbox.add(OTHER_USER, [marker('before'), entry(OTHER_USER, 'waiting'), marker('after')])
      for (const userId of [USER, OTHER_USER]) await first.app.outbox.flush(userId)
      t.equal(await first.app.outbox.pending(), 5, 'all entries wait in the outbox')
      await first.app.close()

      const sync = await startRecordingSync(t)
      const second = await buildEventsInstance(t, { mongoUri: database, syncUrl: sync.url, credentialEncryptionKey: CREDENTIAL_KEY, start: false })
      // What the first process had sent before it died, without removing the record.
      const inFlight = await outboxCollections(second.app.mongo.db).records.findOne({ user: USER, 'entry.kind': kind }, { sort: { seq: 1 } })
      if (inFlight === null) throw new Error('no entry in flight')
      const client = new SyncClient({ baseUrl: sync.url, internalAuthToken: 'x'.repeat(32), timeoutMs: 2000 })
      t.teardown(() => client.close())
      await deliverThrough(client, openCredential)(USER, inFlight.entry)

      await second.app.ready()
      // The failed attempts before the restart set a retry time within the first backoff step.
      await waitUntil(async () => await second.app.outbox.pending() === 0, 'the outbox to drain')
      const deliveredTo = (userId: string) => sync.deliveries.filter((delivery) => delivery.userId === userId).map((delivery) => delivery.what)
      t.same(deliveredTo(OTHER_USER), ['eventChange:before', delivered('waiting'), 'eventChange:after'], 'in order, each once')
      t.equal(sync.calls.filter((call) => call.userId === OTHER_USER).length, 3, 'nothing that waited was sent twice')
      const [sentBefore, resent, ...rest] = sync.calls.filter((call) => call.userId === USER)
      t.same([sentBefore?.kind, resent?.kind, rest.length], [kind, kind, 1], 'only the entry in flight is sent again')
      t.equal(resent?.idempotencyKey, sentBefore?.idempotencyKey, sendsKey ? 'with the same key' : 'the kind carries no key')
      t.same(deliveredTo(USER), sendsKey
        ? [delivered('in-flight'), 'eventChange:after']
        // Applied twice, harmlessly: Sync's stop and restart are idempotent by nature.
        : [delivered('in-flight'), delivered('in-flight'), 'eventChange:after'], sendsKey ? 'Sync applies the repeat once' : 'a repeat of an idempotent operation')
    })
  }
})
