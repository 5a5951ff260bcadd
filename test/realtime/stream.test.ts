// GET /api/events/stream end to end: the backend app as built for production (test/helper.ts),
// real sessions from the session core stand-in, the real Sync service, real HTTP streams read
// byte for byte and with the `eventsource` client.
import { randomBytes } from 'node:crypto'
import tap, { test, type Test } from 'tap'
import { EventSource } from 'eventsource'
import { WEB_URL, buildApp, listen, signIn, signUp, startDependencies, uniqueEmail, type SignedIn } from '../helper.js'
import { defaultSseBrokerOptions } from '../../services/sse-broker.js'
import { MAX_IDS_PER_MESSAGE, serverMessageCheck, type ServerMessage } from '../../schemas/server-message.js'
import { RawSseReader, eventually } from './sse-reader.js'
import { INTERNAL_TOKEN, startSyncService } from './sync-service.js'

const deps = await startDependencies(tap)
const sync = await startSyncService(tap, deps.mongoUri)

const { app, log } = await buildApp(tap, deps, { syncUrl: sync.url, internalAuthToken: INTERNAL_TOKEN })
const base = await listen(app)
const streamUrl = `${base}/api/events/stream`
app.changeFeed.configure({ pollIntervalMs: 100 })

function restoreDefaults (): void {
  app.sse.configure(defaultSseBrokerOptions)
}

async function newUser (label: string): Promise<SignedIn> {
  return await signUp(app, { email: uniqueEmail(label), password: `pw-${randomBytes(6).toString('hex')}`, name: label })
}

async function openStream (t: Test, headers: Record<string, string>): Promise<RawSseReader> {
  const reader = await RawSseReader.open(streamUrl, headers)
  t.teardown(() => reader.close())
  return reader
}

function isReplay (message: unknown): boolean {
  return (message as ServerMessage).type === 'userMetadataChanged'
}

/** Every data block is a `message` event carrying a schema-valid ServerMessage. */
function checkFrames (t: Test, reader: RawSseReader): void {
  for (const block of reader.blocks) {
    if (block.data === undefined) continue
    t.equal(block.event, 'message', 'the only event name is message')
    t.ok(serverMessageCheck.Check(JSON.parse(block.data)), 'the frame is a schema-valid ServerMessage')
  }
}

test('without a session the stream answers 401 and opens nothing', async (t) => {
  const response = await fetch(streamUrl, { headers: { accept: 'text/event-stream' } })
  t.equal(response.status, 401)
  t.same(await response.json(), { message: 'unauthorised' }, 'the session library\'s answer, which its clients understand')
  const forged = await fetch(streamUrl, { headers: { authorization: 'Bearer not-a-token' } })
  t.equal(forged.status, 401)
  await forged.body?.cancel()
  t.equal(app.sse.streamCount, 0)
})

test('a stream: proxy-safe headers, the retry line first, the replay, keepalives, only schema-valid message events', async (t) => {
  t.teardown(restoreDefaults)
  app.sse.configure({ heartbeatIntervalMs: 40 })
  const user = await newUser('stream')
  const reader = await openStream(t, { ...user.headers, origin: WEB_URL })

  t.equal(reader.status, 200)
  t.equal(reader.headers['content-type'], 'text/event-stream; charset=utf-8')
  t.equal(reader.headers['cache-control'], 'no-cache, no-transform')
  t.equal(reader.headers['x-accel-buffering'], 'no')
  t.equal(reader.headers.connection, 'keep-alive')
  t.equal(reader.headers['access-control-allow-origin'], WEB_URL, 'CORS headers survive the stream taking over the response')
  t.equal(reader.headers['access-control-allow-credentials'], 'true')
  t.equal(reader.headers['x-content-type-options'], 'nosniff', 'security headers too')

  const [replay] = await reader.untilMessages(1)
  t.equal(reader.text.startsWith('retry: 5000\n\n'), true, 'the retry hint comes first')
  t.match(replay, {
    type: 'userMetadataChanged',
    session: { userId: user.userId },
    sync: { userId: user.userId, connections: [] }
  }, 'the replay carries the session and the Sync metadata of this user')
  t.type((replay as { session: { metadata: unknown } }).session.metadata, 'object')

  await reader.until((r) => r.blocks.filter((block) => block.comments.includes('keepalive')).length >= 3)
  for (const block of reader.blocks) {
    const kind = block.retry !== undefined ? 'retry' : block.comments.length > 0 ? 'comment' : 'message'
    if (kind === 'retry') t.equal(block.raw, 'retry: 5000')
    if (kind === 'comment') t.equal(block.raw, ': keepalive')
  }
  checkFrames(t, reader)
  t.equal(reader.messages().length, 1, 'an idle stream gets the replay and nothing else')
})

test('the replay goes to the new stream only', async (t) => {
  const user = await newUser('replay')
  const first = await openStream(t, user.headers)
  await first.untilMessages(1)
  const second = await openStream(t, user.headers)
  await second.untilMessages(1)
  const marker: ServerMessage = { type: 'calendarsChanged', reasons: ['calendar'], refetchAll: true }
  t.equal(app.sse.publish(user.userId, marker), 2)
  await first.untilMessages(2)
  await second.untilMessages(2)
  t.same(first.messages().map((message) => (message as ServerMessage).type), ['userMetadataChanged', 'calendarsChanged'],
    'the first stream did not get the second one\'s replay')
})

test('with Sync unreachable a stream still opens and replays the session half, with sync null', async (t) => {
  const user = await newUser('syncdown')
  app.changeFeed.configure({ readyTimeoutMs: 200, backoffBaseMs: 50, backoffMaxMs: 200 })
  await sync.stop()
  t.teardown(async () => {
    app.changeFeed.configure({ readyTimeoutMs: 3000, backoffBaseMs: 1000, backoffMaxMs: 30_000 })
    if (sync.app === undefined) await sync.start()
  })
  const reader = await openStream(t, user.headers)
  const [replay] = await reader.untilMessages(1)
  t.match(replay, { type: 'userMetadataChanged', session: { userId: user.userId }, sync: null })
  t.type((replay as { session: { metadata: unknown } }).session.metadata, 'object', 'the session metadata is still there')
  t.ok(log.lines().some((line) => line.msg === 'Sync metadata unavailable for the stream replay'), 'the missing half is logged')

  await sync.start()
  t.same((await reader.untilMessages(3, 10_000)).slice(1), [
    { type: 'calendarsChanged', reasons: ['resync'], refetchAll: true },
    { type: 'eventsChanged', reasons: ['resync'], refetchAll: true }
  ], 'once Sync is back, what the stream may have missed meanwhile is invalidated')
  await sync.running.syncFeed.append(user.userId, { kind: 'event', eventId: 'after-recovery' })
  t.same((await reader.untilMessages(4))[3], { type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['after-recovery'] },
    'and the feed is followed from then on')
})

test('a stream closes after its planned lifetime and the client reconnects with a fresh bearer token', async (t) => {
  t.teardown(restoreDefaults)
  app.sse.configure({ lifetimeMs: 400, retryMs: 50 })
  const user = await newUser('lifetime')

  // A native client: before each (re)connect it refreshes its tokens, as the specification asks.
  let accessToken = user.accessToken
  let refreshToken = user.refreshToken
  const tokensUsed: string[] = []
  const source = new EventSource(streamUrl, {
    fetch: async (input, init) => {
      if (tokensUsed.length > 0) {
        const refreshed = await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${refreshToken}` } })
        if (refreshed.statusCode !== 200) throw new Error(`refresh failed: ${refreshed.statusCode}`)
        accessToken = String(refreshed.headers['sx-access-token'])
        refreshToken = String(refreshed.headers['sx-refresh-token'])
      }
      tokensUsed.push(accessToken)
      return await fetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${accessToken}` } })
    }
  })
  t.teardown(() => source.close())
  const replays: unknown[] = []
  let opens = 0
  source.addEventListener('open', () => { opens++ })
  source.addEventListener('message', (event) => { replays.push(JSON.parse(event.data)) })

  await eventually(() => opens >= 2 && replays.length >= 2, 10_000, 'a second connection after the planned close')
  t.equal(tokensUsed.length >= 2, true)
  t.not(tokensUsed[1], tokensUsed[0], 'the reconnect used a fresh access token')
  t.equal(replays.slice(0, 2).every(isReplay), true, 'each connection starts with its own replay')
  t.equal(replays.every((message) => serverMessageCheck.Check(message)), true)

  const raw = await openStream(t, user.headers)
  await raw.untilEnded()
  t.equal(raw.text.startsWith('retry: 50\n\n'), true)
  t.equal(raw.ended, true, 'the server ended the stream itself')
})

test('sign-out closes the streams of that session and leaves the user\'s other sessions streaming', async (t) => {
  const email = uniqueEmail('signout')
  const password = `pw-${randomBytes(6).toString('hex')}`
  const first = await signUp(app, { email, password })
  const second = await signIn(app, { email, password })
  const ofFirst = await openStream(t, first.headers)
  const ofSecond = await openStream(t, second.headers)
  await ofFirst.untilMessages(1)
  await ofSecond.untilMessages(1)

  const signedOut = await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { ...first.headers, 'sx-auth-mode': 'header' } })
  t.equal(signedOut.statusCode, 200)
  await ofFirst.untilEnded()
  t.equal(ofFirst.ended, true, 'the signed-out session\'s stream ended')

  const marker: ServerMessage = { type: 'eventsChanged', reasons: ['event'], refetchAll: true }
  t.equal(app.sse.publish(first.userId, marker), 1, 'one stream of the user remains')
  t.same((await ofSecond.untilMessages(2))[1], marker)
  t.equal(ofSecond.ended, false)
})

test('a client that stops reading is cut off; the user\'s reading stream stays', async (t) => {
  t.teardown(restoreDefaults)
  app.sse.configure({ maxPendingBytes: 16 * 1024 })
  const user = await newUser('slow')
  const stalled = await openStream(t, user.headers)
  const reading = await openStream(t, user.headers)
  await stalled.untilMessages(1)
  await reading.untilMessages(1)
  stalled.pause()

  const big: ServerMessage = {
    type: 'eventsChanged',
    reasons: ['event'],
    refetchAll: false,
    eventIds: Array.from({ length: MAX_IDS_PER_MESSAGE }, (_, i) => `${i}-${'x'.repeat(180)}`)
  }
  let published = 0
  while (app.sse.streamsOf(user.userId) === 2 && published < 5000) {
    if (app.sse.publish(user.userId, big) === 0) break
    published++
    await reading.until((r) => r.messages().length === published + 1)
  }
  t.equal(app.sse.streamsOf(user.userId), 1, 'the stalled stream was dropped')
  t.ok(log.lines().some((line) => line.msg === 'event stream client stopped reading; stream cut off' && line.userId === user.userId), 'and that was logged')
  t.equal(reading.ended, false)
})
test('a write by A through POST /api/event reaches both of A\'s streams through the change feed, and nothing reaches B', async (t) => {
  const userA = await newUser('writer')
  const userB = await newUser('bystander')
  const a1 = await openStream(t, userA.headers)
  const a2 = await openStream(t, userA.headers)
  const b1 = await openStream(t, userB.headers)
  for (const reader of [a1, a2, b1]) await reader.untilMessages(1)

  const eventId = randomBytes(12).toString('hex')
  const written = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: userA.headers,
    payload: { _id: eventId, title: 'Planning', startDate: '2026-11-23T09:00:00Z', endDate: '2026-11-23T09:30:00Z' }
  })
  t.equal(written.statusCode, 204, written.body)

  const expected = { type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: [eventId] }
  await a1.untilMessages(2, 10_000)
  await a2.untilMessages(2, 10_000)
  t.same(a1.messages()[1], expected)
  t.same(a2.messages()[1], expected)
  checkFrames(t, a1)
  checkFrames(t, a2)

  // B's stream was open all along; a marker sent to B now must be the first thing after its replay.
  const polls = sync.requestsFor(userB.userId)
  await eventually(() => sync.requestsFor(userB.userId) >= polls + 2)
  const marker: ServerMessage = { type: 'calendarsChanged', reasons: ['calendar'], refetchAll: true }
  app.sse.publish(userB.userId, marker)
  const toB = await b1.untilMessages(2)
  t.same(toB[1], marker, 'nothing of A\'s write reached B')
})

test('shutting the backend down ends every open stream and does not wait on them', async (t) => {
  const other = await buildApp(t, deps, { syncUrl: sync.url, internalAuthToken: INTERNAL_TOKEN })
  const otherUrl = `${await listen(other.app)}/api/events/stream`
  const user = await signUp(other.app, { email: uniqueEmail('shutdown'), password: `pw-${randomBytes(6).toString('hex')}` })
  const readers = await Promise.all([1, 2, 3].map(async () => await RawSseReader.open(otherUrl, user.headers)))
  t.teardown(() => { for (const reader of readers) reader.close() })
  for (const reader of readers) await reader.untilMessages(1)

  await other.app.close()
  for (const reader of readers) await reader.untilEnded()
  t.equal(readers.every((reader) => reader.ended), true, 'every client saw its stream end')
  t.equal(other.app.sse.streamCount, 0)
})
