import { test } from 'tap'
import type { ChangesPage } from '../../schemas/sync/index.js'
import { CHANGES_BATCH_MAX_USERS } from '../../schemas/sync/index.js'
import { CHANGE_FEED_RETENTION_MS, CURSOR_MAX_AGE_MS, FEED_GAP_GRACE_MS } from '../../sync/lib/change-feed.js'
import type { InvalidationInput } from '../../sync/lib/change-feed.js'
import { buildSyncApp, newUserId, startDatabase } from './helper.js'
import type { BuiltSyncApp } from './helper.js'

const DAY_MS = 24 * 60 * 60 * 1000
const connectionId = 'aaaaaaaaaaaaaaaaaaaaaaaa'

async function page (built: BuiltSyncApp, userId: string, cursor: string | null, limit?: number): Promise<ChangesPage> {
  const query = new URLSearchParams({ userId })
  if (cursor !== null) query.set('cursor', cursor)
  if (limit !== undefined) query.set('limit', String(limit))
  const response = await built.signed({ method: 'GET', url: `/internal/changes?${query.toString()}`, userId })
  if (response.statusCode !== 200) throw new Error(`changes answered ${response.statusCode}: ${response.body}`)
  return response.json()
}

function events (...ids: string[]): InvalidationInput[] {
  return ids.map((eventId) => ({ kind: 'event', eventId }))
}

test('a null cursor answers a watermark; later invalidations come after it, in order, once', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const userId = newUserId()
  await built.app.syncFeed.append(userId, ...events('before'))

  const watermark = await page(built, userId, null)
  t.same(watermark.invalidations, [], 'what happened before is not replayed')
  t.equal(watermark.resyncRequired, false)
  t.equal(watermark.hasMore, false)

  const all: InvalidationInput[] = [
    { kind: 'event', eventId: 'e1' },
    { kind: 'calendar', connectionId, calendarId: 'primary' },
    { kind: 'connection', connectionId, state: 'actionRequired', reason: 'authorizationRevoked' },
    { kind: 'importProgress', connectionId, phase: 'completed', operation: 'full', counts: { calendarsDone: 1, calendarsTotal: 1, eventsImported: 4 } }
  ]
  await built.app.syncFeed.append(userId, ...all)
  const next = await page(built, userId, watermark.cursor)
  const at = built.clock.now().toISOString()
  t.same(next.invalidations, all.map((item) => ({ ...item, at })), 'every kind, ids only, in append order')
  t.equal(next.hasMore, false)

  const after = await page(built, userId, next.cursor)
  t.same(after.invalidations, [], 'nothing is delivered twice')
  const other = await page(built, newUserId(), null)
  t.same(other.invalidations, [], 'another user sees none of it')
})

test('pages are bounded and chain without loss', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const userId = newUserId()
  let cursor = (await page(built, userId, null)).cursor
  const ids = ['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7']
  for (const id of ids) await built.app.syncFeed.append(userId, ...events(id))

  const seen: Array<{ ids: Array<string | undefined>, hasMore: boolean }> = []
  for (let round = 0; round < 4; round++) {
    const result = await page(built, userId, cursor, 3)
    seen.push({ ids: result.invalidations.map((item) => item.kind === 'event' ? item.eventId : undefined), hasMore: result.hasMore })
    cursor = result.cursor
  }
  t.same(seen, [
    { ids: ['e1', 'e2', 'e3'], hasMore: true },
    { ids: ['e4', 'e5', 'e6'], hasMore: true },
    { ids: ['e7'], hasMore: false },
    { ids: [], hasMore: false }
  ])

  const tooLarge = await built.signed({ method: 'GET', url: `/internal/changes?userId=${userId}&limit=501`, userId })
  t.equal(tooLarge.statusCode, 400)
  t.equal(tooLarge.json().code, 'VALIDATION')
})

test('malformed, foreign and expired cursors answer resyncRequired with a fresh watermark', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const userId = newUserId()
  const start = await page(built, userId, null)
  await built.app.syncFeed.append(userId, ...events('e1'))

  for (const [label, cursor] of [['garbage', 'not-a-cursor'], ['another user', (await page(built, newUserId(), null)).cursor]] as const) {
    const result = await page(built, userId, cursor)
    t.equal(result.resyncRequired, true, label)
    t.same(result.invalidations, [], label)
    t.same((await page(built, userId, result.cursor)).invalidations, [], `${label}: the answer is a usable watermark`)
  }

  built.clock.advance(6 * DAY_MS)
  const sixDaysLater = await page(built, userId, start.cursor)
  t.equal(sixDaysLater.resyncRequired, false, 'a six-day-old cursor is still served')
  t.same(sixDaysLater.invalidations.map((item) => item.kind), ['event'])

  built.clock.advance(CURSOR_MAX_AGE_MS)
  const expired = await page(built, userId, start.cursor)
  t.equal(expired.resyncRequired, true, 'a cursor older than seven days must resync')

  // An idle user's cursor is renewed on every poll, so steady polling never expires it.
  const idle = await page(built, userId, expired.cursor)
  built.clock.advance(6 * DAY_MS)
  const renewed = await page(built, userId, idle.cursor)
  built.clock.advance(6 * DAY_MS)
  t.equal((await page(built, userId, renewed.cursor)).resyncRequired, false)
})

test('entries are kept at least seven days: the retention TTL outlives every valid cursor', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const indexes = await built.app.syncDb.db.collection('changeFeed').indexes()
  const retention = indexes.find((index) => index.name === 'retention')
  t.same(retention?.key, { createdAt: 1 })
  t.ok((retention?.expireAfterSeconds ?? 0) * 1000 >= 7 * DAY_MS, 'at least seven days')
  t.equal((retention?.expireAfterSeconds ?? 0) * 1000, CHANGE_FEED_RETENTION_MS)
  t.ok(CHANGE_FEED_RETENTION_MS > CURSOR_MAX_AGE_MS)
})

test('a sequence number taken but not yet written holds the page until it lands or is abandoned', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const userId = newUserId()
  const start = await page(built, userId, null)
  // A writer took seq 1 and has not inserted it yet; another writer appended seq 2.
  await built.app.syncDb.db.collection<{ _id: string, seq: number }>('changeFeedCounters').updateOne({ _id: userId }, { $inc: { seq: 1 } }, { upsert: true })
  await built.app.syncFeed.append(userId, ...events('e2'))

  const held = await page(built, userId, start.cursor)
  t.same(held.invalidations, [], 'the page stops before the hole')
  t.equal(held.hasMore, false)

  built.clock.advance(FEED_GAP_GRACE_MS + 1)
  const skipped = await page(built, userId, held.cursor)
  t.same(skipped.invalidations.map((item) => item.kind === 'event' && item.eventId), ['e2'], 'an abandoned hole is skipped')
})

test('the batched form answers exactly what per-user requests answer', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const [busy, idle, fresh] = [newUserId(), newUserId(), newUserId()]
  const busyStart = await page(built, busy, null)
  const idleStart = await page(built, idle, null)
  await built.app.syncFeed.append(busy, ...events('b1', 'b2', 'b3'))
  await built.app.syncFeed.append(fresh, ...events('f1'))

  const requests = [
    { userId: busy, cursor: busyStart.cursor },
    { userId: idle, cursor: idleStart.cursor },
    { userId: fresh, cursor: null },
    { userId: busy, cursor: 'malformed' }
  ]
  const batch = await built.signed({ method: 'POST', url: '/internal/changes/batch', body: { users: requests, limit: 2 } })
  t.equal(batch.statusCode, 200)
  const single = []
  for (const request of requests) single.push(await page(built, request.userId, request.cursor, 2))
  t.same(batch.json().pages, single)
  t.same(single[0]?.invalidations.length, 2, 'the limit applies per user')
  t.equal(single[0]?.hasMore, true)

  const tooMany = await built.signed({ method: 'POST', url: '/internal/changes/batch', body: { users: Array.from({ length: CHANGES_BATCH_MAX_USERS + 1 }, () => ({ userId: busy, cursor: null })) } })
  t.equal(tooMany.statusCode, 400)
  const most = await built.signed({ method: 'POST', url: '/internal/changes/batch', body: { users: Array.from({ length: CHANGES_BATCH_MAX_USERS }, () => ({ userId: busy, cursor: null })) } })
  t.equal(most.statusCode, 200, 'a whole process\'s users fit in one request')
  const empty = await built.signed({ method: 'POST', url: '/internal/changes/batch', body: { users: [] } })
  t.equal(empty.statusCode, 400)
})
