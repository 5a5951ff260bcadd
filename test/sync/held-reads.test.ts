// Held reads of the batched change feed (waitMs): an all-empty answer waits for the next append of
// one of its users, from this Sync process or another, and nothing else changes about the answer.
import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import type { Test } from 'tap'
import { SyncClient } from '../../clients/sync.js'
import { startMongo } from '../../dev/mongo/index.js'
import { CHANGES_WAIT_MAX_MS, type ChangesPage, type CursorRequest } from '../../schemas/sync/index.js'
import { INTERNAL_TOKEN, buildSyncApp, newUserId, startDatabase, type BuiltSyncApp } from './helper.js'

async function startReplicaSet (t: Test): Promise<string> {
  if (process.env.MONGODB_URI !== undefined) return process.env.MONGODB_URI
  const mongo = await startMongo({ replicaSet: 'rs0' })
  t.teardown(() => mongo.close())
  return mongo.uri
}

async function listening (t: Test, built: BuiltSyncApp): Promise<SyncClient> {
  await built.app.listen({ host: '127.0.0.1', port: 0 })
  const address = built.app.server.address()
  if (address === null || typeof address !== 'object') throw new Error('no port')
  const client = new SyncClient({ baseUrl: `http://127.0.0.1:${address.port}`, internalAuthToken: INTERNAL_TOKEN, now: () => built.clock.now().getTime() })
  t.teardown(() => client.close())
  return client
}

async function watermarks (client: SyncClient, userIds: string[]): Promise<CursorRequest[]> {
  const pages = await client.changesBatch(userIds.map((userId) => ({ userId, cursor: null })))
  return pages.map((page) => ({ userId: page.userId, cursor: page.cursor }))
}

/** The answer and how long it took, in milliseconds. */
async function timed (read: Promise<ChangesPage[]>): Promise<{ pages: ChangesPage[], ms: number }> {
  const started = performance.now()
  const pages = await read
  return { pages, ms: performance.now() - started }
}

async function untilWaiting (built: BuiltSyncApp, count: number): Promise<void> {
  for (let i = 0; i < 500 && built.app.syncFeedWaits.waiting !== count; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  if (built.app.syncFeedWaits.waiting !== count) throw new Error(`expected ${count} held reads, found ${built.app.syncFeedWaits.waiting}`)
}

test('a held read answers when an append of one of its users lands, and after waitMs when none does', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const client = await listening(t, built)
  const [busy, quiet] = [newUserId(), newUserId()]
  const cursors = await watermarks(client, [busy, quiet])

  const idle = await timed(client.changesBatch(cursors, { waitMs: 400 }))
  t.ok(idle.ms >= 390, `nothing landed: answered after the wait (${Math.round(idle.ms)} ms)`)
  t.same(idle.pages.map((page) => page.invalidations), [[], []])
  t.equal(built.app.syncFeedWaits.waiting, 0, 'the held read is released')

  const held = timed(client.changesBatch(cursors, { waitMs: CHANGES_WAIT_MAX_MS }))
  await untilWaiting(built, 1)
  await built.app.syncFeed.append(busy, { kind: 'event', eventId: 'e1' })
  const woken = await held
  t.ok(woken.ms < CHANGES_WAIT_MAX_MS / 2, `answered when the append landed (${Math.round(woken.ms)} ms), not at the deadline`)
  const at = built.clock.now().toISOString()
  t.same(woken.pages.map((page) => page.invalidations), [[{ kind: 'event', eventId: 'e1', at }], []], 'the same pages an immediate read gives')
  t.same(woken.pages, await client.changesBatch(cursors), 'equal to the answer of a read that is not held')
})

test('a write reported by the backend wakes the held read once its transaction commits', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const client = await listening(t, built)
  const userId = newUserId()
  const cursors = await watermarks(client, [userId])
  const held = timed(client.changesBatch(cursors, { waitMs: CHANGES_WAIT_MAX_MS }))
  await untilWaiting(built, 1)
  const eventId = '64b7f0c2a1b2c3d4e5f6e001'
  await client.reportEventChange({ userId, eventId, operation: 'create', idempotencyKey: randomBytes(8).toString('hex') })
  const woken = await held
  t.ok(woken.ms < CHANGES_WAIT_MAX_MS / 2, `answered after the report (${Math.round(woken.ms)} ms)`)
  t.match(woken.pages[0]?.invalidations, [{ kind: 'event', eventId }])
})

// A standalone server offers no change stream, so the held read learns of the other process's
// append by reading the heads; a replica set offers one.
for (const deployment of ['standalone', 'replica set'] as const) {
  test(`an append by another Sync process over the same database wakes the read held here (${deployment})`, async (t) => {
    const serverUri = deployment === 'standalone' ? await startDatabase(t) : await startReplicaSet(t)
    const database = `sync_${randomBytes(4).toString('hex')}`
    const here = await buildSyncApp(t, serverUri, { database })
    const other = await buildSyncApp(t, serverUri, { database })
    const client = await listening(t, here)
    const expectedMode = deployment === 'standalone' ? 'poll' : 'stream'
    for (let i = 0; i < 200 && here.app.syncFeedWaits.mode !== expectedMode; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    t.equal(here.app.syncFeedWaits.mode, expectedMode, `other processes' appends are learnt by ${expectedMode === 'poll' ? 'reading the heads' : 'a change stream'}`)
    const userId = newUserId()
    const cursors = await watermarks(client, [userId])
    const held = timed(client.changesBatch(cursors, { waitMs: CHANGES_WAIT_MAX_MS }))
    await untilWaiting(here, 1)
    await other.app.syncFeed.append(userId, { kind: 'calendar', connectionId: 'aaaaaaaaaaaaaaaaaaaaaaaa', calendarId: 'work' })
    const woken = await held
    t.ok(woken.ms < CHANGES_WAIT_MAX_MS / 2, `answered soon after the other process appended (${Math.round(woken.ms)} ms)`)
    t.match(woken.pages[0]?.invalidations, [{ kind: 'calendar', calendarId: 'work' }])
  })
}

test('a null cursor, a closing service and a caller that leaves end the wait at once', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const client = await listening(t, built)
  const [known, fresh] = [newUserId(), newUserId()]
  const cursors = await watermarks(client, [known])

  const joining = await timed(client.changesBatch([...cursors, { userId: fresh, cursor: null }], { waitMs: CHANGES_WAIT_MAX_MS }))
  t.ok(joining.ms < CHANGES_WAIT_MAX_MS / 2, `a watermark is answered without waiting (${Math.round(joining.ms)} ms)`)
  t.equal(joining.pages[1]?.resyncRequired, false)

  const leaving = new AbortController()
  const abandoned = client.changesBatch(cursors, { waitMs: CHANGES_WAIT_MAX_MS, signal: leaving.signal })
  await untilWaiting(built, 1)
  leaving.abort()
  await t.rejects(abandoned, 'the caller gave up')
  await untilWaiting(built, 0)
  t.pass('the read the caller left is released')

  const tooLong = await built.signed({ method: 'POST', url: '/internal/changes/batch', body: { users: cursors, waitMs: CHANGES_WAIT_MAX_MS + 1 } })
  t.equal(tooLong.statusCode, 400)
  t.match(tooLong.json(), { message: `body/waitMs must be <= ${CHANGES_WAIT_MAX_MS}` })

  const held = timed(client.changesBatch(cursors, { waitMs: CHANGES_WAIT_MAX_MS }))
  await untilWaiting(built, 1)
  const closing = timed(built.app.close().then(() => []))
  const answered = await held
  t.ok(answered.ms < CHANGES_WAIT_MAX_MS / 2, `a closing service answers its held reads (${Math.round(answered.ms)} ms), not at their deadline`)
  t.same(answered.pages[0]?.invalidations, [])
  const closed = await closing
  t.ok(closed.ms < CHANGES_WAIT_MAX_MS / 2, `and closes in ${Math.round(closed.ms)} ms: the answered read's connection closes with it instead of idling until the caller's keep-alive ends`)
})
