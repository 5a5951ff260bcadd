// POST /api/auth/extprovider/connect from a signed-in session, a dead provider grant
// (invalid_grant) ending every session of its user, and credentials waiting in the outbox for a
// Sync service that cannot take them yet: against the Google stand-in and a recording Sync.
import { randomBytes } from 'node:crypto'
import tap, { test, type Test } from 'tap'
import { ObjectId } from 'mongodb'
import UserMetadata from 'supertokens-node/recipe/usermetadata'
import { buildApp, listen, signUp, startDependencies, uniqueEmail, type SignedIn } from '../helper.js'
import { createCredentialCipher, outboxCredentialBinding, userRefreshTokenBinding } from '../../lib/credential-cipher.js'
import type { UserDocument } from '../../stores/users.js'
import { newPkceVerifier, oidcNonceFor, pkceChallenge } from '../../lib/pkce.js'
import type { OutboxRecord } from '../../lib/outbox.js'
import { RawSseReader } from '../realtime/sse-reader.js'
import { startAnalyticsStandIn } from '../../dev/analytics/index.js'
import {
  authorize, CALLBACK, GOOGLE_CLIENT, googleConnection, googleConnectUrl, signInThrough, startProviderSync, startProviders, type Redirect
} from './provider-fixtures.js'

const deps = await startDependencies(tap)
const providers = await startProviders(tap)
const sync = await startProviderSync(tap)
const analyticsHost = await startAnalyticsStandIn()
tap.teardown(analyticsHost.close)
const { app, config, log } = await buildApp(tap, deps, {
  syncUrl: sync.url,
  extra: { ...providers.config, analytics: { key: 'phc_backend_project', host: analyticsHost.url } }
})
const base = await listen(app)
app.changeFeed.configure({ pollIntervalMs: 50 })
const { providerSignIn } = signInThrough(app)
const users = app.mongo.db.collection<UserDocument>('users')
const outbox = app.mongo.db.collection<OutboxRecord>('syncOutbox')
const cipher = createCredentialCipher(config.sync.credentialEncryptionKey ?? '')
const { google } = providers

function googleAccount (label: string, email = uniqueEmail(label)): string {
  google.control.createAccount({ email, name: `${label} Example` })
  return email
}

function googleSub (email: string): string {
  const account = google.control.listAccounts().find((candidate) => candidate.email === email)
  if (account === undefined) throw new Error(`no Google account ${email}`)
  return account.sub
}

async function passwordUser (label: string, email = uniqueEmail(label)): Promise<SignedIn> {
  return await signUp(app, { email, password: `pw-${randomBytes(6).toString('hex')}`, name: label })
}

function body (redirect: Redirect, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { code: redirect.code, state: redirect.state ?? 'state', scope: redirect.scope, redirectUri: CALLBACK, ...overrides }
}

async function connect (session: SignedIn | undefined, payload: Record<string, unknown>) {
  return await app.inject({ method: 'POST', url: '/api/auth/extprovider/connect', headers: session?.headers ?? {}, payload })
}

async function record (userId: string): Promise<UserDocument | null> {
  return await users.findOne({ _id: new ObjectId(userId) })
}

/** Nothing of a refused connect may remain: no credential, no flag, nothing for Sync. */
async function nothingStored (t: Test, session: SignedIn): Promise<void> {
  const user = await record(session.userId)
  t.notOk(user?.google, 'no Google account or token on the user')
  t.same((await UserMetadata.getUserMetadata(session.userId)).metadata, {}, 'no RESTART flag')
  t.equal(await app.outbox.pending(session.userId), 0, 'nothing for Sync')
  const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: session.headers })
  t.equal(profile.statusCode, 200, 'the session is kept')
}

async function waitFor (condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('connect needs a session and a well-formed code payload', async (t) => {
  t.equal((await connect(undefined, { code: 'x', state: 'y', redirectUri: CALLBACK })).statusCode, 401)
  const user = await passwordUser('shape')
  const missing = await connect(user, { code: 'x', redirectUri: CALLBACK })
  t.equal(missing.statusCode, 400)
  t.equal(missing.json().code, 'FST_ERR_VALIDATION')
})

test('connect refusals in order, each leaving nothing stored and no flag set', async (t) => {
  const email = googleAccount('refusals')
  const user = await passwordUser('refusals', email)
  const tokenCalls = () => google.control.counts().operations['oauth2.token']?.total ?? 0

  await t.test('503 MAINTENANCE first', async (t) => {
    config.sync.cloudMutationMode = 'maintenance'
    t.teardown(() => { config.sync.cloudMutationMode = 'enabled' })
    const before = tokenCalls()
    const answer = await connect(user, body(await authorize(googleConnectUrl(google), email), { redirectUri: 'https://evil.example/cb' }))
    t.equal(answer.statusCode, 503)
    t.match(answer.json(), { code: 'MAINTENANCE' })
    t.equal(tokenCalls(), before, 'no exchange')
    await nothingStored(t, user)
  })

  await t.test('400 for any other redirect URI, before the exchange', async (t) => {
    const redirect = await authorize(googleConnectUrl(google), email)
    const before = tokenCalls()
    const answer = await connect(user, body(redirect, { redirectUri: `${CALLBACK}/` }))
    t.equal(answer.statusCode, 400)
    t.equal(answer.json().code, 'REDIRECT_URI_NOT_ALLOWED')
    t.equal(tokenCalls(), before, 'Google was not asked')
    await nothingStored(t, user)
  })

  await t.test('400 when Google refuses the code (reused, forged)', async (t) => {
    const answer = await connect(user, body({ code: '4/0forged', state: 's', scope: undefined, user: undefined }))
    t.equal(answer.statusCode, 400)
    t.equal(answer.json().code, 'AUTHORIZATION_CODE_REJECTED')
    await nothingStored(t, user)
  })

  await t.test('409 EXTERNAL_ACCOUNT_ALREADY_CONNECTED: the Google account belongs to another user', async (t) => {
    const taken = googleAccount('taken')
    const owner = await providerSignIn('google', taken)
    t.equal(owner.body['status'], 'OK')
    const answer = await connect(user, body(await authorize(googleConnectUrl(google), taken)))
    t.equal(answer.statusCode, 409)
    t.same(answer.json(), {
      result: 'User not connected',
      code: 'EXTERNAL_ACCOUNT_ALREADY_CONNECTED',
      message: 'This Google account is connected to another user; sign in with that user to use it'
    })
    await nothingStored(t, user)
  })

  await t.test('409 EXTERNAL_CONNECT_EMAIL_MISMATCH: the Google account\'s email is not the user\'s', async (t) => {
    const other = googleAccount('other')
    const answer = await connect(user, body(await authorize(googleConnectUrl(google), other)))
    t.equal(answer.statusCode, 409)
    t.match(answer.json(), { result: 'User not connected', code: 'EXTERNAL_CONNECT_EMAIL_MISMATCH', message: String })
    t.same(Object.keys(answer.json()).sort(), ['code', 'message', 'result'])
    await nothingStored(t, user)
  })

  await t.test('400 when the calendar scope was not granted', async (t) => {
    const answer = await connect(user, body(await authorize(googleConnectUrl(google, { scope: 'openid email profile' }), email)))
    t.equal(answer.statusCode, 400)
    t.equal(answer.json().code, 'SCOPES_INCOMPLETE')
    await nothingStored(t, user)
  })
})

test('a connect with PKCE: the verifier goes to Google, and an ID token whose nonce is not the verifier\'s is refused', async (t) => {
  const email = googleAccount('pkce-connector')
  const user = await passwordUser('pkce-connector', email)
  const verifier = newPkceVerifier()
  const foreign = await connect(user, body(await authorize(googleConnectUrl(google, { codeChallenge: await pkceChallenge(verifier), nonce: 'someone-elses' }), email), { codeVerifier: verifier }))
  t.equal(foreign.statusCode, 400)
  t.equal(foreign.json().code, 'NONCE_MISMATCH')
  t.notOk((await record(user.userId))?.google?.googleId, 'nothing is linked')

  const wrongVerifier = await connect(user, body(await authorize(googleConnectUrl(google, { codeChallenge: await pkceChallenge(verifier), nonce: await oidcNonceFor(verifier) }), email), { codeVerifier: newPkceVerifier() }))
  t.equal(wrongVerifier.json().code, 'AUTHORIZATION_CODE_REJECTED', 'Google refuses a verifier that is not the challenge\'s')

  const answer = await connect(user, body(await authorize(googleConnectUrl(google, { codeChallenge: await pkceChallenge(verifier), nonce: await oidcNonceFor(verifier) }), email), { codeVerifier: verifier }))
  t.equal(answer.statusCode, 200, answer.body)
  t.equal((await record(user.userId))?.google?.googleId, googleSub(email))
})

test('a successful connect stores the credential on the current user, sets RESTART, restarts sync and keeps the session', async (t) => {
  const email = googleAccount('connector')
  const user = await passwordUser('connector', email)
  const stream = await RawSseReader.open(`${base}/api/events/stream`, user.headers)
  t.teardown(() => stream.close())
  await stream.untilMessages(1)

  const answer = await connect(user, body(await authorize(googleConnectUrl(google), email)))
  t.equal(answer.statusCode, 200, answer.body)
  t.same(answer.json(), { result: 'User connected', mode: 'SIGNUP', calendar: 'import' })

  const stored = await record(user.userId)
  t.equal(stored?.google?.googleId, googleSub(email))
  t.same((await UserMetadata.getUserMetadata(user.userId)).metadata, { sync: { importGCal: 'RESTART', incrementalGCalSync: 'RESTART' } })
  await waitFor(() => sync.restarts.includes(user.userId), 'the sync restart')
  const handOver = sync.handOvers.find((entry) => entry.userId === user.userId)
  t.match(handOver?.handOver, { provider: 'google', providerAccountId: googleSub(email), mode: 'SIGNUP' })
  const token = handOver?.handOver.refreshToken ?? ''
  t.equal(cipher.open(stored?.google?.gRefreshToken ?? '', userRefreshTokenBinding(user.userId)), token, 'sealed at rest')
  t.notOk(JSON.stringify(stored).includes(token))

  const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })
  t.equal(profile.statusCode, 200, 'the same session goes on')
  t.equal(profile.json().providerConnected, true)
  await stream.until((reader) => reader.messages().some((message) => JSON.stringify(message).includes('RESTART')))
  t.notOk(stream.ended, 'the stream stays open')
  t.match(log.lines().filter((line) => line['msg'] === 'google_auth_decision').at(-1), { flow: 'connect', mode: 'SIGNUP' })

  // Connecting again without a new consent: Google issues no refresh token, the stored one is reused.
  sync.connections.set(user.userId, [googleConnection('healthy')])
  const again = await connect(user, body(await authorize(googleConnectUrl(google, { prompt: null }), email)))
  t.same(again.json(), { result: 'User connected', mode: 'SIGNIN_INCREMENTAL', calendar: 'incremental' })
  await waitFor(() => sync.handOvers.filter((entry) => entry.userId === user.userId).length === 2, 'the second hand-over')
  t.equal(sync.handOvers.filter((entry) => entry.userId === user.userId)[1]?.handOver.refreshToken, token)
})

test('each connect round trip sends one oauth_callback under the client\'s correlation id, with its outcome', async (t) => {
  const email = googleAccount('funnel')
  const user = await passwordUser('funnel', email)
  const callbacks = async (correlationId: string) => {
    await app.analytics.flush()
    return analyticsHost.events().filter((event) => event.event === 'oauth_callback' && event.properties['correlationId'] === correlationId)
  }

  const mismatch = await connect(user, body(await authorize(googleConnectUrl(google), googleAccount('funnel-other')), { correlationId: 'cid-mismatch' }))
  t.equal(mismatch.statusCode, 409)
  const refused = await callbacks('cid-mismatch')
  t.equal(refused.length, 1)
  t.match(refused[0], { apiKey: 'phc_backend_project', distinctId: user.userId, properties: { provider: 'google', outcome: 'mismatch', intent: 'connect' } })
  t.notOk(refused[0]?.properties['errorClass'], 'errorClass only when the outcome is error')

  const forged = await connect(user, body({ code: '4/0forged', state: 's', scope: undefined, user: undefined }, { correlationId: 'cid-forged' }))
  t.equal(forged.statusCode, 400)
  t.match(await callbacks('cid-forged'), [{ properties: { outcome: 'error', errorClass: String } }])

  const connected = await connect(user, body(await authorize(googleConnectUrl(google), email), { correlationId: 'cid-connected' }))
  t.equal(connected.statusCode, 200, connected.body)
  t.match(await callbacks('cid-connected'), [{ properties: { provider: 'google', outcome: 'connected', intent: 'connect', correlationId: 'cid-connected' } }])

  const malformed = await connect(user, body(await authorize(googleConnectUrl(google), email), { correlationId: 'no spaces allowed' }))
  t.equal(malformed.statusCode, 400, 'a correlation id must have the shape of the cid parameter')
})

test('invalid_grant seen in the change feed: every session of the user ends, open streams close; the next sign-in repairs', async (t) => {
  const email = googleAccount('revoked')
  const signedIn = await providerSignIn('google', email)
  const session = signedIn.session
  if (session === undefined) throw new Error('no session')
  await waitFor(() => sync.handOvers.some((entry) => entry.userId === session.userId), 'the hand-over')
  const firstToken = sync.handOvers.find((entry) => entry.userId === session.userId)?.handOver.refreshToken ?? ''
  const stream = await RawSseReader.open(`${base}/api/events/stream`, session.headers)
  t.teardown(() => stream.close())
  await stream.untilMessages(1)

  // The person revokes the app's access at Google; the refresh token is dead there.
  google.control.revoke(email)
  const refresh = await fetch(`${google.url}/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: firstToken, client_id: GOOGLE_CLIENT.clientId, client_secret: GOOGLE_CLIENT.clientSecret })
  })
  t.equal(refresh.status, 400)
  t.equal((await refresh.json() as { error: string }).error, 'invalid_grant')
  // Sync classifies the dead grant and reports the connection revoked in the change feed.
  const connectionId = new ObjectId().toHexString()
  sync.connections.set(session.userId, [{ ...googleConnection('actionRequired', 'authorizationRevoked'), connectionId }])
  sync.feed.set(session.userId, [{ kind: 'connection', at: new Date().toISOString(), connectionId, state: 'actionRequired', reason: 'authorizationRevoked' }])

  await stream.untilEnded()
  t.ok(stream.messages().some((message) => (message as { code?: string }).code === 'CONNECTION_REVOKED'), 'the client heard why before the stream closed')
  const rest = await app.inject({ method: 'GET', url: '/api/user/profile', headers: session.headers })
  t.equal(rest.statusCode, 401, 'REST answers 401 with the old access token')
  const renewed = await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${session.refreshToken}` } })
  t.equal(renewed.statusCode, 401, 'the session cannot be refreshed: back to login')
  t.ok(log.lines().some((line) => line['msg']?.toString().startsWith('provider grant revoked') === true && line['source'] === 'changeFeed'))

  // The next sign-in: a new consent, a new refresh token replaces the dead one, and Sync repairs.
  const back = await providerSignIn('google', email)
  const newSession = back.session
  t.equal(newSession?.userId, session.userId)
  t.match(back.body['summary'], { linkedBy: 'account', mode: 'RECONNECT_REPAIR', calendar: 'repair' })
  await waitFor(() => sync.handOvers.filter((entry) => entry.userId === session.userId).length === 2, 'the repair hand-over')
  const repair = sync.handOvers.filter((entry) => entry.userId === session.userId)[1]
  t.equal(repair?.handOver.mode, 'RECONNECT_REPAIR')
  t.not(repair?.handOver.refreshToken, firstToken, 'a new token')
  t.equal(cipher.open((await record(session.userId))?.google?.gRefreshToken ?? '', userRefreshTokenBinding(session.userId)), repair?.handOver.refreshToken, 'stored in place of the dead one')
  const works = await app.inject({ method: 'GET', url: '/api/user/profile', headers: newSession?.headers ?? {} })
  t.equal(works.statusCode, 200)
})

test('invalid_grant reported by Sync for a user with no open stream', async (t) => {
  const email = googleAccount('no-stream')
  const signedIn = await providerSignIn('google', email)
  const session = signedIn.session
  if (session === undefined) throw new Error('no session')
  const notice = { userId: session.userId, provider: 'google', connectionId: new ObjectId().toHexString() }

  const anonymous = await app.inject({ method: 'POST', url: '/api/internal/grant-revoked', payload: notice })
  t.equal(anonymous.statusCode, 401, 'only the Sync service may say so')
  const answer = await app.inject({
    method: 'POST', url: '/api/internal/grant-revoked', headers: { authorization: `Bearer ${config.backend.serviceToken}` }, payload: notice
  })
  t.equal(answer.statusCode, 200)
  t.same(answer.json(), { sessionsRevoked: 1, streamsClosed: 0 })
  t.equal((await app.inject({ method: 'GET', url: '/api/user/profile', headers: session.headers })).statusCode, 401)
  const renewed = await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${session.refreshToken}` } })
  t.equal(renewed.statusCode, 401)
  const back = await providerSignIn('google', email)
  t.equal(back.session?.userId, session.userId, 'signing in again works')
})

test('a credential Sync cannot take yet waits in the outbox, sealed, and goes when Sync can', async (t) => {
  sync.credentialsRoute = false
  t.teardown(() => { sync.credentialsRoute = true })
  const email = googleAccount('waiting')
  const signedIn = await providerSignIn('google', email)
  const userId = signedIn.session?.userId ?? ''
  await app.outbox.flush(userId)
  t.equal(await app.outbox.pending(userId, 'credentialHandOver'), 1, 'kept, not dropped')
  t.ok(log.lines().some((line) => line['msg'] === 'Sync did not take a provider credential; will retry' && line['userId'] === userId))
  const waiting = await outbox.findOne({ user: userId, 'entry.kind': 'credentialHandOver' })
  const entry = waiting?.entry
  if (entry?.kind !== 'credentialHandOver') throw new Error('no hand-over waiting')
  const token = cipher.open(entry.handOver.sealedRefreshToken, outboxCredentialBinding(userId))
  t.match(token, /^1\/\//)
  t.notOk(JSON.stringify(waiting).includes(token), 'no plain token at rest in the outbox')

  sync.credentialsRoute = true
  await outbox.updateOne({ _id: waiting?._id }, { $set: { nextAttemptAt: new Date() } })
  await app.outbox.flush(userId)
  t.equal(await app.outbox.pending(userId), 0)
  const delivered = sync.handOvers.filter((candidate) => candidate.userId === userId)
  t.equal(delivered.length, 1)
  t.equal(delivered[0]?.handOver.refreshToken, token)
  t.equal(delivered[0]?.handOver.idempotencyKey, waiting?.idempotencyKey, 'the key chosen when it was stored')
})
