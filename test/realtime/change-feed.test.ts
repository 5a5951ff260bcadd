import tap, { test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import type { ChangeFeedOptions } from '../../services/change-feed-bridge.js'
import { serverMessageCheck, type ServerMessage } from '../../schemas/server-message.js'
import type { InvalidationInput } from '../../sync/lib/change-feed.js'
import { startBrokerApp } from './broker-app.js'
import { FakeSync, fakeSyncSecret } from './fake-sync.js'
import { RawSseReader, eventually } from './sse-reader.js'
import { INTERNAL_TOKEN, SyncService, startSyncService } from './sync-service.js'
import { startDatabase } from '../sync/helper.js'
import { CHANGES_WAIT_MAX_MS } from '../../schemas/sync/index.js'

const userA = '64b7f0c2a1b2c3d4e5f60001'
const userB = '64b7f0c2a1b2c3d4e5f60002'
const conn1 = '64b7f0c2a1b2c3d4e5f6c001'
const at = '2026-11-21T09:00:00.000Z'
const fast: Partial<ChangeFeedOptions> = { pollIntervalMs: 40, joinDelayMs: 5, backoffBaseMs: 20, backoffMaxMs: 160 }

// One database server for the file; each test gets its own Sync service and database on it.
const mongoUri = await startDatabase(tap)

async function startSync (t: Test): Promise<SyncService> {
  return await startSyncService(t, mongoUri)
}

async function startBackend (t: Test, sync: SyncService | FakeSync, realtime: Partial<ChangeFeedOptions> = fast) {
  const internalAuthToken = sync instanceof FakeSync ? fakeSyncSecret : INTERNAL_TOKEN
  return await startBrokerApp(t, { realtime, sync: { url: sync.url, internalAuthToken } })
}

async function append (sync: SyncService, userId: string, ...items: InvalidationInput[]): Promise<void> {
  await sync.running.syncFeed.append(userId, ...items)
}

async function openStream (t: Test, url: string, userId: string): Promise<RawSseReader> {
  const reader = await RawSseReader.open(url, { 'x-user': userId })
  t.teardown(() => reader.close())
  return reader
}

test('polling starts with the first stream of a user and stops after the last one closes', async (t) => {
  const sync = await startSync(t)
  const { app, url } = await startBackend(t, sync)
  await sleep(200)
  t.equal(sync.batchRequests.length, 0, 'no stream, no polling')

  const first = await openStream(t, url, userA)
  const ready = await app.changeFeed.ready(userA, 5000)
  t.equal(ready, true, 'the user is followed once Sync gave a watermark')
  t.same(sync.batchRequests[0], [{ userId: userA, cursor: null }], 'the first request asks for a watermark')
  const second = await openStream(t, url, userA)
  await eventually(() => sync.batchRequests.length >= 4)
  for (const users of sync.batchRequests) {
    t.equal(users.length, 1, 'one entry for the user however many streams it has')
  }
  t.equal(sync.batchRequests.slice(1).every((users) => typeof users[0]?.cursor === 'string'), true, 'later requests carry a cursor')

  first.close()
  const countWhileOneOpen = sync.batchRequests.length
  await eventually(() => sync.batchRequests.length >= countWhileOneOpen + 2)
  second.close()
  await eventually(() => app.sse.streamCount === 0)
  await sleep(80)
  const countAfterLast = sync.batchRequests.length
  await sleep(300)
  t.equal(sync.batchRequests.length, countAfterLast, 'no request after the last stream closed')
  t.equal(app.changeFeed.userCount, 0)

  await openStream(t, url, userA)
  await eventually(() => sync.batchRequests.length > countAfterLast)
  t.same(sync.batchRequests[countAfterLast], [{ userId: userA, cursor: null }], 'polling resumes when a stream opens again')
})

test('an invalidation reaches every stream of its user and nothing reaches another user', async (t) => {
  const sync = await startSync(t)
  const { app, url } = await startBackend(t, sync)
  const a1 = await openStream(t, url, userA)
  const a2 = await openStream(t, url, userA)
  const b1 = await openStream(t, url, userB)
  t.equal(await app.changeFeed.ready(userA, 5000), true)
  t.equal(await app.changeFeed.ready(userB, 5000), true)

  await append(sync, userA, { kind: 'event', eventId: 'event-1' })
  const expected: ServerMessage = { type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['event-1'] }
  t.same(await a1.untilMessages(1), [expected])
  t.same(await a2.untilMessages(1), [expected])

  // B's stream is older than the invalidation; a marker published to B after it proves nothing came first.
  const marker: ServerMessage = { type: 'calendarsChanged', reasons: ['calendar'], refetchAll: true }
  const requestsBefore = sync.batchRequests.length
  await eventually(() => sync.batchRequests.length >= requestsBefore + 2)
  app.sse.publish(userB, marker)
  t.same(await b1.untilMessages(1), [marker])
  t.same(a1.messages(), [expected], 'the same invalidation is not published twice')
})

test('idle pulls publish nothing', async (t) => {
  const sync = await startSync(t)
  const { app, url } = await startBackend(t, sync)
  const reader = await openStream(t, url, userA)
  await app.changeFeed.ready(userA, 5000)
  await eventually(() => sync.batchRequests.length >= 6)
  t.equal(reader.messages().length, 0)
  t.equal(reader.text, 'retry: 5000\n\n', 'not a byte after the retry line')
})

test('a revoked connection and a finished import reach the stream as the translation table says', async (t) => {
  const sync = await startSync(t)
  const { app, url } = await startBackend(t, sync)
  const reader = await openStream(t, url, userA)
  await app.changeFeed.ready(userA, 5000)

  await append(sync, userA, { kind: 'connection', connectionId: conn1, state: 'actionRequired', reason: 'authorizationRevoked' })
  const revoked = await reader.untilMessages(4)
  t.same(revoked.map((message) => {
    const { type, code } = message as { type: string, code?: string }
    return code === undefined ? type : `${type}:${code}`
  }), ['calendarsChanged', 'eventsChanged', 'syncStatusChanged:CONNECTION_REVOKED', 'syncStatusChanged:GOOGLE_REVOKED'])
  t.match(revoked[2], { connectionId: conn1, status: 'attention', retryable: false })
  t.match(revoked[3], { connectionId: conn1, status: 'attention', retryable: false, aliasOf: 'CONNECTION_REVOKED' })

  await append(sync, userA, { kind: 'importProgress', connectionId: conn1, phase: 'completed', operation: 'repair', counts: { calendarsDone: 2, calendarsTotal: 2, eventsImported: 7 } })
  const imported = await reader.untilMessages(5)
  t.same(imported[4], { type: 'importCompleted', connectionId: conn1, operation: 'repair', counts: { calendarsDone: 2, calendarsTotal: 2, eventsImported: 7 } })
  for (const message of imported) t.ok(serverMessageCheck.Check(message))
})

test('a cursor Sync no longer accepts turns into a broad invalidation', async (t) => {
  // The real service only expires cursors after days; this server forgets the user's history at once.
  const sync = new FakeSync()
  await sync.start()
  t.teardown(() => sync.stop())
  const { app, url } = await startBackend(t, sync)
  const reader = await openStream(t, url, userA)
  await app.changeFeed.ready(userA, 5000)
  sync.append(userA, { kind: 'event', at, eventId: 'e1' })
  await reader.untilMessages(1)

  sync.feeds.set(userA, [])
  const resynced = await reader.untilMessages(3)
  t.same(resynced.slice(1), [
    { type: 'calendarsChanged', reasons: ['resync'], refetchAll: true },
    { type: 'eventsChanged', reasons: ['resync'], refetchAll: true }
  ])
  const requests = sync.batchRequests.length
  await eventually(() => sync.batchRequests.length >= requests + 3)
  t.equal(reader.messages().length, 3, 'the new watermark is used from then on: the resync is not repeated')
  t.equal(sync.unauthorized, 0, 'every request was signed')
})

test('one request per tick covers every user with a stream, in batches of the configured size', async (t) => {
  const sync = await startSync(t)
  const { app, url } = await startBackend(t, sync, { ...fast, maxUsersPerRequest: 10 })
  const users = Array.from({ length: 25 }, (_, i) => `64b7f0c2a1b2c3d4e5f7${String(i).padStart(4, '0')}`)
  await Promise.all(users.map(async (userId) => await openStream(t, url, userId)))
  for (const userId of users) t.equal(await app.changeFeed.ready(userId, 5000), true)

  // Sample between ticks: a tick takes milliseconds, the pause between two is long.
  app.changeFeed.configure({ pollIntervalMs: 400 })
  const betweenTicks = async (): Promise<{ ticks: number, requests: number }> => {
    const ticks = app.changeFeed.stats.ticks
    await eventually(() => app.changeFeed.stats.ticks > ticks)
    await sleep(200)
    return { ticks: app.changeFeed.stats.ticks, requests: sync.batchRequests.length }
  }
  const before = await betweenTicks()
  await eventually(() => app.changeFeed.stats.ticks >= before.ticks + 3)
  const after = await betweenTicks()
  const steady = sync.batchRequests.slice(before.requests, after.requests)
  t.equal(steady.length, 3 * (after.ticks - before.ticks), `3 requests per tick (${steady.length} requests over ${after.ticks - before.ticks} ticks)`)
  t.equal(steady.reduce((sum, users) => sum + users.length, 0), 25 * (after.ticks - before.ticks), 'each tick asks for each user once')
  t.equal(steady.every((users) => users.length <= 10), true, 'no request above the batch size')
  t.equal(new Set(steady.flatMap((users) => users.map((user) => user.userId))).size, 25, 'every user is asked for')
  t.equal(steady.every((users) => users.every((user) => user.cursor !== null)), true, 'steady-state requests carry cursors')
})

test('with Sync down the bridge logs, backs off, and recovers when Sync returns', async (t) => {
  const sync = await startSync(t)
  const { app, url, logs } = await startBackend(t, sync)
  const reader = await openStream(t, url, userA)
  t.equal(await app.changeFeed.ready(userA, 5000), true)

  await sync.stop()
  await eventually(() => logs.find('change feed poll failed; retrying with backoff').length >= 4)
  const failures = logs.find('change feed poll failed; retrying with backoff').slice(0, 4)
  const delays = failures.map((line) => Number(line.retryInMs))
  t.same(failures.map((line) => line.consecutiveFailures), [1, 2, 3, 4], 'every failure is logged with its count')
  // Full jitter (lib/backoff.ts): anywhere from 1 ms up to a ceiling that doubles per failure.
  t.ok(delays.every((delay, i) => delay >= 1 && delay <= Math.min(160, 20 * 2 ** i)), `delays stay under a doubling ceiling: ${delays.join(', ')}`)
  t.equal(failures[0]?.level, 50, 'logged as an error')

  await sync.start()
  await append(sync, userA, { kind: 'event', eventId: 'written-while-down' })
  await eventually(() => logs.find('change feed reads Sync again').length === 1, 5000, 'recovery')
  t.same(await reader.untilMessages(1), [{ type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['written-while-down'] }],
    'the cursor held through the outage still works')
  t.equal(app.changeFeed.stats.consecutiveFailures, 0)
})

test('two backend processes over one Sync each deliver to their own stream of the same user', async (t) => {
  const sync = await startSync(t)
  const one = await startBackend(t, sync)
  const two = await startBackend(t, sync)
  const onOne = await openStream(t, one.url, userA)
  const onTwo = await openStream(t, two.url, userA)
  t.equal(await one.app.changeFeed.ready(userA, 5000), true)
  t.equal(await two.app.changeFeed.ready(userA, 5000), true)

  await append(sync, userA, { kind: 'calendar', connectionId: conn1, calendarId: 'work' })
  const expected = [
    { type: 'calendarsChanged', reasons: ['calendar'], refetchAll: false, calendarIds: ['work'] },
    { type: 'eventsChanged', reasons: ['calendar'], refetchAll: false, calendarIds: ['work'] }
  ]
  t.same(await onOne.untilMessages(2), expected)
  t.same(await onTwo.untilMessages(2), expected)
})

test('a user id Sync would refuse is not followed, and everyone else still is', async (t) => {
  const sync = await startSync(t)
  const { app, url, logs } = await startBackend(t, sync)
  const bad = await openStream(t, url, 'not-a-user-id')
  const good = await openStream(t, url, userA)
  t.equal(await app.changeFeed.ready(userA, 5000), true)
  t.equal(await app.changeFeed.ready('not-a-user-id', 100), false)
  t.equal(logs.find('change feed cannot follow a user id that is not a canonical 24-hex id').length, 1)
  await append(sync, userA, { kind: 'event', eventId: 'still-delivered' })
  t.same(await good.untilMessages(1), [{ type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['still-delivered'] }])
  t.equal(sync.batchRequests.every((users) => users.every((user) => user.userId === userA)), true, 'the malformed id never reached Sync')
  t.equal(bad.ended, false, 'its stream stays open for what the backend publishes directly')
})

// Held reads (waitMs): the interval below is Sync's longest hold, so a change that waited for the
// next read instead of ending the held one would take seconds; these take milliseconds.
const held: Partial<ChangeFeedOptions> = { ...fast, pollIntervalMs: CHANGES_WAIT_MAX_MS }
const HALF_HOLD_MS = CHANGES_WAIT_MAX_MS / 2

async function untilHeld (sync: SyncService): Promise<void> {
  await eventually(() => sync.running.syncFeedWaits.waiting === 1, 5000, 'a held read')
}

/** A backend holding its reads of `sync`, with user A's stream open and followed, and a read held. */
async function heldStreamOfA (t: Test, sync: SyncService) {
  const backend = await startBackend(t, sync, held)
  const reader = await openStream(t, backend.url, userA)
  t.equal(await backend.app.changeFeed.ready(userA, 5000), true)
  await untilHeld(sync)
  return { ...backend, reader }
}

test('a change ends the held read and reaches the stream; an idle user is asked for once per interval', async (t) => {
  const sync = await startSync(t)
  const { reader } = await heldStreamOfA(t, sync)

  const started = performance.now()
  await append(sync, userA, { kind: 'event', eventId: 'while-held' })
  t.same(await reader.untilMessages(1, HALF_HOLD_MS), [{ type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['while-held'] }],
    `on the stream ${Math.round(performance.now() - started)} ms after the append`)

  await untilHeld(sync)
  const requests = sync.batchRequests.length
  await sleep(1500)
  t.equal(sync.batchRequests.length, requests, 'no request while the read is held')
  t.equal(sync.batchWaits.at(-1), CHANGES_WAIT_MAX_MS, 'the read asks Sync to hold it for the interval')
  t.equal(sync.batchWaits[0], 0, 'the first read, for the watermark, is not held')
})

test('the first stream of an idle process hears a change at once, not an interval after it opened', async (t) => {
  // A tab back from a provider's consent opens its stream just as the import begins.
  const sync = await startSync(t)
  const { app, url } = await startBackend(t, sync, held)
  const started = performance.now()
  const reader = await openStream(t, url, userA)
  t.equal(await app.changeFeed.ready(userA, 5000), true)
  await append(sync, userA, { kind: 'calendar', connectionId: conn1, calendarId: 'primary' })
  t.same((await reader.untilMessages(2, HALF_HOLD_MS)).map((message) => (message as { type: string }).type), ['calendarsChanged', 'eventsChanged'],
    `on the stream ${Math.round(performance.now() - started)} ms after it opened`)
  await untilHeld(sync)
  t.equal(sync.batchWaits.at(-1), CHANGES_WAIT_MAX_MS, 'then the reads are held for the interval')
})

test('a user whose stream opens while a read is held is in the next read at once', async (t) => {
  const sync = await startSync(t)
  const { app, url } = await heldStreamOfA(t, sync)

  const started = performance.now()
  const late = await openStream(t, url, userB)
  t.equal(await app.changeFeed.ready(userB, 5000), true)
  await append(sync, userB, { kind: 'event', eventId: 'joined-late' })
  t.same(await late.untilMessages(1, HALF_HOLD_MS), [{ type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['joined-late'] }],
    `on the new stream ${Math.round(performance.now() - started)} ms after it opened`)
  t.equal(app.changeFeed.stats.failedRequests, 0, 'the read given up on is not counted as a failure')
})

test('an append by a second Sync process over the same database ends the read held by the first', async (t) => {
  const sync = await startSync(t)
  const other = await startSyncService(t, mongoUri, sync.database)
  const { reader } = await heldStreamOfA(t, sync)
  const started = performance.now()
  await append(other, userA, { kind: 'event', eventId: 'from-the-other' })
  t.same(await reader.untilMessages(1, HALF_HOLD_MS), [{ type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['from-the-other'] }],
    `on the stream ${Math.round(performance.now() - started)} ms after the other process appended (${sync.running.syncFeedWaits.mode})`)
})

test('a backend that closes gives up its held read instead of waiting for it', async (t) => {
  const sync = await startSync(t)
  const { app } = await heldStreamOfA(t, sync)
  const started = performance.now()
  await app.changeFeed.stop()
  t.ok(performance.now() - started < HALF_HOLD_MS, `stopped in ${Math.round(performance.now() - started)} ms`)
  await eventually(() => sync.running.syncFeedWaits.waiting === 0, HALF_HOLD_MS, 'Sync released the read')
})
