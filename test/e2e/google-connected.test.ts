import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { connectGoogle, startFullStack, userWithGoogleAccount, primaryCalendarId } from './stack.js'

// A Google calendar connected through the Sync service (POST /api/auth/connections/begin, no
// credential on the backend's user record): the profile and the event writes agree with Sync that
// the user is connected.

test('connected through Sync: the profile says so, and writes do not claim the provider effect is skipped', async (t) => {
  const stack = await startFullStack(t)
  const user = await userWithGoogleAccount(stack, 'cora')
  const app = stack.backend.app
  const profile = async () => (await app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })).json<{ providerConnected: boolean }>()
  t.equal((await profile()).providerConnected, false, 'not connected before')

  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)
  await waitUntil(async () => (await profile()).providerConnected, 'providerConnected in the profile', 10_000)
  t.pass('the profile says connected once Sync has imported the calendar')

  const id = 'c9'.repeat(12)
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: id, calendarId: await primaryCalendarId(app, user.headers), title: 'Call Ada', startDate: '2026-12-03T10:00:00Z', endDate: '2026-12-03T10:30:00Z' } })).statusCode, 204)
  await waitUntil(() => stack.google.control.storedEvents(user.email).some((event) => event['summary'] === 'Call Ada'), 'the event at Google', 20_000)
  const skipped = stack.backend.log.lines().filter((line) => line['userId'] === user.userId && line['reason'] === 'MissingGoogleRefreshToken')
  t.same(skipped, [], 'no "provider effect skipped" for a write that reaches Google')
})
