// The client module's session handling against a real app (test/helper.ts: the backend as built for
// production, the session-core stand-in) whose access tokens live three seconds, as a real core is
// configured with access_token_validity: the expiry check from the front token, one refresh for many
// concurrent calls, re-authentication once the session has ended elsewhere, and a stream that
// renews itself before its token expires.
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import tap, { test } from 'tap'
import { buildApp, listen, startDependencies, uniqueEmail } from '../helper.js'
import { waitUntil } from '../processes.js'
import { CalendarClient, MemoryTokenStore, SessionEndedError, UnavailableError, type FetchLike, type StreamStatus } from '../../client/index.js'

const realCore = process.env.SESSIONS_URI !== undefined
const deps = await startDependencies(tap, { accessTokenValiditySec: 3 })
const { app, log } = await buildApp(tap, deps)
const apiUrl = `${await listen(app)}/api`
// No Sync service here: a new stream waits this long for the change feed before its replay.
app.changeFeed.configure({ readyTimeoutMs: 100 })

/** A fetch that records every request the client sends, as `METHOD /path`, and every status it got. */
function countingFetch (): { fetch: FetchLike, sent: string[], answers: number[] } {
  const sent: string[] = []
  const answers: number[] = []
  return {
    sent,
    answers,
    fetch: async (url, init) => {
      sent.push(`${init.method} ${new URL(url).pathname}`)
      const response = await fetch(url, init)
      answers.push(response.status)
      return response
    }
  }
}

function newAccount (label: string) {
  return { name: label, email: uniqueEmail(label), password: `pw-${randomBytes(6).toString('hex')}` }
}

async function untilExpired (client: CalendarClient): Promise<void> {
  const expiresAt = await client.accessTokenExpiresAt()
  if (expiresAt === null) throw new Error('not signed in')
  await sleep(Math.max(0, expiresAt - Date.now()) + 100)
}

test('an expired access token (read from the front token) is refreshed once for five concurrent calls', { skip: realCore && 'token lifetimes of a real core are its own' }, async (t) => {
  const counted = countingFetch()
  const store = new MemoryTokenStore()
  const client = new CalendarClient({ apiUrl, fetch: counted.fetch, tokenStore: store })
  const account = newAccount('expiry')
  const signedUp = await client.signUp(account)
  t.equal(signedUp.status, 'OK')
  const userId = signedUp.status === 'OK' ? signedUp.userId : ''
  t.match(userId, /^[0-9a-f]{24}$/, 'the front token names the canonical user id')
  const first = store.load()

  await untilExpired(client)
  const profiles = await Promise.all(Array.from({ length: 5 }, async () => await client.profile()))
  t.same(profiles.map((profile) => profile.id), Array(5).fill(userId), 'every call answered for the user')
  t.same(counted.sent.filter((request) => request === 'POST /api/auth/refresh'), ['POST /api/auth/refresh'], 'exactly one refresh was sent')
  t.notOk(counted.answers.includes(401), 'the expiry was seen before the calls, so none was refused')
  t.not(store.load()?.accessToken, first?.accessToken, 'the new tokens are stored')
  t.not(store.load()?.refreshToken, first?.refreshToken, 'the refresh token rotated too')
})

test('a token the client believes valid but the server finds expired: the 401s share one refresh and every call is retried once', { skip: realCore && 'token lifetimes of a real core are its own' }, async (t) => {
  const counted = countingFetch()
  // A client clock a minute behind the server's: the expiry check passes, the server refuses.
  const client = new CalendarClient({ apiUrl, fetch: counted.fetch, now: () => Date.now() - 60_000 })
  const account = newAccount('skew')
  await client.signUp(account)
  await untilExpired(client)
  const profiles = await Promise.all(Array.from({ length: 4 }, async () => await client.profile()))
  t.equal(profiles.length, 4)
  t.ok(profiles.every((profile) => profile.email === account.email))
  t.equal(counted.sent.filter((request) => request === 'POST /api/auth/refresh').length, 1, 'one refresh for four refusals')
  t.equal(counted.answers.filter((status) => status === 401).length, 4, 'each call was refused once with the old token')
  t.equal(counted.sent.filter((request) => request === 'GET /api/user/profile').length, 8, 'and retried once with the new one')
})

test('a session ended elsewhere (a password reset on another device) calls the re-auth callback once and forgets the tokens', async (t) => {
  const account = newAccount('revoked')
  const reauth: string[] = []
  const store = new MemoryTokenStore()
  const client = new CalendarClient({ apiUrl, tokenStore: store, onReauthRequired: (reason) => { reauth.push(reason) } })
  t.equal((await client.signUp(account)).status, 'OK')
  t.equal((await client.profile()).email, account.email)

  // Another device: forgot password, the link from the log (nodeEnv test), a new password.
  const other = new CalendarClient({ apiUrl })
  const asked = await fetch(`${apiUrl}/auth/user/password/reset/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', rid: 'emailpassword' },
    body: JSON.stringify({ formFields: [{ id: 'email', value: account.email }] })
  })
  t.equal(asked.status, 200)
  let link: string | undefined
  await waitUntil(() => {
    link = log.lines().map((line) => line.passwordResetLink).find((candidate) => typeof candidate === 'string' && candidate.includes('token=')) as string | undefined
    return link !== undefined
  }, 'the reset link in the log', 10_000)
  const token = new URL(link ?? 'http://missing.invalid/').searchParams.get('token') ?? ''
  const reset = await fetch(`${apiUrl}/auth/user/password/reset`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', rid: 'emailpassword' },
    body: JSON.stringify({ token, formFields: [{ id: 'password', value: 'a-new-password-9' }] })
  })
  t.match(await reset.json(), { status: 'OK' })

  const outcomes = await Promise.allSettled([client.profile(), client.listEvents({ start: '2026-11-01T00:00:00Z', end: '2026-11-08T00:00:00Z' })])
  t.ok(outcomes.every((outcome) => outcome.status === 'rejected' && outcome.reason instanceof SessionEndedError), 'both calls end with SessionEndedError')
  t.same(reauth, ['refreshRefused'], 'the app was asked once to sign the person in again')
  t.equal(store.load(), null, 'the dead tokens are gone')
  await t.rejects(client.profile(), SessionEndedError, 'later calls say so at once')
  t.same(reauth, ['refreshRefused'], 'and are not reported again')

  t.equal((await client.signIn({ email: account.email, password: 'a-new-password-9' })).status, 'OK', 'a new sign-in')
  t.equal((await client.profile()).email, account.email, 'works again')
  t.equal((await other.signIn({ email: account.email, password: account.password })).status, 'WRONG_CREDENTIALS_ERROR')
})

test('a stream renews itself before its access token expires, with a fresh token, and never drops', { skip: realCore && 'token lifetimes of a real core are its own' }, async (t) => {
  const counted = countingFetch()
  const client = new CalendarClient({ apiUrl, fetch: counted.fetch })
  await client.signUp(newAccount('renew'))
  const statuses: StreamStatus[] = []
  const replays: string[] = []
  const stream = client.stream({
    onStatus: (status) => { statuses.push(status) },
    onUserMetadata: (message) => { replays.push(message.session.userId) }
  })
  t.teardown(() => { stream.close() })
  // Three-second tokens: the server ends each stream when its token expires.
  await waitUntil(() => stream.connectionsOpened >= 4 && replays.length >= 4, 'four streams in a row', 20_000)
  t.notOk(statuses.some((status) => status.state === 'retrying'), 'no stream ended before the next was open')
  t.same(statuses.filter((status) => status.state === 'open').map((status) => status.state === 'open' && status.renewal).slice(0, 4), [false, true, true, true])
  t.ok(counted.sent.filter((request) => request === 'POST /api/auth/refresh').length >= 3, 'each renewal came with a refreshed token')
  t.ok(app.sse.streamCount <= 2, 'old streams were closed')
  stream.close()
  t.same(statuses.at(-1), { state: 'closed', reason: 'closed' })
})

test('a refresh answered 503 keeps the session and says when to try again', async (t) => {
  const reauth: string[] = []
  const store = new MemoryTokenStore()
  let coreDown = false
  // The session core is shared by the whole test file, so its outage is played at the network edge.
  const client = new CalendarClient({
    apiUrl,
    tokenStore: store,
    onReauthRequired: (reason) => { reauth.push(reason) },
    fetch: async (url, init) => {
      if (coreDown && url.endsWith('/auth/refresh')) {
        return new Response(JSON.stringify({ statusCode: 503, code: 'SESSION_SERVICE_UNAVAILABLE', error: 'Service Unavailable', message: 'Sessions cannot be checked right now' }), { status: 503, headers: { 'retry-after': '5' } })
      }
      return await fetch(url, init)
    }
  })
  await client.signUp(newAccount('core-down'))
  const tokens = store.load()
  coreDown = true
  const error = await client.refresh().then(() => null, (caught: unknown) => caught)
  t.ok(error instanceof UnavailableError, 'an outage, not an ended session')
  t.equal((error as UnavailableError).retryAfterMs, 5000)
  t.equal((error as UnavailableError).code, 'SESSION_SERVICE_UNAVAILABLE')
  t.same(store.load(), tokens, 'the tokens are kept')
  t.same(reauth, [], 'nobody is signed out')
  coreDown = false
  await client.refresh()
  t.equal((await client.profile()).id, await client.userId(), 'the session carries on')
})

test('a stream opened with a token the server finds expired refreshes once and opens', { skip: realCore && 'token lifetimes of a real core are its own' }, async (t) => {
  const counted = countingFetch()
  const client = new CalendarClient({ apiUrl, fetch: counted.fetch, now: () => Date.now() - 60_000 })
  await client.signUp(newAccount('stream-skew'))
  await untilExpired(client)
  const statuses: StreamStatus[] = []
  let replayed = false
  const stream = client.stream({ onStatus: (status) => { statuses.push(status) }, onUserMetadata: () => { replayed = true } })
  t.teardown(() => { stream.close() })
  await waitUntil(() => replayed, 'the replay', 10_000)
  t.same(counted.sent.slice(1, 4), ['GET /api/events/stream', 'POST /api/auth/refresh', 'GET /api/events/stream'])
  t.same(counted.answers.slice(1, 4), [401, 200, 200], 'refused once, then open with the refreshed token')
  t.same(statuses[0], { state: 'open', connection: 1, renewal: false })
})
