import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { signInWithProvider, startFullStack } from './stack.js'

// Provider sign-in through the whole system: the session library's sign-in-up route at the
// backend, the credential handed to the Sync service through the outbox, and the calendar imported
// (SIGNUP), then kept and pulled at the next sign-in (SIGNIN_INCREMENTAL).

test('signing up with Google brings the Google calendar along', async (t) => {
  const stack = await startFullStack(t, { web: true })
  const email = 'grace@example.com'
  stack.google.control.createAccount({ email, name: 'Grace', timeZone: 'Europe/Berlin' })
  stack.google.control.insertEvent(email, { summary: 'Flight to Lisbon', start: { dateTime: '2026-11-26T07:00:00+01:00', timeZone: 'Europe/Berlin' }, end: { dateTime: '2026-11-26T10:00:00+01:00', timeZone: 'Europe/Berlin' } })
  const app = stack.backend.app

  async function signInWithGoogle () {
    return await signInWithProvider(stack, 'google', email)
  }

  const first = await signInWithGoogle()
  t.equal(first.body.summary?.mode, 'SIGNUP')
  const range = '/api/event?start=2026-11-01T00:00:00Z&end=2027-01-01T00:00:00Z'
  const events = async () => (await app.inject({ method: 'GET', url: range, headers: first.session.headers })).json<Array<{ title: string, origin: string }>>()
  await waitUntil(async () => (await events()).some((event) => event.title === 'Flight to Lisbon'), 'the imported calendar', 20_000)
  t.ok((await events()).every((event) => event.origin === 'providerImport'), 'imported from Google')
  const connections = await stack.sync.syncConnections.listByUser(first.session.userId)
  t.equal(connections.length, 1, 'Sync holds one Google connection for the user')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(first.session.userId))[0]?.state === 'healthy', 'a healthy connection', 20_000)

  stack.google.control.insertEvent(email, { summary: 'Dinner', start: { dateTime: '2026-11-27T19:00:00+01:00', timeZone: 'Europe/Berlin' }, end: { dateTime: '2026-11-27T21:00:00+01:00', timeZone: 'Europe/Berlin' } })
  const second = await signInWithGoogle()
  t.equal(second.session.userId, first.session.userId, 'the same user')
  t.equal(second.body.summary?.mode, 'SIGNIN_INCREMENTAL')
  await waitUntil(async () => (await events()).some((event) => event.title === 'Dinner'), 'the change since the last sign-in', 20_000)
  t.equal((await stack.sync.syncConnections.listByUser(first.session.userId)).length, 1, 'still one connection')
})
