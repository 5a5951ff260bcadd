import { test } from 'tap'
import type { ObjectId } from 'mongodb'
import type { Test } from 'tap'
import type { Invalidation } from '../../schemas/sync/index.js'
import { verifyOAuthState } from '../../sync/lib/oauth-state.js'
import { WatchStore } from '../../sync/stores/watches.js'
import type { SyncConfig } from '../../schemas/config.js'
import { buildSyncApp, INTERNAL_TOKEN, newUserId, startDatabase } from './helper.js'
import type { BuiltSyncApp } from './helper.js'
import { ScriptedProvider } from './scripted-provider.js'
import type { RecordingBackend } from './recording-backend.js'
import { ProviderRejectedError } from '../../sync/lib/providers/port.js'
import { startMongo } from '../../dev/mongo/index.js'

async function setup (t: Test, sync: Partial<SyncConfig['sync']> = {}) {
  const provider = new ScriptedProvider()
  const built = await buildSyncApp(t, await startDatabase(t), { providers: { google: provider }, sync })
  return { built, provider }
}

async function invalidations (built: BuiltSyncApp, userId: string, cursor: string): Promise<Invalidation[]> {
  return (await built.app.syncFeed.page(userId, cursor, 500)).invalidations
}

function report (userId: string, overrides: Record<string, unknown> = {}) {
  return { userId, eventId: 'event-1', operation: 'update', idempotencyKey: 'idem-key-0001', ...overrides }
}

/** The connection holds a calendar of this id, as its import records it. */
async function holding (built: BuiltSyncApp, connection: { _id: ObjectId, userId: string }, calendarId: string): Promise<void> {
  await built.app.syncCalendars.beginImport({ connectionId: connection._id.toHexString(), userId: connection.userId, calendarId, name: calendarId, primary: true, timeZone: 'UTC', color: null }, 'run', built.clock.now())
}

test('event-change report without a connection: an event invalidation, no provider write; a repeat changes nothing', async (t) => {
  const { built } = await setup(t)
  const userId = newUserId()
  const { cursor } = await built.app.syncFeed.page(userId, null, 1)
  const first = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId), userId })
  t.equal(first.statusCode, 202)
  t.same(first.json(), { duplicate: false, providerWriteQueued: false })
  t.same(await invalidations(built, userId, cursor), [{ kind: 'event', eventId: 'event-1', at: built.clock.now().toISOString() }])

  const again = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId), userId })
  t.equal(again.statusCode, 202)
  t.same(again.json(), { duplicate: true, providerWriteQueued: false })
  t.equal((await invalidations(built, userId, cursor)).length, 1, 'no second invalidation')

  const reused = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { eventId: 'event-2' }), userId })
  t.equal(reused.statusCode, 409)
  t.equal(reused.json().code, 'IDEMPOTENCY_KEY_REUSED')
  t.equal((await invalidations(built, userId, cursor)).length, 1)

  const invalid = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { operation: 'rename', idempotencyKey: 'idem-key-0002' }), userId })
  t.equal(invalid.statusCode, 400)
  t.equal(invalid.json().code, 'VALIDATION')
  t.equal((await invalidations(built, userId, cursor)).length, 1, 'bad input changes nothing')

  const otherUser = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { idempotencyKey: 'idem-key-0003' }), userId: newUserId() })
  t.equal(otherUser.statusCode, 403)
})

test('with a live connection and active execution the provider write is queued once per key and carried out', async (t) => {
  const { built, provider } = await setup(t)
  const userId = newUserId()
  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r' }, null)
  await built.app.syncJobWorker.tick()
  await built.app.syncJobWorker.tick()

  const subject = { content: { title: 'Lunch', startDate: '2026-11-24', endDate: '2026-11-25', isAllDay: true, timeZone: 'UTC' }, lastUpdated: '2026-11-21T09:00:00.000Z' }
  const body = report(userId, { operation: 'create', calendarId: 'primary', subject })
  const first = await built.signed({ method: 'POST', url: '/internal/event-changes', body, userId })
  t.same(first.json(), { duplicate: false, providerWriteQueued: true })
  const again = await built.signed({ method: 'POST', url: '/internal/event-changes', body, userId })
  t.same(again.json(), { duplicate: true, providerWriteQueued: true })
  t.match(await built.app.syncJobQueue.list(), [{ type: 'providerWrite', connectionId: connection._id.toHexString(), payload: { eventId: 'event-1', operation: 'create', calendarId: 'primary', subject: JSON.stringify(subject) } }])
  await built.app.syncJobWorker.tick()
  t.same(provider.writes, [{ eventId: 'event-1', operation: 'create', subject }], 'the write carries the report\'s subject')
  t.match(provider.calls.at(-1), { method: 'writeEvent', calendarId: 'primary' })
  t.same(await built.app.syncJobQueue.list(), [])
})

test('a write the provider refuses marks the event and counts in the status; one that fails is tried again; one that goes through clears both', async (t) => {
  const { built, provider } = await setup(t)
  const backend = built.app.syncBackend as RecordingBackend
  const userId = newUserId()
  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r' }, null)
  const connectionId = connection._id.toHexString()
  await built.app.syncJobWorker.tick()
  await built.app.syncJobWorker.tick()
  const { cursor } = await built.app.syncFeed.page(userId, null, 1)
  const counted = async () => (await invalidations(built, userId, cursor)).flatMap((entry) => entry.kind === 'connection' && entry.unsyncedWrites !== undefined ? [entry.unsyncedWrites] : [])
  const status = async () => (await built.signed({ method: 'GET', url: `/internal/users/${userId}/metadata`, userId })).json().connections[0].unsyncedWrites
  const subject = (title: string) => ({ content: { title, startDate: '2026-11-24', endDate: '2026-11-25', isAllDay: true, timeZone: 'UTC' }, lastUpdated: built.clock.now().toISOString() })
  const change = async (key: string, title: string, operation = 'update') => {
    const answer = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { operation, calendarId: 'primary', idempotencyKey: key, subject: subject(title) }), userId })
    t.same(answer.json(), { duplicate: false, providerWriteQueued: true })
  }

  // Google answers 403 requiredAccessLevel: a calendar the account may only read.
  provider.failNext('writeEvent', new ProviderRejectedError('Google refused (insert: 403 requiredAccessLevel)', 403))
  await change('idem-refused-01', 'Offsite', 'create')
  await built.app.syncJobWorker.tick()
  t.match(backend.writeStates, [{ userId, connectionId, eventId: 'event-1', issue: { provider: 'google', reason: 'readOnly', retrying: false, message: /only read this calendar/ } }], 'the backend marks the event')
  t.same(await built.app.syncJobQueue.list(), [], 'a refusal is not asked again')
  t.same(await counted(), [1], 'the user\'s tabs hear one change not synced')
  t.equal(await status(), 1, 'and the status says so')

  // A failure of another kind: tried again, and said so once.
  provider.failNext('writeEvent', new Error('socket hang up'))
  await change('idem-failing-02', 'Offsite (2)')
  await built.app.syncJobWorker.tick()
  t.match(backend.writeStates.at(-1), { eventId: 'event-1', issue: { reason: 'failing', retrying: true, message: 'Google Calendar has not taken this change yet: Sync tries again.' } })
  t.match(await built.app.syncJobQueue.list(), [{ type: 'providerWrite', attempts: 1 }], 'the write waits for its next try')
  t.same(await counted(), [1, 1], 'still one event')
  provider.failNext('writeEvent', new Error('socket hang up'))
  built.clock.advance(3_600_000)
  await built.app.syncJobWorker.tick()
  t.equal(backend.writeStates.length, 2, 'a second failure of the same kind is not told again')

  built.clock.advance(3_600_000)
  await built.app.syncJobWorker.tick()
  t.equal(provider.writes.at(-1)?.subject.content?.title, 'Offsite (2)', 'the write went through')
  t.same(backend.writeStates.at(-1), { userId, connectionId, eventId: 'event-1', issue: null }, 'the mark is cleared')
  t.same(await counted(), [1, 1, 0])
  t.equal(await status(), 0)
  t.same(await built.app.syncJobQueue.list(), [])

  // A calendar this connection does not hold (gone from the account): the change stays here, said once.
  const gone = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { eventId: 'event-2', operation: 'update', calendarId: 'primary', idempotencyKey: 'idem-gone-03', subject: subject('Old calendar') }), userId })
  t.equal(gone.statusCode, 202)
  await built.app.syncCalendars.remove(connectionId, 'primary')
  await built.app.syncJobWorker.tick()
  t.match(backend.writeStates.at(-1), { eventId: 'event-2', issue: { reason: 'calendarGone', retrying: false } })
  t.equal(await status(), 1)
})

for (const replicaSet of [false, true]) {
  test(`a running worker claims a job queued in its process at once: the import after a connect, the provider write after its report commits (${replicaSet ? 'in a transaction' : 'without transactions'})`, async (t) => {
    const mongo = await startMongo(replicaSet ? { replicaSet: 'rs0' } : {})
    t.teardown(() => mongo.close())
    const provider = new ScriptedProvider()
    const built = await buildSyncApp(t, mongo.uri, { providers: { google: provider } })
    t.equal(built.app.syncDb.transactional, replicaSet)
    // Polls an hour apart: whatever runs below was claimed because it was queued, not by a poll.
    built.app.syncJobWorker.start(3_600_000, 3_600_000)
    t.teardown(async () => { await built.app.syncJobWorker.stop() })
    const until = async (done: () => boolean): Promise<void> => {
      const deadline = Date.now() + 10_000
      while (!done()) {
        if (Date.now() > deadline) throw new Error('the job was not claimed')
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
    const userId = newUserId()
    await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r' }, null)
    await until(() => provider.calls.some((call) => call.method === 'pullChanges'))
    t.ok(provider.calls.some((call) => call.method === 'importCalendar'), 'the import ran, then its pull')

    const subject = { content: { title: 'Lunch', startDate: '2026-11-24', endDate: '2026-11-25', isAllDay: true, timeZone: 'UTC' }, lastUpdated: '2026-11-21T09:00:00.000Z' }
    const response = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { operation: 'create', calendarId: 'primary', subject }), userId })
    t.same(response.json(), { duplicate: false, providerWriteQueued: true })
    await until(() => provider.writes.length === 1)
    t.same(provider.writes, [{ eventId: 'event-1', operation: 'create', subject }], 'written without waiting for a poll')

    const later = await built.app.syncJobQueue.enqueue({ type: 'pull', coalescingKey: 'later', userId, payload: {}, runAt: new Date(built.clock.now().getTime() + 60_000) })
    await new Promise((resolve) => setTimeout(resolve, 200))
    t.match(await built.app.syncJobQueue.list(), [{ _id: later.job._id, status: 'queued' }], 'a job due later waits for its time')
  })
}

test('passive execution records the change but queues no provider write', async (t) => {
  const { built } = await setup(t, { execution: 'passive' })
  const userId = newUserId()
  await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r' }, null)
  const response = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId), userId })
  t.same(response.json(), { duplicate: false, providerWriteQueued: false })
  t.same((await built.app.syncJobQueue.list()).map((job) => job.type), ['import'], 'only the waiting import, no write')
})

test('maintenance answers 503 MAINTENANCE for a user with a connection and changes nothing, so a retry applies it later', async (t) => {
  const { built } = await setup(t, { cloudMutationMode: 'maintenance' })
  const userId = newUserId()
  await holding(built, await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r' }, null), 'primary')
  const { cursor } = await built.app.syncFeed.page(userId, null, 1)
  const refused = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { calendarId: 'primary' }), userId })
  t.equal(refused.statusCode, 503)
  t.same(refused.json(), { statusCode: 503, code: 'MAINTENANCE', error: 'Service Unavailable', message: 'Cloud calendar edits are paused for maintenance; try again later' })
  t.same(await invalidations(built, userId, cursor), [], 'nothing appended')
  t.same((await built.app.syncJobQueue.list()).filter((job) => job.type === 'providerWrite'), [], 'nothing queued')

  const loner = newUserId()
  const local = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(loner), userId: loner })
  t.equal(local.statusCode, 202, 'a user without a provider connection edits as usual')

  // Maintenance ends: the same Sync database served with cloud edits enabled again.
  const enabled = await buildSyncApp(t, built.config.sync.databaseUri, {
    providers: { google: new ScriptedProvider() },
    config: { ...built.config, sync: { ...built.config.sync, cloudMutationMode: 'enabled' } }
  })
  const retried = await enabled.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { calendarId: 'primary' }), userId })
  t.equal(retried.statusCode, 202)
  t.same(retried.json(), { duplicate: false, providerWriteQueued: true }, 'the retried report is applied, not replayed as a refusal')
  t.same((await invalidations(enabled, userId, cursor)).map((item) => item.kind), ['event'])
})

test('a change goes to the connection holding its event\'s calendar and no other: held when that one is revoked, whatever is live', async (t) => {
  const { built } = await setup(t)
  const userId = newUserId()
  const revoked = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r1' }, null)
  await holding(built, revoked, 'ann@example.com')
  await built.app.syncConnections.apply(revoked._id.toHexString(), { type: 'grantRevoked' })
  const live = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r2' }, null)
  await holding(built, live, '/ann/home/')
  const writes = async () => (await built.app.syncJobQueue.list({ type: 'providerWrite' })).map((job) => `${job.connectionId ?? ''} ${job.payload.calendarId ?? ''}`)

  const accepted = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { calendarId: '/ann/home/' }), userId })
  t.equal(accepted.statusCode, 202)
  t.same(accepted.json(), { duplicate: false, providerWriteQueued: true })
  t.same(await writes(), [`${live._id.toHexString()} /ann/home/`], 'written to the live connection holding the calendar')

  const held = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { idempotencyKey: 'idem-key-0009', eventId: 'event-2', calendarId: 'ann@example.com' }), userId })
  t.equal(held.statusCode, 202)
  t.same(held.json(), { duplicate: false, providerWriteQueued: false, heldUntilReconnect: true }, 'a change of the revoked connection\'s calendar waits for its reconnect, though another connection is live')
  t.match(await built.app.syncHeldWrites.list(revoked._id.toHexString()), [{ userId, connectionId: revoked._id.toHexString() }])
  t.same(await writes(), [`${live._id.toHexString()} /ann/home/`], 'and goes to no other connection')

  for (const [key, calendarId] of [['idem-key-0010', undefined], ['idem-key-0011', 'somebody-else@example.com'], ['idem-key-0012', 'https://evil.example/cal/']] as const) {
    const answer = await built.signed({ method: 'POST', url: '/internal/event-changes', body: report(userId, { idempotencyKey: key, eventId: key, ...(calendarId === undefined ? {} : { calendarId }) }), userId })
    t.same(answer.json(), { duplicate: false, providerWriteQueued: false }, `no provider write for ${calendarId ?? 'an event of no provider calendar'}`)
  }
  t.same(await writes(), [`${live._id.toHexString()} /ann/home/`])
  t.equal((await built.app.syncHeldWrites.list(revoked._id.toHexString())).length, 1)
})

test('begin: the authorization URL carries a signed state; refusals are typed', async (t) => {
  const { built } = await setup(t)
  const userId = newUserId()
  const url = `/internal/users/${userId}/connections/begin`
  const response = await built.signed({ method: 'POST', url, body: { provider: 'google', intent: 'connect', correlationId: 'cid-1234' }, userId })
  t.equal(response.statusCode, 200)
  const answer = response.json()
  t.match(answer, { intent: 'connect', connectionId: null, correlationId: 'cid-1234' })
  const authorization = new URL(answer.authorizationUrl)
  t.equal(authorization.searchParams.get('redirect_uri'), 'https://sync.example.test/sync/oauth/google/callback')
  const state = verifyOAuthState(authorization.searchParams.get('state') ?? '', INTERNAL_TOKEN, built.clock.now().getTime())
  t.match(state, { userId, provider: 'google', connectionId: null, correlationId: 'cid-1234' })
  t.equal(verifyOAuthState(authorization.searchParams.get('state') ?? '', 'another-secret', built.clock.now().getTime()), null, 'forged states are refused')
  t.equal(verifyOAuthState(authorization.searchParams.get('state') ?? '', INTERNAL_TOKEN, built.clock.now().getTime() + 11 * 60_000), null, 'expired states are refused')

  const noConnection = await built.signed({ method: 'POST', url, body: { provider: 'google', intent: 'reconnect' }, userId })
  t.equal(noConnection.statusCode, 404)
  t.equal(noConnection.json().code, 'CONNECTION_NOT_FOUND')
  const someoneElses = await built.app.syncConnections.create(newUserId(), 'google')
  const foreign = await built.signed({ method: 'POST', url, body: { provider: 'google', intent: 'reconnect', connectionId: someoneElses._id.toHexString() }, userId })
  t.equal(foreign.statusCode, 404, 'another user\'s connection cannot be named')
  const unconfigured = await built.signed({ method: 'POST', url, body: { provider: 'microsoft', intent: 'connect' }, userId })
  t.equal(unconfigured.statusCode, 400)
  t.equal(unconfigured.json().code, 'PROVIDER_NOT_CONFIGURED')
})

test('begin is refused when execution is passive and in maintenance', async (t) => {
  const passive = await setup(t, { execution: 'passive' })
  const userId = newUserId()
  const body = { provider: 'google', intent: 'connect' }
  const refused = await passive.built.signed({ method: 'POST', url: `/internal/users/${userId}/connections/begin`, body, userId })
  t.equal(refused.statusCode, 409)
  t.equal(refused.json().code, 'EXECUTION_PASSIVE')

  const maintenance = await setup(t, { cloudMutationMode: 'maintenance' })
  const paused = await maintenance.built.signed({ method: 'POST', url: `/internal/users/${userId}/connections/begin`, body, userId })
  t.equal(paused.statusCode, 503)
  t.equal(paused.json().code, 'MAINTENANCE')
})

test('stop watches stops every channel of the user, even without a usable connection; restart with none queues nothing', async (t) => {
  const { built, provider } = await setup(t)
  const userId = newUserId()
  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r' }, null)
  const connectionId = connection._id.toHexString()
  const expiresAt = built.clock.now()
  await built.app.syncWatches.add({ channelId: 'channel-1', token: 'secret-1', userId, connectionId, calendarId: 'primary', resourceId: 'res-1', expiresAt })
  await built.app.syncWatches.add({ channelId: 'channel-2', token: 'secret-2', userId, connectionId: 'cccccccccccccccccccccccc', calendarId: 'old', resourceId: 'res-2', expiresAt })
  const stored = (await built.app.syncWatches.listByUser(userId)).find((watch) => watch._id === 'channel-1')
  t.notOk(JSON.stringify(stored).includes('secret-1'), 'the channel token is kept only as a digest')
  t.equal(stored && WatchStore.tokenMatches(stored, 'secret-1'), true)
  t.equal(stored && WatchStore.tokenMatches(stored, 'secret-2'), false)
  const otherUser = newUserId()
  await built.app.syncWatches.add({ channelId: 'channel-3', token: 'secret-3', userId: otherUser, connectionId, calendarId: 'x', resourceId: 'res-3', expiresAt })

  const stopped = await built.signed({ method: 'POST', url: `/internal/users/${userId}/watches/stop`, body: {}, userId })
  t.equal(stopped.statusCode, 200)
  t.same(stopped.json(), { stopped: 2 })
  t.same(provider.calls.filter((call) => call.method === 'unwatch').map((call) => call.calendarId), ['channel-1'], 'stopped at the provider where a credential exists')
  t.same(await built.app.syncWatches.listByUser(userId), [])
  t.equal((await built.app.syncWatches.listByUser(otherUser)).length, 1, 'other users keep theirs')

  const nobody = newUserId()
  t.same((await built.signed({ method: 'POST', url: `/internal/users/${nobody}/watches/stop`, body: {}, userId: nobody })).json(), { stopped: 0 })
  const restart = await built.signed({ method: 'POST', url: `/internal/users/${nobody}/sync/restart`, body: {}, userId: nobody })
  t.equal(restart.statusCode, 202)
  t.same(restart.json(), { queued: 0 })
})

test('unknown routes answer the typed 404', async (t) => {
  const { built } = await setup(t)
  const response = await built.signed({ method: 'GET', url: '/internal/nothing-here' })
  t.equal(response.statusCode, 404)
  t.same(response.json(), { statusCode: 404, code: 'NOT_FOUND', error: 'Not Found', message: 'Route GET /internal/nothing-here not found' })
})

// The backend's outbox may deliver a watch stop or a sync restart twice (a process that died after
// sending and before deleting the entry). These two carry no idempotency key because a repeat is
// harmless by nature: the second stop finds no watch, the second restart joins the queued pull.
test('a watch stop or a sync restart delivered twice has the effect of one', async (t) => {
  const { built, provider } = await setup(t)
  const userId = newUserId()
  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r' }, null)
  await built.app.syncJobWorker.tick()
  await built.app.syncJobWorker.tick()
  t.same(await built.app.syncJobQueue.list(), [], 'the import is done')
  const connectionId = connection._id.toHexString()
  const watching = (await built.app.syncWatches.listByUser(userId)).length
  t.ok(watching > 0, 'the import started a watch')

  const restart = async () => await built.signed({ method: 'POST', url: `/internal/users/${userId}/sync/restart`, body: {}, userId })
  t.same((await restart()).json(), { queued: 1 })
  t.same((await restart()).json(), { queued: 1 })
  t.match(await built.app.syncJobQueue.list(), [{ type: 'pull', connectionId }], 'one pull waits, not two')
  t.equal((await built.app.syncJobQueue.list()).length, 1)

  const stop = async () => await built.signed({ method: 'POST', url: `/internal/users/${userId}/watches/stop`, body: {}, userId })
  const unwatched = () => provider.calls.filter((call) => call.method === 'unwatch').length
  t.same((await stop()).json(), { stopped: watching })
  t.equal(unwatched(), watching)
  t.same((await stop()).json(), { stopped: 0 }, 'the repeat finds nothing to stop')
  t.equal(unwatched(), watching, 'the provider is not asked again')
  t.same(await built.app.syncWatches.listByUser(userId), [])
})
