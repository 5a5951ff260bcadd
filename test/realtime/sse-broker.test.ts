import { test } from 'tap'
import { EventSource } from 'eventsource'
import { MAX_IDS_PER_MESSAGE, serverMessageCheck, type ServerMessage } from '../../schemas/server-message.js'
import { startBrokerApp } from './broker-app.js'
import { RawSseReader, eventually } from './sse-reader.js'

const userA = '64b7f0c2a1b2c3d4e5f60001'
const userB = '64b7f0c2a1b2c3d4e5f60002'
const connectionId = '64b7f0c2a1b2c3d4e5f6c001'

const eventsChanged: ServerMessage = { type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['e1'] }

test('a stream starts with the SSE headers and the retry line, and frames are named message', async (t) => {
  const { app, url } = await startBrokerApp(t)
  const reader = await RawSseReader.open(url, { 'x-user': userA })
  t.teardown(() => reader.close())

  t.equal(reader.status, 200)
  t.equal(reader.headers['content-type'], 'text/event-stream; charset=utf-8')
  t.equal(reader.headers['cache-control'], 'no-cache, no-transform')
  t.equal(reader.headers['x-accel-buffering'], 'no')
  t.equal(reader.headers.connection, 'keep-alive')
  await reader.until((r) => r.blocks.length >= 1)
  t.equal(reader.text.startsWith('retry: 5000\n\n'), true, 'retry hint is the very first bytes')

  t.equal(app.sse.publish(userA, eventsChanged), 1)
  await reader.untilMessages(1)
  const frame = reader.blocks[1]
  t.equal(frame?.raw, `event: message\ndata: ${JSON.stringify(eventsChanged)}`)
  t.same(reader.messages(), [eventsChanged])
})

test('a stream opened for a replay gets the replay first, then what was published to it while the replay was read', async (t) => {
  const { app, url } = await startBrokerApp(t)
  const replayed = url.replace(/\/stream$/, '/replayed?replayAfterMs=300')
  const reader = await RawSseReader.open(replayed, { 'x-user': userA })
  t.teardown(() => reader.close())
  await eventually(() => app.sse.streamsOf(userA) === 1)
  t.equal(app.sse.publish(userA, eventsChanged), 1, 'published before the replay: kept for the stream')
  await reader.untilMessages(2)
  t.same(reader.messages().map((message) => (message as { type: string }).type), ['userMetadataChanged', 'eventsChanged'])

  // One that waits for its replay past the bound is cut off; its client reconnects.
  const slow = await RawSseReader.open(url.replace(/\/stream$/, '/replayed?replayAfterMs=60000'), { 'x-user': userB })
  t.teardown(() => slow.close())
  await eventually(() => app.sse.streamsOf(userB) === 1)
  for (let message = 0; message < 65; message++) app.sse.publish(userB, eventsChanged)
  await eventually(() => app.sse.streamsOf(userB) === 0)
  t.same(slow.messages(), [], 'nothing was written before the replay')
})

test('every named publish operation writes a schema-valid message event that EventSource receives', async (t) => {
  const { app, url } = await startBrokerApp(t)
  const source = new EventSource(url, { fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, 'x-user': userA } }) })
  t.teardown(() => source.close())
  const received: unknown[] = []
  source.addEventListener('message', (event) => { received.push(JSON.parse(event.data)) })
  await new Promise<void>((resolve) => source.addEventListener('open', () => resolve(), { once: true }))
  await eventually(() => app.sse.streamsOf(userA) === 1)

  const counts = [
    app.sse.publishEventsChanged(userA, { reasons: ['calendar'], refetchAll: false, calendarIds: ['c1'] }),
    app.sse.publishCalendarsChanged(userA, { reasons: ['connection'], refetchAll: false, connectionIds: [connectionId] }),
    app.sse.publishSyncStatusChanged(userA, { connectionId, status: 'attention', code: 'CONNECTION_REVOKED', retryable: false }),
    app.sse.publishImportCompleted(userA, { connectionId, operation: 'full', counts: { calendarsDone: 2, calendarsTotal: 2, eventsImported: 10 } }),
    app.sse.publishUserMetadataChanged(userA, { session: { userId: userA, metadata: {} }, sync: null })
  ]
  t.same(counts, [1, 1, 1, 1, 1])
  await eventually(() => received.length === 5)
  t.same(received.map((message) => (message as ServerMessage).type),
    ['eventsChanged', 'calendarsChanged', 'syncStatusChanged', 'importCompleted', 'userMetadataChanged'])
  for (const message of received) t.ok(serverMessageCheck.Check(message), 'frame is schema-valid')
})

test('fan-out reaches every stream of the user and no stream of another user', async (t) => {
  const { app, url } = await startBrokerApp(t)
  const a1 = await RawSseReader.open(url, { 'x-user': userA })
  const a2 = await RawSseReader.open(url, { 'x-user': userA })
  const b1 = await RawSseReader.open(url, { 'x-user': userB })
  t.teardown(() => { a1.close(); a2.close(); b1.close() })
  await eventually(() => app.sse.streamCount === 3)
  t.equal(app.sse.userCount, 2)

  t.equal(app.sse.publish(userA, eventsChanged), 2)
  const forB: ServerMessage = { type: 'calendarsChanged', reasons: ['calendar'], refetchAll: true }
  t.equal(app.sse.publish(userB, forB), 1)
  await a1.untilMessages(1)
  await a2.untilMessages(1)
  await b1.untilMessages(1)
  t.same(a1.messages(), [eventsChanged])
  t.same(a2.messages(), [eventsChanged])
  t.same(b1.messages(), [forB], 'B sees only its own message')
  t.equal(app.sse.publish('64b7f0c2a1b2c3d4e5f6ffff', eventsChanged), 0, 'a user without streams gets nothing')
})

test('a message that fails the schema is logged and never written', async (t) => {
  const { app, url, logs } = await startBrokerApp(t)
  const reader = await RawSseReader.open(url, { 'x-user': userA })
  t.teardown(() => reader.close())
  await eventually(() => app.sse.streamsOf(userA) === 1)

  const invalid = { type: 'eventsChanged', reasons: [], refetchAll: 'yes' } as unknown as ServerMessage
  t.equal(app.sse.publish(userA, invalid), 0)
  const unknownType = { type: 'somethingElse' } as unknown as ServerMessage
  t.equal(app.sse.publish(userA, unknownType), 0)
  const extraField = { ...eventsChanged, secret: 'x' } as unknown as ServerMessage
  t.equal(app.sse.publish(userA, extraField), 0)
  t.equal(app.sse.publish(userA, eventsChanged), 1)
  await reader.untilMessages(1)
  t.same(reader.messages(), [eventsChanged], 'only the valid message reached the client')
  const rejected = logs.find('server message failed its schema and was not written')
  t.equal(rejected.length, 3)
  t.equal(rejected[0]?.level, 50, 'logged at error level')
  t.equal(rejected[0]?.messageType, 'eventsChanged')
  t.equal(rejected[1]?.messageType, 'somethingElse')
})

test('comment heartbeats arrive at the configured interval', async (t) => {
  const { url } = await startBrokerApp(t, { realtime: { heartbeatIntervalMs: 30 } })
  const reader = await RawSseReader.open(url, { 'x-user': userA })
  t.teardown(() => reader.close())
  await reader.until((r) => r.blocks.filter((block) => block.comments.includes('keepalive')).length >= 3)
  const heartbeat = reader.blocks.find((block) => block.comments.length > 0)
  t.equal(heartbeat?.raw, ': keepalive', 'a heartbeat is a bare comment line')
  t.equal(reader.messages().length, 0, 'heartbeats are not messages')
})

test('a stream ends after its planned lifetime and is unregistered', async (t) => {
  const { app, url, logs } = await startBrokerApp(t, { realtime: { lifetimeMs: 100 } })
  const reader = await RawSseReader.open(url, { 'x-user': userA })
  t.teardown(() => reader.close())
  await reader.untilEnded()
  t.equal(reader.text, 'retry: 5000\n\n', 'ended cleanly after the retry line')
  await eventually(() => app.sse.streamCount === 0)
  t.equal(app.sse.userCount, 0)
  t.ok(logs.find('event stream closed').some((line) => line.reason === 'lifetime'))
})

test('closeSession ends only the streams opened with that session', async (t) => {
  const { app, url } = await startBrokerApp(t)
  const s1a = await RawSseReader.open(url, { 'x-user': userA, 'x-session': 'session-1' })
  const s1b = await RawSseReader.open(url, { 'x-user': userA, 'x-session': 'session-1' })
  const s2 = await RawSseReader.open(url, { 'x-user': userA, 'x-session': 'session-2' })
  t.teardown(() => { s1a.close(); s1b.close(); s2.close() })
  await eventually(() => app.sse.streamCount === 3)

  t.equal(app.sse.closeSession('session-1'), 2)
  await s1a.untilEnded()
  await s1b.untilEnded()
  t.equal(app.sse.streamsOf(userA), 1)
  t.equal(app.sse.closeSession('session-1'), 0, 'closing again finds nothing')
  t.equal(app.sse.publish(userA, eventsChanged), 1)
  await s2.untilMessages(1)
  t.equal(s2.ended, false, 'the other session keeps its stream')
})

test('a client that stops reading is cut off once its pending output passes the bound', async (t) => {
  const { app, url, logs } = await startBrokerApp(t, { realtime: { maxPendingBytes: 16 * 1024 } })
  const stalled = await RawSseReader.open(url, { 'x-user': userA })
  const healthy = await RawSseReader.open(url, { 'x-user': userA })
  t.teardown(() => { stalled.close(); healthy.close() })
  await eventually(() => app.sse.streamCount === 2)
  stalled.pause()

  const big: ServerMessage = {
    type: 'eventsChanged',
    reasons: ['event'],
    refetchAll: false,
    eventIds: Array.from({ length: MAX_IDS_PER_MESSAGE }, (_, i) => `event-${i}-${'x'.repeat(180)}`)
  }
  // Kernel socket buffers absorb the first megabytes; keep publishing, at the pace the reading
  // client keeps up with, until the stalled stream goes.
  let published = 0
  while (app.sse.streamsOf(userA) === 2 && published < 5000) {
    const written = app.sse.publish(userA, big)
    if (written === 0) break
    published++
    await healthy.until((r) => r.messages().length === published)
  }
  t.equal(app.sse.streamsOf(userA), 1, 'the stalled stream was removed')
  const cut = logs.find('event stream client stopped reading; stream cut off')
  t.equal(cut.length, 1)
  t.ok(Number(cut[0]?.pendingBytes) > 16 * 1024)
  app.sse.publish(userA, eventsChanged)
  await healthy.until((r) => r.messages().length === published + 1)
  t.equal(healthy.ended, false, 'the reading client keeps its stream')
})

test('a client that disconnects is unregistered and its user goes idle', async (t) => {
  const { app, url } = await startBrokerApp(t)
  const activated: string[] = []
  const idled: string[] = []
  app.sse.onUserActive((userId) => activated.push(userId))
  app.sse.onUserIdle((userId) => idled.push(userId))

  const first = await RawSseReader.open(url, { 'x-user': userA })
  const second = await RawSseReader.open(url, { 'x-user': userA })
  await eventually(() => app.sse.streamCount === 2)
  t.same(activated, [userA], 'active once for the first stream')
  first.close()
  await eventually(() => app.sse.streamCount === 1)
  t.same(idled, [], 'not idle while a stream remains')
  second.close()
  await eventually(() => app.sse.streamCount === 0)
  t.same(idled, [userA])
  t.equal(app.sse.userCount, 0)
})

test('closing the app ends every open stream', async (t) => {
  const { app, url } = await startBrokerApp(t)
  const readers = await Promise.all([userA, userA, userB].map((userId) => RawSseReader.open(url, { 'x-user': userId })))
  await eventually(() => app.sse.streamCount === 3)
  await app.close()
  for (const reader of readers) {
    await reader.untilEnded()
    t.equal(reader.ended, true)
  }
  t.equal(app.sse.streamCount, 0)
})
