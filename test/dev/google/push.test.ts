// Push notifications as the Calendar API's guide describes them: events.watch opens a channel, a
// `sync` message comes first, then one message per change, with the X-Goog-* headers and no body,
// until channels.stop or expiry.
import { test } from 'tap'
import { calendar } from '@googleapis/calendar'
import type { calendar_v3 as CalendarV3 } from '@googleapis/calendar'
import { CALENDAR_SCOPE, connect, control, startReceiver, startStandIn, testClock } from './harness.js'
import type { GoogleStandIn } from '../../../dev/google/index.js'

const ALICE = 'alice@example.com'
const EVENT = { start: { dateTime: '2030-05-02T08:00:00Z' }, end: { dateTime: '2030-05-02T09:00:00Z' } }

async function calendarClient (google: GoogleStandIn, email: string): Promise<CalendarV3.Calendar> {
  const { client } = await connect(google, email, [CALENDAR_SCOPE])
  return calendar({ version: 'v3', rootUrl: google.rootUrl, auth: client })
}

async function failure (promise: Promise<unknown>): Promise<{ status: number | undefined, reason: string | undefined }> {
  try {
    await promise
  } catch (err) {
    const response = (err as { response?: { status?: number, data?: { error?: { errors?: Array<{ reason: string }> } } } }).response
    if (response === undefined) throw err
    return { status: response.status, reason: response.data?.error?.errors?.[0]?.reason }
  }
  throw new Error('the call succeeded')
}

test('watch: a sync message first, then one message per change, with Google\'s headers', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE, calendars: [{ summary: 'Work' }] }] })
  const receiver = await startReceiver(t)
  const api = await calendarClient(google, ALICE)
  const watched = await api.events.watch({
    calendarId: 'primary',
    requestBody: { id: 'channel-1', type: 'web_hook', address: receiver.url, token: 'target=calendar-service', params: { ttl: '3600' } }
  })
  t.match(watched.data, { kind: 'api#channel', id: 'channel-1', resourceId: String, resourceUri: `${google.url}/calendar/v3/calendars/primary/events?alt=json`, token: 'target=calendar-service' })
  const expiration = Number(watched.data.expiration)
  t.ok(Math.abs(expiration - (Date.now() + 3600 * 1000)) < 5000, 'expiration in ms, ttl seconds from now')

  const [sync] = await receiver.waitForMessages(1)
  t.match(sync?.headers, {
    'x-goog-channel-id': 'channel-1',
    'x-goog-channel-token': 'target=calendar-service',
    'x-goog-channel-expiration': new Date(expiration).toUTCString(),
    'x-goog-resource-id': watched.data.resourceId,
    'x-goog-resource-uri': watched.data.resourceUri,
    'x-goog-resource-state': 'sync',
    'x-goog-message-number': '1'
  })
  t.equal(sync?.body, '', 'no body')

  // A change by another device, then one by the application itself: both are changes of the calendar.
  await control(google, 'POST', `/calendars/${ALICE}/events`, { summary: 'From the phone', ...EVENT })
  await api.events.insert({ calendarId: 'primary', requestBody: { summary: 'From the app', ...EVENT } })
  const messages = await receiver.waitForMessages(3)
  t.same(messages.map((message) => message.headers['x-goog-resource-state']), ['sync', 'exists', 'exists'])
  const numbers = messages.map((message) => Number(message.headers['x-goog-message-number']))
  t.ok(numbers[1]! > numbers[0]! && numbers[2]! > numbers[1]!, `message numbers grow: ${numbers.join(', ')}`)

  // A change elsewhere (another calendar) is not this channel's business.
  const work = (await control<{ calendars: Array<{ id: string, summary: string }> }>(google, 'GET', `/accounts/${ALICE}`)).body.calendars.find((c) => c.summary === 'Work')
  await control(google, 'POST', `/calendars/${work?.id ?? ''}/events`, { summary: 'Elsewhere', ...EVENT })
  // A bulk seed is one change.
  await control(google, 'POST', `/calendars/${ALICE}/seed`, { generate: { singles: 50 } })
  await google.notificationsSettled()
  t.equal(receiver.messages.length, 4)
})

test('channels.stop and expiry end delivery; a second channel without a token gets no token header', async (t) => {
  const clock = testClock()
  const google = await startStandIn(t, { clock: clock.now, accounts: [{ email: ALICE }, { email: 'bob@example.com' }] })
  const receiver = await startReceiver(t)
  const api = await calendarClient(google, ALICE)
  const first = await api.events.watch({ calendarId: 'primary', requestBody: { id: 'to-stop', type: 'web_hook', address: receiver.url } })
  const second = await api.events.watch({ calendarId: 'primary', requestBody: { id: 'to-expire', type: 'web_hook', address: `${receiver.url}?second`, params: { ttl: '60' } } })
  await receiver.waitForMessages(2)
  t.notOk(receiver.messages.some((message) => 'x-goog-channel-token' in message.headers), 'no token given, no token header')

  t.same(await failure(api.events.watch({ calendarId: 'primary', requestBody: { id: 'to-stop', type: 'web_hook', address: receiver.url } })),
    { status: 400, reason: 'channelIdNotUnique' })
  t.same(await failure(api.events.watch({ calendarId: 'primary', requestBody: { id: 'plain-http', type: 'web_hook', address: 'http://example.com/hook' } })),
    { status: 400, reason: 'push.webhookUrlNotHttps' })

  const bob = await calendarClient(google, 'bob@example.com')
  t.equal((await failure(bob.channels.stop({ requestBody: { id: 'to-stop', resourceId: first.data.resourceId ?? '' } }))).status, 404, 'only its owner stops a channel')
  const stopped = await api.channels.stop({ requestBody: { id: 'to-stop', resourceId: first.data.resourceId ?? '' } })
  t.equal(stopped.status, 204)
  t.equal((await failure(api.channels.stop({ requestBody: { id: 'to-stop', resourceId: first.data.resourceId ?? '' } }))).status, 404)

  await control(google, 'POST', `/calendars/${ALICE}/events`, { summary: 'After stop', ...EVENT })
  await google.notificationsSettled()
  t.same(receiver.messages.slice(2).map((message) => message.headers['x-goog-channel-id']), ['to-expire'], 'the stopped channel gets nothing')

  clock.advance(61 * 1000)
  await control(google, 'POST', `/calendars/${ALICE}/events`, { summary: 'After expiry', ...EVENT })
  await google.notificationsSettled()
  t.equal(receiver.messages.length, 3, 'the expired channel gets nothing')
  const channels = (await control<{ channels: Array<{ id: string, state: string }> }>(google, 'GET', '/channels')).body.channels
  t.same(channels.map(({ id, state }) => ({ id, state })), [{ id: 'to-stop', state: 'stopped' }, { id: 'to-expire', state: 'expired' }])
  t.equal(second.data.expiration, String(clock.now() - 61 * 1000 + 60 * 1000))
})

test('a failing receiver does not break the stand-in: 5xx is retried then dropped, 4xx dropped at once', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }], notificationRetries: 2, notificationRetryDelayMs: 10 })
  const receiver = await startReceiver(t)
  const api = await calendarClient(google, ALICE)
  await api.events.watch({ calendarId: 'primary', requestBody: { id: 'flaky', type: 'web_hook', address: receiver.url } })
  await receiver.waitForMessages(1)

  receiver.respondWith(503)
  await control(google, 'POST', `/calendars/${ALICE}/events`, { summary: 'One', ...EVENT })
  await google.notificationsSettled()
  t.equal(receiver.messages.length, 4, 'one attempt and two retries')

  receiver.respondWith(404)
  await control(google, 'POST', `/calendars/${ALICE}/events`, { summary: 'Two', ...EVENT })
  await google.notificationsSettled()
  t.equal(receiver.messages.length, 5, 'no retry after a 4xx')

  await api.events.watch({ calendarId: 'primary', requestBody: { id: 'nobody-listens', type: 'web_hook', address: 'http://127.0.0.1:9/hook' } })
  await google.notificationsSettled()
  t.equal((await api.events.list({ calendarId: 'primary' })).status, 200, 'still serving')
  const counts = (await control<{ notifications: Record<string, number> }>(google, 'GET', '/counters')).body.notifications
  t.match(counts, { sync: 1, exists: 0, failed: 3 })
})

test('a deleted calendar: its watchers get not_exists, then nothing', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE, calendars: [{ id: 'team@group.calendar.google.com', summary: 'Team' }] }] })
  const receiver = await startReceiver(t)
  const api = await calendarClient(google, ALICE)
  await api.events.watch({ calendarId: 'team@group.calendar.google.com', requestBody: { id: 'team', type: 'web_hook', address: receiver.url } })
  await receiver.waitForMessages(1)
  t.equal((await control(google, 'DELETE', '/calendars/team@group.calendar.google.com')).status, 204)
  await google.notificationsSettled()
  t.same(receiver.messages.map((message) => message.headers['x-goog-resource-state']), ['sync', 'not_exists'])
  t.equal((await failure(api.events.list({ calendarId: 'team@group.calendar.google.com' }))).status, 404)
})
