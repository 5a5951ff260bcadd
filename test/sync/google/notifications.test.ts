// Inbound notifications from the Google stand-in (specification, "Inbound provider change
// notifications"): a user away for longer than the configured days has the sync cancelled and the
// channel stopped at Google; the notification must name the channel's resource.
import { test } from 'tap'
import { ALICE, connectAndSync, SAMPLE_EVENTS, startStack } from './harness.js'

const DAY_MS = 24 * 60 * 60_000

test('a notification for a user inactive longer than sync.inactiveUserDays stops the channel at Google and syncs nothing', async (t) => {
  const stack = await startStack(t, {
    accounts: [{ email: ALICE, timeZone: 'UTC' }, { email: 'bo@example.com', timeZone: 'UTC' }],
    sync: { inactiveUserDays: 2 }
  })
  const alice = await connectAndSync(stack, ALICE)
  const bo = await connectAndSync(stack, 'bo@example.com')
  await stack.google.notificationsSettled()
  const [aliceWatch] = await stack.sync.syncWatches.listByConnection(alice.connectionId)
  const [boWatch] = await stack.sync.syncWatches.listByConnection(bo.connectionId)

  // Three days on (the channels live seven): Alice polled her stream an hour ago, Bo was last seen
  // connecting, longer ago than the two configured days.
  stack.clock.advance(3 * DAY_MS)
  await stack.sync.syncActivity.touch([alice.userId], new Date(stack.clock.now().getTime() - 60 * 60_000))
  const batchesBefore = stack.backend.batches.length
  stack.google.control.insertEvent(ALICE, { ...SAMPLE_EVENTS.allDay, summary: 'Alice\'s change' })
  stack.google.control.insertEvent('bo@example.com', { ...SAMPLE_EVENTS.allDay, summary: 'Bo\'s change' })
  await stack.google.notificationsSettled()

  const channels = stack.google.control.listChannels()
  t.equal(channels.find((channel) => channel.id === boWatch?._id)?.state, 'stopped', 'Bo\'s channel is stopped at Google')
  t.same(await stack.sync.syncWatches.listByConnection(bo.connectionId), [], 'and forgotten by Sync')
  t.equal(channels.find((channel) => channel.id === aliceWatch?._id)?.state, 'active', 'Alice\'s channel stays')
  t.match(await stack.sync.syncJobQueue.list(), [{ type: 'pull', connectionId: alice.connectionId }], 'only Alice\'s calendar is pulled')
  t.equal((await stack.sync.syncJobQueue.list()).length, 1)
  await stack.drain()
  const pulled = stack.backend.batches.slice(batchesBefore)
  t.same(pulled.flatMap((batch) => batch.events.map((event) => event.content?.title)), ['Alice\'s change'], 'the backend gets Alice\'s change and nothing of Bo\'s')
  t.ok(stack.logs.some((line) => line['msg'] === 'notification for a user inactive longer than sync.inactiveUserDays: channel stopped, nothing pulled' && line['channelId'] === boWatch?._id), 'the stop is logged with its channel')

  // Bo's next change reaches nobody: Google no longer calls.
  stack.google.control.insertEvent('bo@example.com', { ...SAMPLE_EVENTS.timed, summary: 'Later' })
  await stack.google.notificationsSettled()
  t.same(await stack.sync.syncJobQueue.list(), [], 'nothing queued')
})

test('a notification must name the channel\'s resource: another one, or none, changes nothing', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'UTC' }] })
  const { connectionId } = await connectAndSync(stack)
  await stack.google.notificationsSettled()
  const [watch] = await stack.sync.syncWatches.listByConnection(connectionId)
  // Sync keeps only a digest of each channel's token, so the test adds a channel of its own on the
  // same calendar and resource, with a token it knows, as Google would present it.
  const token = 'a-token-only-this-channel-and-google-know'
  if (watch === undefined) throw new Error('the connect made no channel')
  const { userId, calendarId, resourceId, expiresAt } = watch
  await stack.sync.syncWatches.add({ channelId: 'second-channel', token, userId, connectionId, calendarId, resourceId, expiresAt })
  const headers: Record<string, string> = {
    'x-goog-channel-id': 'second-channel',
    'x-goog-channel-token': token,
    'x-goog-resource-id': resourceId,
    'x-goog-resource-state': 'exists',
    'x-goog-message-number': '2'
  }
  const send = async (changed: Record<string, string | undefined>) => {
    const sent = Object.fromEntries(Object.entries({ ...headers, ...changed }).filter((entry): entry is [string, string] => entry[1] !== undefined))
    return await fetch(`${stack.syncUrl}/webhooks/google`, { method: 'POST', headers: sent })
  }

  const other = await send({ 'x-goog-resource-id': 'another-calendars-resource' })
  t.equal(other.status, 401, 'the channel\'s token with another resource is refused')
  const none = await send({ 'x-goog-resource-id': undefined })
  t.equal(none.status, 400, 'a notification without a resource id is malformed')
  t.match(await none.json(), { statusCode: 400 })
  t.same(await stack.sync.syncJobQueue.list(), [], 'neither queued a pull')

  const right = await send({})
  t.equal(right.status, 204, 'channel, token and resource together')
  t.match(await stack.sync.syncJobQueue.list(), [{ type: 'pull', connectionId, payload: { calendarId: ALICE } }], 'name the user\'s calendar to pull')
})

test('a message number the channel has seen queues nothing: a redelivery, or a copy that reached another Sync process first', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'UTC' }] })
  const { connectionId } = await connectAndSync(stack)
  await stack.google.notificationsSettled()
  await stack.drain()
  const [watch] = await stack.sync.syncWatches.listByConnection(connectionId)
  if (watch === undefined) throw new Error('the connect made no channel')
  const token = 'a-token-only-this-channel-and-google-know'
  const { userId, calendarId, resourceId, expiresAt } = watch
  await stack.sync.syncWatches.add({ channelId: 'numbered-channel', token, userId, connectionId, calendarId, resourceId, expiresAt })
  const send = async (messageNumber: string | undefined) => await fetch(`${stack.syncUrl}/webhooks/google`, {
    method: 'POST',
    headers: {
      'x-goog-channel-id': 'numbered-channel',
      'x-goog-channel-token': token,
      'x-goog-resource-id': resourceId,
      'x-goog-resource-state': 'exists',
      ...(messageNumber === undefined ? {} : { 'x-goog-message-number': messageNumber })
    }
  })
  const pulls = async () => (await stack.sync.syncJobQueue.list()).filter((job) => job.type === 'pull').length

  t.equal((await send('5')).status, 204)
  t.equal(await pulls(), 1, 'message 5 queues a pull')
  await stack.drain()
  t.equal((await send('5')).status, 204, 'message 5 again is acknowledged')
  t.equal((await send('3')).status, 204, 'so is an older one')
  t.equal(await pulls(), 0, 'neither queues a pull')
  t.equal((await send('9')).status, 204)
  t.equal(await pulls(), 1, 'a newer message queues one')
  await stack.drain()
  t.equal((await send('not-a-number')).status, 204)
  t.equal(await pulls(), 1, 'a number that is not one is not used to leave a message out')
  await stack.drain()
  t.equal((await send(undefined)).status, 204)
  t.equal(await pulls(), 1, 'nor is a message without a number')
})
