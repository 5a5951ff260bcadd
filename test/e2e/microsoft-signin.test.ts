import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { defaultMicrosoftCalendar, signInWithProvider, startFullStack, withMicrosoft } from './stack.js'

// A Microsoft sign-in through the whole system: the session library's sign-in-up route at the
// backend (Microsoft's consent asks for calendar access too), the refresh token handed to the Sync
// service through the outbox, and the Microsoft calendar imported; the next sign-in keeps the
// connection and pulls.

test('signing up with Microsoft brings the Microsoft calendar along', async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { web: true, microsoft: true }))
  const email = 'marie@example.com'
  stack.microsoft.control.createAccount({ email, name: 'Marie', timeZone: 'W. Europe Standard Time' })
  const calendarId = defaultMicrosoftCalendar(stack, email)
  const at = (dateTime: string) => ({ dateTime, timeZone: 'W. Europe Standard Time' })
  stack.microsoft.control.insertEvent(calendarId, { subject: 'Train to Lyon', start: at('2026-11-26T07:00:00'), end: at('2026-11-26T10:00:00') })
  const app = stack.backend.app

  async function signInWithMicrosoft () {
    const signedIn = await signInWithProvider(stack, 'microsoft', email)
    t.match(signedIn.askedScope, /Calendars\.ReadWrite/, 'one consent for the sign-in and the calendar')
    return signedIn
  }

  const first = await signInWithMicrosoft()
  t.match(first.body.summary, { provider: 'microsoft', calendar: 'import' })
  const range = '/api/event?start=2026-11-01T00:00:00Z&end=2027-01-01T00:00:00Z'
  const events = async () => (await app.inject({ method: 'GET', url: range, headers: first.session.headers })).json<Array<{ title: string, origin: string, startDate: string }>>()
  await waitUntil(async () => (await events()).some((event) => event.title === 'Train to Lyon'), 'the imported calendar', 20_000)
  const train = (await events()).find((event) => event.title === 'Train to Lyon')
  t.equal(Date.parse(train?.startDate ?? ''), Date.parse('2026-11-26T06:00:00Z'), 'at its time in its Windows zone')
  t.equal(train?.origin, 'providerImport')
  const connections = await stack.sync.syncConnections.listByUser(first.session.userId)
  t.match(connections, [{ provider: 'microsoft' }], 'Sync holds one Microsoft connection for the user')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(first.session.userId))[0]?.state === 'healthy', 'a healthy connection', 20_000)

  stack.microsoft.control.insertEvent(calendarId, { subject: 'Dinner in Lyon', start: at('2026-11-27T19:00:00'), end: at('2026-11-27T21:00:00') })
  const second = await signInWithMicrosoft()
  t.equal(second.session.userId, first.session.userId, 'the same user')
  t.match(second.body.summary, { provider: 'microsoft', calendar: 'incremental' })
  await waitUntil(async () => (await events()).some((event) => event.title === 'Dinner in Lyon'), 'the change since the last sign-in', 20_000)
  t.equal((await stack.sync.syncConnections.listByUser(first.session.userId)).length, 1, 'still one connection')
})
