// The client module's event stream against a real app and the real Sync service
// (test/realtime/sync-service.ts): the specification's client reactions as a handler sees them, a
// stream that outlives a backend restart and the server's planned end, and a session ended
// elsewhere that closes the stream and asks for a new sign-in.
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import tap, { test, type Test } from 'tap'
import { buildApp, listen, startDependencies, uniqueEmail } from '../helper.js'
import { waitUntil } from '../processes.js'
import { INTERNAL_TOKEN, startSyncService } from '../realtime/sync-service.js'
import { defaultSseBrokerOptions } from '../../services/sse-broker.js'
import type { ServerMessage } from '../../schemas/server-message.js'
import {
  CalendarClient, MemoryTokenStore, UnavailableError, type AuthResult, type EventStream, type EventsRefetch, type StreamHandlers, type StreamOptions, type StreamStatus
} from '../../client/index.js'

const deps = await startDependencies(tap)
const sync = await startSyncService(tap, deps.mongoUri)
const backendOptions = { syncUrl: sync.url, internalAuthToken: INTERNAL_TOKEN }
const { app } = await buildApp(tap, deps, backendOptions)
const apiUrl = `${await listen(app)}/api`
app.changeFeed.configure({ pollIntervalMs: 100 })

interface Recorded {
  messages: ServerMessage[]
  refetches: EventsRefetch[]
  revoked: Array<{ connectionId: string, provider: string | undefined }>
  imports: string[]
  statuses: StreamStatus[]
  reauth: string[]
}

function recorder (): { recorded: Recorded, handlers: StreamHandlers } {
  const recorded: Recorded = { messages: [], refetches: [], revoked: [], imports: [], statuses: [], reauth: [] }
  return {
    recorded,
    handlers: {
      onMessage: (message) => { recorded.messages.push(message) },
      onEventsChanged: (refetch) => { recorded.refetches.push(refetch) },
      onConnectionRevoked: (connection) => { recorded.revoked.push(connection) },
      onImportCompleted: (message) => { recorded.imports.push(message.connectionId) },
      onStatus: (status) => { recorded.statuses.push(status) }
    }
  }
}

async function signedIn (label: string, url = apiUrl, store = new MemoryTokenStore(), reauth: string[] = []) {
  const client = new CalendarClient({ apiUrl: url, tokenStore: store, onReauthRequired: (reason) => { reauth.push(reason) } })
  const credentials = { email: uniqueEmail(label), password: `pw-${randomBytes(6).toString('hex')}` }
  // The backend sheds load (503 OVERLOADED, Retry-After) when this shared machine stalls its event
  // loop; a client tries again later, and so does this set-up step.
  let result = await client.signUp({ name: label, ...credentials }).catch((error: unknown) => error)
  for (let attempt = 1; result instanceof UnavailableError && attempt < 5; attempt++) {
    await sleep(Math.min(result.retryAfterMs ?? 1000, 2000))
    result = await client.signUp({ name: label, ...credentials }).catch((error: unknown) => error)
  }
  if (result instanceof Error) throw result
  if ((result as AuthResult).status !== 'OK') throw new Error(`sign-up failed: ${(result as AuthResult).status}`)
  return { client, userId: (result as { userId: string }).userId, store, credentials }
}

function openStream (t: Test, client: CalendarClient, handlers: StreamHandlers, options?: StreamOptions): EventStream {
  const stream = client.stream(handlers, options)
  t.teardown(() => { stream.close() })
  return stream
}

const replays = (recorded: Recorded) => recorded.messages.filter((message) => message.type === 'userMetadataChanged').length

test('the client reactions: another device\'s write refetches, importCompleted and a revoked grant reach their handlers once; a revoked Google grant re-authenticates', async (t) => {
  t.teardown(() => { app.sse.configure(defaultSseBrokerOptions) })
  app.sse.configure({ retryMs: 100 })
  const reauth: string[] = []
  const { client, userId, credentials } = await signedIn('reactions', apiUrl, new MemoryTokenStore(), reauth)
  const { recorded, handlers } = recorder()
  const stream = openStream(t, client, handlers)
  await waitUntil(() => replays(recorded) === 1, 'the replay')
  t.ok(stream.isOpen)
  t.match(recorded.messages[0], { type: 'userMetadataChanged', session: { userId }, sync: { userId, connections: [] } }, 'the first message is the replay')

  // The same account on a second device writes an event; this stream hears of it through the feed.
  const secondDevice = new CalendarClient({ apiUrl })
  t.equal((await secondDevice.signIn(credentials)).status, 'OK')
  const eventId = await secondDevice.saveEvent({ title: 'From the phone', startDate: '2026-11-23T09:00:00Z', endDate: '2026-11-23T10:00:00Z' })
  await waitUntil(() => recorded.refetches.length === 1, 'eventsChanged', 10_000)
  t.same(recorded.refetches[0], { all: false, eventIds: [eventId], calendarIds: [], connectionIds: [] }, 'refetch the queries holding that event')

  const connectionId = randomBytes(12).toString('hex')
  const counts = { calendarsDone: 2, calendarsTotal: 2, eventsImported: 17 }
  await sync.running.syncFeed.append(userId, { kind: 'importProgress', connectionId, phase: 'completed', operation: 'full', counts })
  await waitUntil(() => recorded.imports.length === 1, 'importCompleted', 10_000)
  t.same(recorded.imports, [connectionId])

  // A CalDAV password the server refuses: the connection is revoked, the session stays.
  await sync.running.syncFeed.append(userId, { kind: 'connection', connectionId, provider: 'caldav', state: 'actionRequired', reason: 'authorizationRevoked' })
  await waitUntil(() => recorded.messages.filter((message) => message.type === 'syncStatusChanged').length === 2, 'the revocation and its alias', 10_000)
  t.same(recorded.revoked, [{ connectionId, provider: 'caldav' }], 'CONNECTION_REVOKED and its legacy alias are one revocation')
  t.same(recorded.refetches.at(-1), { all: false, eventIds: [], calendarIds: [], connectionIds: [connectionId] }, 'the connection\'s events are refetched')
  await sync.running.syncFeed.append(userId, { kind: 'connection', connectionId, provider: 'caldav', state: 'healthy', reason: null })
  await waitUntil(() => recorded.messages.some((message) => message.type === 'syncStatusChanged' && message.status === 'healthy'), 'repaired', 10_000)
  await sync.running.syncFeed.append(userId, { kind: 'connection', connectionId, provider: 'caldav', state: 'actionRequired', reason: 'authorizationRevoked' })
  await waitUntil(() => recorded.revoked.length === 2, 'a second revocation after the repair', 10_000)
  t.same(recorded.statuses.filter((status) => status.state !== 'open'), [], 'the stream never dropped')

  // A revoked Google grant ends the user's sessions too (specification: invalid_grant): the
  // connection is reported, the stream closes, the reconnect is refused, and the app re-authenticates.
  const googleConnection = randomBytes(12).toString('hex')
  await sync.running.syncFeed.append(userId, { kind: 'connection', connectionId: googleConnection, provider: 'google', state: 'actionRequired', reason: 'authorizationRevoked' })
  await waitUntil(() => recorded.statuses.some((status) => status.state === 'closed'), 'the stream to close', 15_000)
  t.same(recorded.revoked.at(-1), { connectionId: googleConnection, provider: 'google' })
  t.same(recorded.statuses.at(-1), { state: 'closed', reason: 'sessionEnded' })
  t.same(reauth, ['refreshRefused'], 'the re-auth callback, once')
})

test('the stream opens a fresh one before the server\'s planned end, so none is ever cut', async (t) => {
  t.teardown(() => { app.sse.configure(defaultSseBrokerOptions) })
  app.sse.configure({ lifetimeMs: 1500 })
  const { client, userId } = await signedIn('planned-end')
  const { recorded, handlers } = recorder()
  // The server's 20 minutes, shortened on both sides.
  const stream = openStream(t, client, handlers, { plannedLifetimeMs: 1500, renewBeforeMs: 500 })
  await waitUntil(() => stream.connectionsOpened >= 4 && replays(recorded) >= 4, 'three renewals', 15_000)
  t.same(recorded.statuses.filter((status) => status.state === 'retrying'), [], 'no stream ended before its successor was open')
  await waitUntil(() => app.sse.streamsOf(userId) === 1, 'the old streams closed')

  const marker: ServerMessage = { type: 'calendarsChanged', reasons: ['calendar'], refetchAll: true }
  const before = recorded.messages.length
  t.equal(app.sse.publish(userId, marker), 1)
  await waitUntil(() => recorded.messages.length > before, 'the marker')
  t.same(recorded.messages.slice(before), [marker], 'what the server sends arrives once, on the current stream')
})

test('the stream survives a backend restart: it waits the server\'s retry, keeps trying, and reads on from the new process', async (t) => {
  const first = await buildApp(t, deps, backendOptions)
  const origin = await listen(first.app)
  const port = Number(new URL(origin).port)
  first.app.sse.configure({ retryMs: 200 })
  first.app.changeFeed.configure({ pollIntervalMs: 100 })
  const reauth: string[] = []
  const { client, userId } = await signedIn('restart', `${origin}/api`, new MemoryTokenStore(), reauth)
  const { recorded, handlers } = recorder()
  const stream = openStream(t, client, handlers, { maxRetryMs: 400 })
  await waitUntil(() => replays(recorded) === 1, 'the first replay')

  await first.app.close()
  await waitUntil(() => recorded.statuses.some((status) => status.state === 'retrying' && status.reason === 'dropped'), 'the drop')
  t.match(recorded.statuses.find((status) => status.state === 'retrying'), { reason: 'dropped', inMs: 200 }, 'the first attempt waits the server\'s retry hint')
  await waitUntil(() => recorded.statuses.some((status) => status.state === 'retrying' && status.reason === 'failed'), 'a refused attempt')
  const meanwhile = await client.profile().then(() => null, (error: unknown) => error)
  t.ok(meanwhile instanceof UnavailableError, 'a call while the backend is away is an outage')
  t.equal(await client.userId(), userId, 'and keeps the session')

  // The same process configuration again, on the same port: what a supervisor's restart is.
  const second = await buildApp(t, deps, backendOptions, () => first.config)
  await second.app.listen({ port, host: '127.0.0.1' })
  await waitUntil(() => replays(recorded) === 2, 'the replay of the new process', 10_000)
  t.ok(stream.isOpen)
  const eventId = await client.saveEvent({ title: 'After the restart', startDate: '2026-11-25T09:00:00Z', endDate: '2026-11-25T10:00:00Z' })
  await waitUntil(() => recorded.refetches.some((refetch) => refetch.eventIds.includes(eventId)), 'eventsChanged from the new process', 10_000)
  t.same(reauth, [], 'nobody was signed out')
  await second.app.close()
})

test('a session signed out elsewhere: its stream closes, the reconnect is refused, and the app is asked to sign in again', async (t) => {
  t.teardown(() => { app.sse.configure(defaultSseBrokerOptions) })
  app.sse.configure({ retryMs: 100 })
  const reauth: string[] = []
  const { client, store } = await signedIn('signed-out-elsewhere', apiUrl, new MemoryTokenStore(), reauth)
  const { recorded, handlers } = recorder()
  openStream(t, client, handlers)
  await waitUntil(() => replays(recorded) === 1, 'the replay')

  // The same session signed out from another holder of its tokens (a second app instance).
  const elsewhere = new CalendarClient({ apiUrl, tokenStore: new MemoryTokenStore(store.load()) })
  await elsewhere.signOut()
  await waitUntil(() => recorded.statuses.some((status) => status.state === 'closed'), 'the stream to give up', 10_000)
  t.same(recorded.statuses.at(-1), { state: 'closed', reason: 'sessionEnded' })
  t.same(reauth, ['refreshRefused'], 'the re-auth callback, once')
  t.equal(store.load(), null, 'the dead tokens are gone')
})
