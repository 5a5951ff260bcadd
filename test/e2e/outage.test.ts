import { test } from 'tap'
import { RawSseReader } from '../realtime/sse-reader.js'
import { waitFor, waitUntil } from '../processes.js'
import { ManualClock } from '../sync/helper.js'
import type { JobRecord } from '../../sync/stores/job-queue.js'
import type { SyncMetadata } from '../../schemas/sync/index.js'
import { connectGoogle, startFullStack, userWithGoogleAccount, primaryCalendarId } from './stack.js'

// Google down for a while, a person editing meanwhile: once Google answers again, the latest version
// of every edited event reaches it within a minute, in the order first edited, each written once,
// however many edits were made. The Sync service runs on a manual clock, so its retry timings are
// the real ones; the backend, the stand-ins and the worker loop keep real time.

const RANGE = 'start=2026-11-01T00:00:00Z&end=2027-01-01T00:00:00Z'
const MINUTE = 60_000

interface Listed { _id: string, title: string, providerEventId?: string }

test('edits made while Google answers 503 reach it within a minute of its recovery, latest version once, in order; refresh tries again at once', async (t) => {
  const clock = new ManualClock(Date.now())
  // One worker slot: the writes released together then run one after the other, so the order they
  // are released in (oldest first) is what Google sees. With more slots they may overlap.
  const stack = await startFullStack(t, { syncClock: clock, syncMaxConcurrency: 1 })
  const user = await userWithGoogleAccount(stack, 'outage')
  const google = stack.google
  const primary = user.email
  const app = stack.backend.app

  const faults = async (method: 'POST' | 'DELETE', body?: Record<string, unknown>): Promise<void> => {
    const answer = await fetch(`${google.url}/_control/faults`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    })
    if (!answer.ok) throw new Error(`the fault control answered ${answer.status}`)
  }
  const atGoogle = (title: string) => google.control.storedEvents(primary).filter((event) => event['summary'] === title)
  const writes = async (): Promise<JobRecord[]> => await stack.sync.syncJobQueue.list({ type: 'providerWrite' })
  const writeOf = async (title: string): Promise<JobRecord | undefined> => (await writes()).find((job) => job.payload['subject']?.includes(`"title":"${title}"`))
  const successfulWrites = (): number => {
    const { operations } = google.control.counts()
    return ['calendar.events.patch', 'calendar.events.update'].reduce((sum, name) => sum + (operations[name]?.statuses['200'] ?? 0), 0)
  }
  const put = async (id: string, title: string, start: string): Promise<void> => {
    const answer = await app.inject({ method: 'PUT', url: `/api/event/${id}`, headers: user.headers, payload: { title, startDate: `${start}T12:00:00Z`, endDate: `${start}T13:00:00Z` } })
    if (answer.statusCode !== 204) throw new Error(`PUT answered ${answer.statusCode}: ${answer.body}`)
  }
  const connection = async () => {
    const [found] = await stack.sync.syncConnections.listByUser(user.userId)
    if (found === undefined) throw new Error('no connection')
    return found
  }

  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  await waitUntil(async () => (await connection()).state === 'healthy', 'the connection healthy after its import', 20_000)

  // Two events of the user's own, at Google and linked back before the outage.
  const lunch = 'a'.repeat(24)
  const dinner = 'b'.repeat(24)
  for (const [id, title, day] of [[lunch, 'Lunch', '2026-11-26'], [dinner, 'Dinner', '2026-11-27']] as const) {
    const created = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: id, calendarId: await primaryCalendarId(app, user.headers), title, startDate: `${day}T12:00:00Z`, endDate: `${day}T13:00:00Z` } })
    t.equal(created.statusCode, 204)
  }
  const linked = async () => ((await app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).json<Listed[]>())
    .filter((event) => event._id === lunch || event._id === dinner).every((event) => event.providerEventId !== undefined)
  await waitUntil(async () => atGoogle('Lunch').length === 1 && atGoogle('Dinner').length === 1 && await linked() && (await writes()).length === 0, 'both events at Google and linked', 20_000)

  await t.test('during the outage: every edit waits for Google without spending a retry, and the status says writes are waiting', async (t) => {
    await faults('POST', { pathPrefix: '/calendar/v3/', status: 503, count: 100_000 })
    await put(lunch, 'Lunch v1', '2026-11-26')
    await waitUntil(async () => ((await writeOf('Lunch v1'))?.lastError ?? null) !== null, 'the first edit tried at Google', 20_000)
    const firstTry = (await writeOf('Lunch v1'))?.runAt.getTime() ?? Infinity
    t.ok(firstTry - clock.now().getTime() <= 15_000, 'Google is tried again within the first step of its backoff')

    // Four more edits of the lunch, one of the dinner; Google is tried again on its own time in
    // between and still answers 503.
    const edits: Array<[string, string, string]> = [
      [lunch, 'Lunch v2', '2026-11-26'], [lunch, 'Lunch v3', '2026-11-26'], [dinner, 'Dinner w1', '2026-11-27'],
      [lunch, 'Lunch v4', '2026-11-26'], [lunch, 'Lunch v5', '2026-11-26']
    ]
    for (const [index, [id, title, day]] of edits.entries()) {
      // Seconds apart, so the dinner's first edit comes before Google's next try (at least 7.5 s on).
      clock.advance(2_000)
      await put(id, title, day)
      await waitUntil(async () => (await writeOf(title)) !== undefined, `the report of ${title} at Sync`, 20_000)
      if (index === 2) {
        clock.advance(15_000)
        await waitUntil(async () => (google.control.counts().operations['calendar.events.get']?.statuses['503'] ?? 0) >= 2, 'Google tried again and still down', 20_000)
      }
    }
    // The worker settles: nothing runs before Google's next try.
    await new Promise((resolve) => setTimeout(resolve, 300))
    const waiting = await writes()
    t.equal(waiting.length, 2, 'one write per event')
    t.ok(waiting.every((job) => job.status === 'queued' && job.attempts === 0 && job.waitingForProvider === true), 'no retry of the ladder spent, however many edits')
    t.ok(waiting.every((job) => job.runAt.getTime() - clock.now().getTime() <= 2 * MINUTE), 'the next try follows Google, not the number of edits')

    const stream = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: user.headers.authorization ?? '' })
    t.teardown(() => stream.close())
    const [replay] = await stream.untilMessages(1, 10_000) as Array<{ type: string, sync: SyncMetadata | null }>
    t.equal(replay?.type, 'userMetadataChanged')
    t.match(replay?.sync?.connections, [{ provider: 'google', state: 'delayed', pendingWrites: 2, providerRetryAt: /^\d{4}-/ }], 'the client sees the connection delayed with two writes waiting')
  })

  await t.test('Google answers again: within a minute both latest versions are there, each written once, in the order first edited', async (t) => {
    const before = successfulWrites()
    await faults('DELETE')
    const recoveredAt = clock.now().getTime()
    // Time goes on in steps of five seconds until both have arrived.
    const arrived = () => atGoogle('Lunch v5').length === 1 && atGoogle('Dinner w1').length === 1
    while (!arrived() && clock.now().getTime() - recoveredAt < 3 * MINUTE) {
      clock.advance(5_000)
      await waitFor(arrived, 1_500)
    }
    const delay = clock.now().getTime() - recoveredAt
    t.ok(arrived() && delay <= MINUTE, `both arrived ${delay / 1000} s after Google recovered`)
    t.equal(successfulWrites() - before, 2, 'one write per event: only the latest version, once')
    t.same(google.control.storedEvents(primary).map((event) => event['summary']).filter((title) => typeof title === 'string' && /^(Lunch|Dinner)/.test(title)).sort(), ['Dinner w1', 'Lunch v5'])
    const [lunchAtGoogle] = atGoogle('Lunch v5')
    const [dinnerAtGoogle] = atGoogle('Dinner w1')
    t.ok(Date.parse(String(lunchAtGoogle?.['updated'])) <= Date.parse(String(dinnerAtGoogle?.['updated'])), 'the lunch, edited first, is written first')

    await waitUntil(async () => (await writes()).length === 0 && (await connection()).state === 'healthy', 'no write left and the connection healthy', 20_000)
    const metadata = await app.syncClient.metadata(user.userId)
    t.match(metadata.connections, [{ state: 'healthy', pendingWrites: 0, providerRetryAt: null }])
  })

  await t.test('a long Retry-After is honoured, and POST /api/connections/refresh tries again at once', async (t) => {
    // Only the dinner's own requests, so a pull that happens to run now cannot take the fault.
    const dinnerAtGoogle = String(atGoogle('Dinner w1')[0]?.['id'])
    await faults('POST', { pathPrefix: `/calendar/v3/calendars/${encodeURIComponent(primary)}/events/${dinnerAtGoogle}`, status: 503, count: 1, retryAfterSec: 600 })
    await put(dinner, 'Dinner w2', '2026-11-27')
    await waitUntil(async () => ((await writeOf('Dinner w2'))?.lastError ?? null) !== null, 'the edit tried at Google', 20_000)
    const job = await writeOf('Dinner w2')
    t.ok((job?.runAt.getTime() ?? 0) - clock.now().getTime() >= 600_000, 'not before Google\'s Retry-After')
    await new Promise((resolve) => setTimeout(resolve, 300))
    t.equal(atGoogle('Dinner w2').length, 0)

    const refresh = await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
    t.equal(refresh.statusCode, 200)
    await waitUntil(() => atGoogle('Dinner w2').length === 1, 'the edit at Google right after the refresh, with no time passing', 20_000)
    t.pass('the refresh released the waiting write')
  })
})
