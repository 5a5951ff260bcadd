import { test } from 'tap'
import { ObjectId } from 'mongodb'
import type { UserDocument } from '../../stores/users.js'
import { waitUntil } from '../processes.js'
import { signInWithProvider, startFullStack } from './stack.js'

// Provider sign-in through the whole system: the session library's sign-in-up route at the
// backend, the credential handed to the Sync service through the outbox, and the calendar imported
// (SIGNUP), then kept and pulled at the next sign-in (SIGNIN_INCREMENTAL); a grant revoked at Google
// ends the user's sessions, and the sign-in after it repairs sync (RECONNECT_REPAIR).

test('signing up with Google brings the Google calendar along; a revoked grant ends the sessions and the next sign-in repairs sync', async (t) => {
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

  // Revoked at Google, with no stream open: Sync meets invalid_grant at its next pull and tells the
  // backend, which ends every session of the user.
  const users = app.mongo.db.collection<UserDocument>('users')
  const sealedBefore = (await users.findOne({ _id: new ObjectId(first.session.userId) }))?.google?.gRefreshToken
  stack.google.control.revoke(email)
  t.equal((await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: second.session.headers })).statusCode, 200)
  await waitUntil(async () => (await app.inject({ method: 'GET', url: '/api/user/profile', headers: second.session.headers })).statusCode === 401, 'the sessions ended', 20_000)
  t.equal((await app.inject({ method: 'GET', url: range, headers: first.session.headers })).statusCode, 401, 'every session of the user, not only the newest')
  t.match(await stack.sync.syncConnections.listByUser(first.session.userId), [{ state: 'actionRequired', reason: 'authorizationRevoked' }])

  // Back at login: Google issues a new refresh token, which replaces the dead one and repairs sync.
  const third = await signInWithGoogle()
  t.equal(third.session.userId, first.session.userId)
  t.equal(third.body.summary?.mode, 'RECONNECT_REPAIR')
  const sealedAfter = (await users.findOne({ _id: new ObjectId(first.session.userId) }))?.google?.gRefreshToken
  t.ok(sealedAfter !== undefined && sealedAfter !== sealedBefore, 'the stored refresh token is replaced')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(first.session.userId))[0]?.state === 'healthy', 'sync repaired', 20_000)
  stack.google.control.insertEvent(email, { summary: 'Checkout', start: { dateTime: '2026-11-28T11:00:00+01:00', timeZone: 'Europe/Berlin' }, end: { dateTime: '2026-11-28T12:00:00+01:00', timeZone: 'Europe/Berlin' } })
  const eventsNow = async () => (await app.inject({ method: 'GET', url: range, headers: third.session.headers })).json<Array<{ title: string }>>()
  await waitUntil(async () => (await eventsNow()).some((event) => event.title === 'Checkout'), 'changes at Google arrive again', 20_000)
})
