// The connection state machine driven end to end by jobs against the scripted provider.
import { test } from 'tap'
import type { Test } from 'tap'
import type { ChangesPage, Invalidation } from '../../schemas/sync/index.js'
import { ProviderAuthorizationRevokedError, ProviderCursorExpiredError, ProviderUnavailableError } from '../../sync/lib/providers/port.js'
import { ATTEMPT_BUDGET, FAILED_JOB_COOLDOWN_MS, MAX_REQUEUES, RETRY_LADDER_MS } from '../../sync/lib/jobs/rules.js'
import { PAGE_PROGRESS_INTERVAL_MS } from '../../sync/services/calendar-reads.js'
import { buildSyncApp, newUserId, startDatabase } from './helper.js'
import { CALENDARS_PER_CONNECTION } from '../../sync/services/calendar-reads.js'
import type { BuiltSyncApp } from './helper.js'
import { ScriptedProvider, scriptedCalendar } from './scripted-provider.js'
import { RecordingBackend } from './recording-backend.js'

type Brief = string

/** The feed since `cursor`, each invalidation in a short form, and the next cursor. */
async function feedSince (built: BuiltSyncApp, userId: string, cursor: string): Promise<{ brief: Brief[], cursor: string }> {
  const page: ChangesPage = await built.app.syncFeed.page(userId, cursor, 500)
  return { brief: page.invalidations.map(brief), cursor: page.cursor }
}

function brief (item: Invalidation): Brief {
  switch (item.kind) {
    case 'event': return `event ${item.eventId ?? ''}`
    case 'calendar': return `calendar ${item.calendarId ?? ''}`
    case 'connection': return `connection ${item.state}${item.reason ? ` (${item.reason})` : ''}`
    case 'importProgress': return `import ${item.operation} ${item.phase} ${item.counts.calendarsDone}/${item.counts.calendarsTotal} ${item.counts.eventsImported}`
  }
}

async function setup (t: Test, options: { importBatchEvents?: number, backend?: RecordingBackend } = {}) {
  const provider = new ScriptedProvider()
  provider.calendars = [scriptedCalendar('primary', 'Primary', true), scriptedCalendar('work', 'Work')]
  const built = await buildSyncApp(t, await startDatabase(t), { providers: { google: provider }, ...options })
  const userId = newUserId()
  const start = await built.app.syncFeed.page(userId, null, 1)
  return { built, provider, userId, cursor: start.cursor }
}

async function connectHealthy (built: BuiltSyncApp, userId: string): Promise<string> {
  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'refresh-1' }, null)
  await built.app.syncJobWorker.tick()
  await built.app.syncJobWorker.tick()
  return connection._id.toHexString()
}

test('connect: importing -> catchingUp when the import finishes -> healthy on the first pull, even with no changes', async (t) => {
  const { built, provider, userId, cursor } = await setup(t)
  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'refresh-1' }, null)
  const connectionId = connection._id.toHexString()
  t.equal(connection.state, 'importing')

  t.equal(await built.app.syncJobWorker.tick(), 1, 'the import job ran')
  const afterImport = await feedSince(built, userId, cursor)
  t.same(afterImport.brief, [
    'connection connecting',
    'connection importing',
    'import full progress 0/2 0',
    // Each calendar tells the tabs twice: once the weeks around today are in, and at its end.
    'calendar primary',
    'calendar primary',
    'import full progress 1/2 3',
    'calendar work',
    'calendar work',
    'import full progress 2/2 6',
    'import full completed 2/2 6',
    'connection catchingUp'
  ])
  t.same(provider.calls.map((call) => call.credential), provider.calls.map(() => ({ refreshToken: 'refresh-1' })), 'the provider acts with the stored credential')

  t.equal(await built.app.syncJobWorker.tick(), 1, 'the catch-up pull ran')
  const afterPull = await feedSince(built, userId, afterImport.cursor)
  t.same(afterPull.brief, ['calendar primary', 'calendar work', 'connection healthy'], 'bootstrap catch-up always appends, then the connection is healthy')

  const metadata = await built.signed({ method: 'GET', url: `/internal/users/${userId}/metadata`, userId })
  t.equal(metadata.statusCode, 200)
  const now = built.clock.now().toISOString()
  t.same(metadata.json(), {
    userId,
    cloudMutationMode: 'enabled',
    execution: 'active',
    connections: [{
      connectionId,
      provider: 'google',
      state: 'healthy',
      reason: null,
      lastReadFailureAt: null,
      lastSyncedAt: now,
      lastHealthyAt: now,
      importProgress: { phase: 'completed', operation: 'full', counts: { calendarsDone: 2, calendarsTotal: 2, eventsImported: 6 }, updatedAt: now },
      pendingWrites: 0,
      unsyncedWrites: 0,
      providerRetryAt: null,
      createdAt: now
    }]
  })
})

test('an import records its progress after a page at most once a second; its start, the end of each calendar\'s weeks around today and of the calendar, and its completion always', async (t) => {
  // Each page handed over on its own, as pages of the batch size are.
  const { built, provider, userId, cursor } = await setup(t, { importBatchEvents: 1 })
  provider.calendars = [scriptedCalendar('primary', 'Primary', true)]
  provider.eventsPerCalendar = 8
  provider.pagesPerCalendar = 4
  // Pages 1 and 2 come 600 ms apart (the second is 1.2 s after the start), pages 3 and 4 at once.
  provider.beforePage = (page) => { if (page < 2) built.clock.advance(PAGE_PROGRESS_INTERVAL_MS * 0.6) }
  await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'refresh-1' }, null)
  t.equal(await built.app.syncJobWorker.tick(), 1, 'the import job ran')
  t.same((await feedSince(built, userId, cursor)).brief, [
    'connection connecting',
    'connection importing',
    'import full progress 0/1 0',
    // The weeks around today are told as soon as they are in.
    'calendar primary',
    'import full progress 0/1 4',
    'calendar primary',
    'import full progress 1/1 8',
    'import full completed 1/1 8',
    'connection catchingUp'
  ], 'only the second page came a second or more after the last record')
})

test('a new event written to the provider while an import of its calendar is under way is filed under the import\'s generation, which the import\'s last page keeps', async (t) => {
  const backend = new RecordingBackend()
  const { built, provider, userId } = await setup(t, { backend, importBatchEvents: 1 })
  provider.calendars = [scriptedCalendar('primary', 'Primary', true)]
  provider.pagesPerCalendar = 2
  // The import stops after the first page of the whole calendar: the write lands at the provider
  // past where that page read it.
  let stopped = false
  provider.beforePage = (page) => {
    if (page === 1 && !stopped) {
      stopped = true
      throw new Error('the connection dropped')
    }
  }
  await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'refresh-1' }, null)
  await built.app.syncJobWorker.tick()
  const generation = backend.batches[0]?.generation
  t.ok(generation, 'the import files its pages under a generation')
  t.notOk(backend.batches.some((batch) => batch.complete === true), 'the import has not ended')

  provider.writeResult = {
    outcome: 'inserted',
    event: { providerEventId: 'made-here', etag: '"w1"', updated: new Date().toISOString(), status: 'confirmed', content: { title: 'Made here', startDate: '2026-12-01T10:00:00Z', endDate: '2026-12-01T11:00:00Z', isAllDay: false, timeZone: 'UTC' } }
  }
  const subject = { content: { title: 'Made here', startDate: '2026-12-01T10:00:00Z', endDate: '2026-12-01T11:00:00Z', isAllDay: false, timeZone: 'UTC' }, lastUpdated: new Date().toISOString() }
  const report = await built.signed({ method: 'POST', url: '/internal/event-changes', body: { userId, eventId: 'event-made-here', operation: 'create', idempotencyKey: 'key-made-here', calendarId: 'primary', subject }, userId })
  t.equal(report.statusCode, 202, report.body)
  await built.app.syncJobWorker.tick()
  t.same(provider.calls.filter((call) => call.method === 'writeEvent' || call.method === 'importCalendar').map((call) => call.method), ['importCalendar', 'importCalendar', 'writeEvent'], 'written while the import waits for its retry')
  const writeBack = backend.batches.find((batch) => batch.events.some((item) => item.eventId === 'event-made-here'))
  t.match(writeBack, { generation, calendarId: 'primary' }, 'the link goes under the import\'s generation')
  t.notOk(writeBack?.complete, 'and ends nothing')

  for (let attempts = 0; !backend.batches.some((batch) => batch.complete === true) && attempts < 20; attempts++) {
    built.clock.advance(60_000)
    await built.app.syncJobWorker.tick()
  }
  t.match(backend.batches.find((batch) => batch.complete === true), { generation }, 'the import ended under that same generation')
})

test('the pull rule: idle pulls append nothing; changes, expiry repair and a cleared streak append a calendar invalidation', async (t) => {
  const { built, provider, userId } = await setup(t)
  await connectHealthy(built, userId)
  let { cursor } = await built.app.syncFeed.page(userId, null, 1)
  const restart = async (): Promise<Brief[]> => {
    const response = await built.signed({ method: 'POST', url: `/internal/users/${userId}/sync/restart`, body: {}, userId })
    t.same(response.json(), { queued: 1 })
    await built.app.syncJobWorker.tick()
    const next = await feedSince(built, userId, cursor)
    cursor = next.cursor
    return next.brief
  }

  t.same(await restart(), [], 'an idle pull wakes nobody')
  provider.scriptPull('primary', { changed: 2, deleted: 0 })
  t.same(await restart(), ['calendar primary'])
  provider.scriptPull('work', { changed: 0, deleted: 1 })
  t.same(await restart(), ['calendar work'])
  provider.scriptPull('primary', new ProviderCursorExpiredError('sync token gone'))
  const importsBefore = provider.calls.filter((call) => call.method === 'importCalendar').length
  t.same(await restart(), ['calendar primary'], 'repair promotes a new generation')
  t.equal(provider.calls.filter((call) => call.method === 'importCalendar').length, importsBefore + 1, 'the calendar was read again')
  t.same(await restart(), ['calendar primary'], 'the next good pull clears the expiry streak')
  t.same(await restart(), [], 'and then idle again')
})

test('a revoked grant: actionRequired (authorizationRevoked), credential discarded, event reports held until the reconnect repairs and writes them', async (t) => {
  const { built, provider, userId } = await setup(t)
  const connectionId = await connectHealthy(built, userId)
  const { cursor } = await built.app.syncFeed.page(userId, null, 1)

  provider.scriptPull('primary', new ProviderAuthorizationRevokedError('invalid_grant'))
  await built.signed({ method: 'POST', url: `/internal/users/${userId}/sync/restart`, body: {}, userId })
  await built.app.syncJobWorker.tick()
  const after = await feedSince(built, userId, cursor)
  t.same(after.brief, ['connection actionRequired (authorizationRevoked)'])
  t.equal(await built.app.syncCredentials.load(connectionId), null, 'credential discarded')
  t.same(await built.app.syncJobQueue.list(), [], 'the job ends: retrying a dead grant helps nobody')

  // The backend's own writes stood; their reports wait for the reconnect instead of being dropped.
  const subject = (title: string) => ({ content: { title, startDate: '2026-12-01T10:00:00Z', endDate: '2026-12-01T11:00:00Z', isAllDay: false, timeZone: 'UTC' }, lastUpdated: new Date().toISOString() })
  const report = { userId, eventId: 'event-1', operation: 'create', idempotencyKey: 'key-revoked-1', calendarId: 'primary', subject: subject('Draft') }
  const held = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report, userId })
  t.equal(held.statusCode, 202, held.body)
  t.same(held.json(), { duplicate: false, providerWriteQueued: false, heldUntilReconnect: true })
  const later = await built.signed({ method: 'POST', url: '/internal/event-changes', body: { ...report, operation: 'update', idempotencyKey: 'key-revoked-2', subject: subject('Final') }, userId })
  t.equal(later.json().heldUntilReconnect, true)
  const replayed = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report, userId })
  t.same(replayed.json(), { duplicate: true, providerWriteQueued: false, heldUntilReconnect: true }, 'a repeated key is answered as the first time')
  t.same(await built.app.syncJobQueue.list(), [], 'nothing is written while the grant is dead')
  t.ok((await feedSince(built, userId, after.cursor)).brief.includes('event event-1'), 'other tabs still hear of the change')

  const begin = await built.signed({ method: 'POST', url: `/internal/users/${userId}/connections/begin`, body: { provider: 'google', intent: 'reconnect' }, userId })
  t.equal(begin.statusCode, 200)
  t.match(begin.json(), { intent: 'reconnect', connectionId })

  await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'refresh-2' }, connectionId)
  const writes = (await built.app.syncJobQueue.list()).filter((job) => job.type === 'providerWrite')
  t.equal(writes.length, 1, 'one write for the event, not one per report')
  t.match(writes[0]?.payload, { eventId: 'event-1', operation: 'update', subject: /"title":"Final"/ }, 'its latest version')
  t.same(await built.app.syncHeldWrites.list(connectionId), [], 'released once queued')
  await built.app.syncJobWorker.tick()
  await built.app.syncJobWorker.tick()
  await built.app.syncJobWorker.tick()
  t.ok(provider.calls.some((call) => call.method === 'writeEvent'), 'written to the provider after the reconnect')
  const repaired = await feedSince(built, userId, after.cursor)
  t.same(repaired.brief.filter((line) => line.startsWith('connection') || line.includes('completed')), [
    'connection importing', 'import repair completed 2/2 6', 'connection catchingUp', 'connection healthy'
  ])
  t.same(await built.app.syncCredentials.load(connectionId), { refreshToken: 'refresh-2' })
})

test('a read failure makes a healthy connection delayed with lastReadFailureAt; the retried pull recovers it', async (t) => {
  const { built, provider, userId } = await setup(t)
  const connectionId = await connectHealthy(built, userId)
  provider.scriptPull('primary', new Error('503 from provider'))
  await built.signed({ method: 'POST', url: `/internal/users/${userId}/sync/restart`, body: {}, userId })
  await built.app.syncJobWorker.tick()
  const failedAt = built.clock.now()
  t.match(await built.app.syncConnections.get(connectionId), { state: 'delayed', reason: 'readFailure', lastReadFailureAt: failedAt })
  t.match(await built.app.syncJobQueue.list(), [{ type: 'pull', status: 'queued', attempts: 1 }])

  built.clock.advance(RETRY_LADDER_MS[0])
  await built.app.syncJobWorker.tick()
  t.match(await built.app.syncConnections.get(connectionId), { state: 'healthy', reason: null, lastReadFailureAt: null, lastHealthyAt: built.clock.now() })
})

test('a pull waiting for its retry runs at once when the person asks for a refresh', async (t) => {
  const { built, provider, userId } = await setup(t)
  const connectionId = await connectHealthy(built, userId)
  provider.scriptPull('primary', new Error('503 from provider'))
  await built.signed({ method: 'POST', url: `/internal/users/${userId}/sync/restart`, body: {}, userId })
  await built.app.syncJobWorker.tick()
  const [waiting] = await built.app.syncJobQueue.list()
  t.match(waiting, { type: 'pull', status: 'queued', attempts: 1 })
  t.ok((waiting?.runAt.getTime() ?? 0) > built.clock.now().getTime(), 'its retry is later')

  const refreshed = await built.signed({ method: 'POST', url: `/internal/users/${userId}/sync/restart`, body: {}, userId })
  t.same(refreshed.json(), { queued: 1 })
  t.equal(await built.app.syncJobWorker.tick(), 1, 'the pull runs now, not at its retry')
  t.same(await built.app.syncJobQueue.list(), [])
  t.match(await built.app.syncConnections.get(connectionId), { state: 'healthy', reason: null })
})

test('the connection\'s own pull meets the provider unavailable: it waits for it, its recovery makes the connection healthy with no second pull queued', async (t) => {
  const { built, provider, userId } = await setup(t)
  const connectionId = await connectHealthy(built, userId)
  provider.scriptPull('primary', new ProviderUnavailableError('503 from provider', 503))
  await built.signed({ method: 'POST', url: `/internal/users/${userId}/sync/restart`, body: {}, userId })
  await built.app.syncJobWorker.tick()
  const [waiting] = await built.app.syncJobQueue.list()
  t.match(waiting, { type: 'pull', coalescingKey: `pull:${connectionId}`, status: 'queued', attempts: 0, waitingForProvider: true })
  t.match(await built.app.syncConnections.get(connectionId), { state: 'delayed', unavailableStreak: 1, providerRetryAt: waiting?.runAt })

  built.clock.advance((waiting?.runAt.getTime() ?? 0) - built.clock.now().getTime())
  t.equal(await built.app.syncJobWorker.tick(), 1)
  t.same(await built.app.syncJobQueue.list(), [], 'the pull that recovered is the connection\'s pull: none queued after it')
  t.match(await built.app.syncConnections.get(connectionId), { state: 'healthy', unavailableStreak: 0, providerRetryAt: null })
})

test('an import that keeps failing is exhausted, then cleared because the connection has lastReadFailureAt, so a reconnect can import again', async (t) => {
  const { built, provider, userId } = await setup(t)
  provider.failNext('listCalendars', ...Array.from({ length: ATTEMPT_BUDGET * (MAX_REQUEUES + 1) }, () => new Error('provider down')))
  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'refresh-1' }, null)
  const connectionId = connection._id.toHexString()
  const longest = Math.max(...RETRY_LADDER_MS)
  for (let budget = 0; budget <= MAX_REQUEUES; budget++) {
    for (let attempt = 0; attempt < ATTEMPT_BUDGET; attempt++) {
      await built.app.syncJobWorker.tick()
      built.clock.advance(longest * 2)
    }
    built.clock.advance(FAILED_JOB_COOLDOWN_MS)
    await built.app.syncJobWorker.sweep()
  }
  t.match(await built.app.syncConnections.get(connectionId), { state: 'importing', reason: 'readFailure' })
  t.match(await built.app.syncJobQueue.list(), [{ status: 'exhausted', requeueCount: MAX_REQUEUES }])
  t.same(await built.app.syncJobWorker.sweep(), { requeued: 0, exhausted: 0, removed: 1 })

  await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'refresh-2' }, connectionId)
  t.match(await built.app.syncJobQueue.list(), [{ type: 'import', status: 'queued', attempts: 0, requeueCount: 0 }], 'the reconnect queued a fresh import')
  await built.app.syncJobWorker.tick()
  t.match(await built.app.syncConnections.get(connectionId), { state: 'catchingUp' })
})

test('the running service works its queue in the background while execution is active', async (t) => {
  const provider = new ScriptedProvider()
  const built = await buildSyncApp(t, await startDatabase(t), { providers: { google: provider }, worker: { autoStart: true, pollIntervalMs: 5 } })
  const userId = newUserId()
  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r' }, null)
  const settled = async () => (await built.app.syncJobQueue.list()).length === 0 &&
    (await built.app.syncConnections.get(connection._id.toHexString()))?.state === 'healthy'
  while (!await settled()) await new Promise((resolve) => setTimeout(resolve, 5))
  t.match(await built.app.syncConnections.get(connection._id.toHexString()), { state: 'healthy' }, 'import and catch-up ran without anyone ticking')
  t.same(provider.calls.map((call) => call.method), ['listCalendars', 'importCalendar', 'importCalendar', 'watch', 'pullChanges'], 'the weeks around today, the whole calendar, its channel, the catch-up pull')
  await t.rejects(built.app.syncEngine.authorize(newUserId(), 'google', { refreshToken: 'x' }, connection._id.toHexString()), /not this user's connection/, 'another user cannot take the connection over')
})

test('a connection\'s provider health: each unavailable answer lengthens the wait, the first answer after it clears it, a refresh tries at once', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const store = built.app.syncConnections
  const id = (await store.create(newUserId(), 'google'))._id.toHexString()
  const now = built.clock.now().getTime()
  t.same(await store.recordUnavailable(id, null, () => 1), new Date(now + 15_000))
  t.same(await store.recordUnavailable(id, 90_000, () => 1), new Date(now + 90_000), 'the provider\'s longer Retry-After')
  t.match(await store.get(id), { unavailableStreak: 2, providerRetryAt: new Date(now + 90_000) })
  await store.tryProviderNow(id)
  t.match(await store.get(id), { unavailableStreak: 2, providerRetryAt: null }, 'tried at once; a failure would back off further')
  t.equal(await store.recordAnswered(id), true, 'an answer after the refresh ends the outage')
  t.equal(await store.recordAnswered(id), false, 'only the first answer after an outage is a recovery')
  t.match(await store.get(id), { unavailableStreak: 0, providerRetryAt: null })
  t.same(await store.recordUnavailable(id, null, () => 0), new Date(now + 7_500), 'a new outage starts from the first step')

  t.equal(await store.recordAnswered('not-a-connection'), false)
  await t.resolves(store.tryProviderNow('not-a-connection'))
  t.same(await store.recordUnavailable('not-a-connection', null, () => 0), new Date(now + 7_500))
})

test('a provider that lists more calendars than a connection keeps: the primary and the first others up to the limit are imported, no more', async (t) => {
  const { built, provider, userId } = await setup(t)
  provider.eventsPerCalendar = 0
  provider.calendars = [
    ...Array.from({ length: CALENDARS_PER_CONNECTION + 1 }, (_, index) => scriptedCalendar(`extra-${String(index).padStart(4, '0')}`, `Extra ${index}`)),
    scriptedCalendar('primary', 'Primary', true)
  ]
  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'refresh-1' }, null)
  await built.app.syncJobWorker.tick()
  const kept = await built.app.syncCalendars.listByConnection(connection._id.toHexString())
  t.equal(kept.length, CALENDARS_PER_CONNECTION, 'as many as a connection keeps')
  t.ok(kept.some((calendar) => calendar.calendarId === 'primary'), 'the primary among them, though listed last')
  t.match(await built.app.syncConnections.get(connection._id.toHexString()), { importProgress: { phase: 'completed', counts: { calendarsTotal: CALENDARS_PER_CONNECTION } } })
})
