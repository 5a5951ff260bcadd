// Ended sessions stay ended: after a sign-out, a password reset or a detected refresh-token theft,
// the access tokens of the ended sessions are refused on REST and on the stream, and the streams
// opened with them close. (Across backend processes: test/backend/ended-sessions-processes.test.ts.)
import { randomBytes } from 'node:crypto'
import tap, { test, type Test } from 'tap'
import { authFields, buildApp, listen, signIn, signUp, startDependencies, uniqueEmail, type SignedIn } from '../helper.js'
import { waitFor } from '../processes.js'
import { RawSseReader } from '../realtime/sse-reader.js'
import { defaultSseBrokerOptions } from '../../services/sse-broker.js'

const deps = await startDependencies(tap)
const { app, log } = await buildApp(tap, deps)
const streamUrl = `${await listen(app)}/api/events/stream`
// No Sync service runs here: streams replay at once instead of waiting for a feed position.
app.changeFeed.configure({ readyTimeoutMs: 50 })

const EVENT = { title: 'Standup', startDate: '2026-05-04T09:00:00Z', endDate: '2026-05-04T09:15:00Z', timeZone: 'UTC' }

async function openStream (t: Test, headers: Record<string, string>): Promise<RawSseReader> {
  const reader = await RawSseReader.open(streamUrl, headers)
  t.teardown(() => reader.close())
  return reader
}

async function restStatus (session: Pick<SignedIn, 'headers'>): Promise<{ profile: number, write: number }> {
  const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: session.headers })
  const write = await app.inject({ method: 'POST', url: '/api/event', headers: session.headers, payload: { ...EVENT, _id: randomBytes(12).toString('hex') } })
  return { profile: profile.statusCode, write: write.statusCode }
}

async function refresh (refreshToken: string) {
  return await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${refreshToken}` } })
}

async function newAccount (label: string): Promise<{ email: string, password: string, first: SignedIn }> {
  const email = uniqueEmail(label)
  const password = `pw-${randomBytes(6).toString('hex')}`
  return { email, password, first: await signUp(app, { email, password }) }
}

test('after sign-out the access token is refused on REST and cannot open a stream; the user\'s other session goes on', async (t) => {
  const { email, password, first } = await newAccount('signout')
  const second = await signIn(app, { email, password })
  t.same(await restStatus(first), { profile: 200, write: 204 }, 'the token works before sign-out')

  const signedOut = await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { ...first.headers, 'sx-auth-mode': 'header' } })
  t.equal(signedOut.statusCode, 200)
  t.same(await restStatus(first), { profile: 401, write: 401 }, 'the signed-out access token is refused on REST')
  const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: first.headers })
  t.same(profile.json(), { message: 'unauthorised' }, 'the answer sends the client to sign in, not to refresh')
  t.equal((await openStream(t, first.headers)).status, 401, 'and cannot open a stream')
  t.same(await restStatus(second), { profile: 200, write: 204 }, 'the user\'s other session is untouched')

  const stored = await app.mongo.db.collection('sessionRevocations').findOne({ userId: first.userId })
  t.equal(stored?.['reason'], 'signOut', 'the end is stored for the other backend processes')
  t.ok(stored?.['expiresAt'] instanceof Date && stored['expiresAt'].getTime() > Date.now(), 'until the session\'s access tokens have expired')
})

test('a password reset ends every session of the account on every device: REST, refresh, streams', async (t) => {
  const { email, password, first } = await newAccount('reset')
  const second = await signIn(app, { email, password })
  const other = await newAccount('bystander')
  const firstStream = await openStream(t, first.headers)
  const secondStream = await openStream(t, second.headers)
  const otherStream = await openStream(t, other.first.headers)
  await Promise.all([firstStream.untilMessages(1), secondStream.untilMessages(1), otherStream.untilMessages(1)])

  const linksBefore = log.lines().filter((line) => line.msg === 'password reset link (not delivered in test)').length
  await app.inject({ method: 'POST', url: '/api/auth/user/password/reset/token', payload: authFields({ email }) })
  const links = () => log.lines().filter((line) => line.msg === 'password reset link (not delivered in test)')
  t.ok(await waitFor(() => links().length > linksBefore, 5000), 'the reset link is logged')
  const token = new URL(String(links().at(-1)?.['passwordResetLink'])).searchParams.get('token') ?? ''
  const reset = await app.inject({ method: 'POST', url: '/api/auth/user/password/reset', payload: { token, ...authFields({ password: 'a-brand-new-pw-3' }) } })
  t.equal(reset.json().status, 'OK')

  await firstStream.untilEnded()
  await secondStream.untilEnded()
  t.ok(firstStream.ended && secondStream.ended, 'both devices\' streams closed')
  t.equal(otherStream.ended, false, 'another user\'s stream stays open')
  for (const session of [first, second]) {
    t.same(await restStatus(session), { profile: 401, write: 401 }, 'an old access token is refused on REST')
    t.equal((await refresh(session.refreshToken)).statusCode, 401, 'an old refresh token no longer refreshes')
    t.equal((await openStream(t, session.headers)).status, 401, 'an old access token opens no stream')
  }
  const fresh = await signIn(app, { email, password: 'a-brand-new-pw-3' })
  t.same(await restStatus(fresh), { profile: 200, write: 204 }, 'a sign-in with the new password works')
})

test('refresh-token theft: the original access token is refused and its stream closes', async (t) => {
  const { first } = await newAccount('theft')
  const stream = await openStream(t, first.headers)
  await stream.untilMessages(1)

  const rotated = await refresh(first.refreshToken)
  t.equal(rotated.statusCode, 200)
  const rotatedSession = { headers: { authorization: `Bearer ${String(rotated.headers['sx-access-token'])}` } }
  // The new refresh token is used once (the core now forgets the first), then the first is replayed.
  const used = await refresh(String(rotated.headers['sx-refresh-token']))
  t.equal(used.statusCode, 200)
  const replayed = await refresh(first.refreshToken)
  t.equal(replayed.statusCode, 401)
  t.same(replayed.json(), { message: 'token theft detected' })

  await stream.untilEnded()
  t.ok(stream.ended, 'the stream opened with the session closed')
  t.same(await restStatus(first), { profile: 401, write: 401 }, 'the original access token is refused')
  t.same(await restStatus(rotatedSession), { profile: 401, write: 401 }, 'and so is the rotated one')
})

test('a user\'s streams are bounded: one more closes the oldest', async (t) => {
  t.teardown(() => { app.sse.configure(defaultSseBrokerOptions) })
  t.equal(defaultSseBrokerOptions.maxStreamsPerUser, 20, 'twenty per user and process by default')
  app.sse.configure({ maxStreamsPerUser: 3 })
  const { first } = await newAccount('many-tabs')
  const readers: RawSseReader[] = []
  for (let index = 0; index < 3; index++) {
    const reader = await openStream(t, first.headers)
    await reader.untilMessages(1)
    readers.push(reader)
  }
  t.equal(app.sse.streamsOf(first.userId), 3)
  const fourth = await openStream(t, first.headers)
  t.equal(fourth.status, 200, 'the newest stream is accepted')
  await fourth.untilMessages(1)
  await readers[0]?.untilEnded()
  t.equal(readers[0]?.ended, true, 'the oldest closed')
  t.same(readers.slice(1).map((reader) => reader.ended), [false, false], 'the others stay open')
  t.equal(app.sse.streamsOf(first.userId), 3)
  t.ok(log.lines().some((line) => line.msg === 'event stream displaced by a newer one of the same user'), 'logged')
})

test('a token with a forged signature is refused with 401 while the session core answers', async (t) => {
  const { first } = await newAccount('forged')
  const [header, payload, signature] = first.accessToken.split('.') as [string, string, string]
  const forged = `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`
  const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: { authorization: `Bearer ${forged}` } })
  t.equal(profile.statusCode, 401, 'refused: the core answers, so it is the token that is wrong')
  t.same(profile.json(), { message: 'try refresh token' })
})
