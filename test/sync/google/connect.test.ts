// Connecting Google through Sync's own OAuth flow, over HTTP: begin -> the stand-in's consent ->
// Sync's callback -> the browser's redirect, and what each outcome leaves behind.
import { test } from 'tap'
import { translatePage } from '../../../lib/change-translation.js'
import { signInternalRequest } from '../../../lib/internal-auth.js'
import { buildSyncApp, databaseUri, INTERNAL_TOKEN, newUserId, startDatabase, testConfig } from '../helper.js'
import { revokeAtProviderAndPull } from '../provider-harness.js'
import { ALICE, begin, CLIENT_ID, connectAndSync, consent, followCallback, startStack, WEB_CALLBACK } from './harness.js'

test('connect round trip: PKCE and state, consent, callback, redirect with status and cid, encrypted credential, import queued', async (t) => {
  const stack = await startStack(t)
  const userId = newUserId()
  const started = await begin(stack, userId, { provider: 'google', intent: 'connect', correlationId: 'cid-1234' })
  const authorization = new URL(started.authorizationUrl)
  t.equal(authorization.origin, stack.google.url, 'the development origin replaces Google\'s')
  t.equal(authorization.pathname, '/o/oauth2/v2/auth')
  t.match(Object.fromEntries(authorization.searchParams), {
    client_id: CLIENT_ID,
    redirect_uri: `${stack.syncUrl}/oauth/google/callback`,
    access_type: 'offline',
    prompt: 'consent',
    code_challenge_method: 'S256',
    code_challenge: /^[A-Za-z0-9_-]{43}$/,
    scope: /calendar/
  })

  const callback = await consent(started.authorizationUrl, ALICE)
  t.ok(callback.startsWith(`${stack.syncUrl}/oauth/google/callback?`), 'the stand-in sends the browser to Sync')
  const done = await followCallback(callback)
  t.equal(done.status, 302)
  t.equal(`${done.location.origin}${done.location.pathname}`, WEB_CALLBACK)
  t.same(Object.fromEntries(done.location.searchParams), { status: 'connected', provider: 'google', intent: 'connect', cid: 'cid-1234' })

  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  t.match(connection, { state: 'importing', provider: 'google' })
  const connectionId = connection?._id.toHexString() ?? ''
  const stored = await stack.sync.syncDb.db.collection('credentials').findOne({ _id: connectionId as never })
  t.notMatch(JSON.stringify(stored), /1\/\/|ya29/, 'no token is stored in the clear')
  t.match(await stack.sync.syncCredentials.load(connectionId), { refreshToken: /.+/, email: ALICE })
  t.match(await stack.sync.syncJobQueue.list(), [{ type: 'import', connectionId }])
  t.match(stack.logs.find((line) => line['msg'] === 'oauth_callback'), { provider: 'google', outcome: 'connected', intent: 'connect', correlationId: 'cid-1234' })
  t.notOk(stack.logs.find((line) => line['msg'] === 'oauth_callback')?.['errorClass'], 'errorClass only on error')
  t.notMatch(JSON.stringify(stack.logs), /ya29\.|"code":|code_verifier/, 'no token, code or verifier in the log')

  const replay = await followCallback(callback)
  t.equal(replay.location.searchParams.get('status'), 'expired', 'a state works once')
})

test('denied, expired, forged and mismatched callbacks store nothing and say why', async (t) => {
  const stack = await startStack(t)
  const userId = newUserId()

  const denied = await followCallback(await consent((await begin(stack, userId)).authorizationUrl, ALICE, false))
  t.match(Object.fromEntries(denied.location.searchParams), { status: 'denied', intent: 'connect', provider: 'google', cid: /.+/ })

  const late = await consent((await begin(stack, userId)).authorizationUrl, ALICE)
  stack.clock.advance(11 * 60_000)
  t.equal((await followCallback(late)).location.searchParams.get('status'), 'expired', 'a state past its 10 minutes')

  const forged = new URL(late)
  forged.searchParams.set('state', 'not.ours')
  t.equal((await followCallback(forged.toString())).location.searchParams.get('status'), 'error')
  t.match(stack.logs.filter((line) => line['msg'] === 'oauth_callback').at(-1), { outcome: 'error', errorClass: 'InvalidStateError' })

  // The backend's proxy names the browser's signed-in user, signed like an internal request.
  const other = newUserId()
  const mismatched = await consent((await begin(stack, userId)).authorizationUrl, ALICE)
  const path = mismatched.slice(stack.syncUrl.length)
  const signed = signInternalRequest({ secret: INTERNAL_TOKEN, method: 'GET', path, userId: other }, stack.clock.now().getTime())
  t.equal((await followCallback(mismatched, signed)).location.searchParams.get('status'), 'mismatch')

  const unsigned = await consent((await begin(stack, userId)).authorizationUrl, ALICE)
  t.equal((await followCallback(unsigned, { 'x-calendar-session-user': userId })).location.searchParams.get('status'), 'error', 'an unsigned claim is refused')

  t.same(await stack.sync.syncConnections.listByUser(userId), [], 'no connection was made')

  const same = await consent((await begin(stack, userId)).authorizationUrl, ALICE)
  const sameSigned = signInternalRequest({ secret: INTERNAL_TOKEN, method: 'GET', path: same.slice(stack.syncUrl.length), userId }, stack.clock.now().getTime())
  t.equal((await followCallback(same, sameSigned)).location.searchParams.get('status'), 'connected', 'the same signed-in user connects')
})

test('a callback in a browser other than the one that began (no binder, or another attempt\'s) finishes nothing, and the attempt is spent', async (t) => {
  const stack = await startStack(t)
  const userId = newUserId()
  const started = await begin(stack, userId, { provider: 'google', intent: 'connect', correlationId: 'cid-bound' })
  t.match(started.browserBinder, /^[A-Za-z0-9_-]{43}$/, 'the begin answers the binder the browser is to hold')
  const stored = await stack.sync.syncDb.db.collection('oauthAttempts').findOne({ userId })
  t.notMatch(JSON.stringify(stored), started.browserBinder, 'Sync keeps only its hash')

  // The link is sent to someone else, who approves the genuine consent.
  const victims = await consent(started.authorizationUrl, ALICE)
  const elsewhere = await followCallback(victims, {}, 'another')
  t.same(Object.fromEntries(elsewhere.location.searchParams), { status: 'wrong_browser', provider: 'google', intent: 'connect', cid: 'cid-bound' })
  t.match(stack.logs.filter((line) => line['msg'] === 'oauth_callback').at(-1), { outcome: 'wrong_browser' })
  t.equal((await followCallback(victims)).location.searchParams.get('status'), 'expired', 'the attempt is spent: not even its own browser finishes it after that')

  const second = await begin(stack, userId)
  const third = await begin(stack, userId)
  const crossed = await followCallback(await consent(second.authorizationUrl, ALICE), { 'x-calendar-connect-binder': third.browserBinder }, 'another')
  t.equal(crossed.location.searchParams.get('status'), 'wrong_browser', 'another attempt\'s binder is not this one\'s')

  t.same(await stack.sync.syncConnections.listByUser(userId), [], 'no connection was made')
  t.equal(await stack.sync.syncDb.db.collection('credentials').countDocuments({}), 0, 'no credential was stored')
  t.equal(stack.google.control.listAccounts()[0]?.grants.filter((grant) => grant.refreshTokens > 0).length ?? 0, 0, 'no code was exchanged')
})

test('a Google account another user holds is a conflict, stored nowhere; the backend is asked with the account\'s id and email', async (t) => {
  const stack = await startStack(t)
  const userId = newUserId()
  const first = await followCallback(await consent((await begin(stack, userId)).authorizationUrl, ALICE))
  t.equal(first.location.searchParams.get('status'), 'connected')
  const [claim] = stack.backend.claims
  t.match(claim, { userId, provider: 'google', accountId: /.+/, email: ALICE }, 'Sync asked the backend who may hold the account')

  stack.backend.heldByOthers.add(`google:${claim?.accountId ?? ''}`)
  const other = newUserId()
  const taken = await followCallback(await consent((await begin(stack, other)).authorizationUrl, ALICE))
  t.equal(taken.location.searchParams.get('status'), 'conflict')
  t.match(stack.logs.filter((line) => line['msg'] === 'oauth_callback').at(-1), { outcome: 'conflict' })
  t.same(await stack.sync.syncConnections.listByUser(other), [], 'the other user got no connection')
})

test('revocation at Google: actionRequired, credential discarded, CONNECTION_REVOKED and its alias on the stream; a reconnect repairs it', async (t) => {
  const stack = await startStack(t)
  const { userId, connectionId } = await connectAndSync(stack)
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy' })
  const cursor = (await stack.sync.syncFeed.page(userId, null, 1)).cursor

  await revokeAtProviderAndPull(stack, stack.google.control, ALICE, userId)
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'actionRequired', reason: 'authorizationRevoked' })
  t.equal(await stack.sync.syncCredentials.load(connectionId), null, 'credential discarded')
  const page = await stack.sync.syncFeed.page(userId, cursor, 100)
  t.match(translatePage(page).filter((message) => message.type === 'syncStatusChanged'), [
    { type: 'syncStatusChanged', connectionId, status: 'attention', code: 'CONNECTION_REVOKED' },
    { type: 'syncStatusChanged', connectionId, status: 'attention', code: 'GOOGLE_REVOKED', aliasOf: 'CONNECTION_REVOKED' }
  ])

  const again = await begin(stack, userId, { provider: 'google', intent: 'reconnect' })
  t.equal(again.connectionId, connectionId)
  t.equal(new URL(again.authorizationUrl).searchParams.get('prompt'), null, 'a reconnect does not force a new consent')
  const done = await followCallback(await consent(again.authorizationUrl, ALICE))
  t.match(Object.fromEntries(done.location.searchParams), { status: 'connected', intent: 'reconnect' })
  await stack.drain()
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy', reason: null })
})

test('a reconnect keeps the stored refresh token when Google issues none', async (t) => {
  const stack = await startStack(t)
  const { userId, connectionId } = await connectAndSync(stack)
  const before = await stack.sync.syncCredentials.load(connectionId)
  const again = await begin(stack, userId, { provider: 'google', intent: 'reconnect', connectionId })
  const done = await followCallback(await consent(again.authorizationUrl, ALICE))
  t.equal(done.location.searchParams.get('status'), 'connected')
  t.equal((await stack.sync.syncCredentials.load(connectionId))?.['refreshToken'], before?.['refreshToken'], 'the first refresh token stays')
  const accounts = stack.google.control.listAccounts()
  t.equal(accounts[0]?.grants[0]?.refreshTokens, 1, 'Google issued no second refresh token')
  await stack.drain()
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy' })
})

test('extprovider without a backend block refuses to start, in one clear line', async (t) => {
  const base = testConfig(databaseUri(await startDatabase(t), 'sync_no_backend'))
  await t.rejects(buildSyncApp(t, '', { config: { ...base, extprovider: { clientId: CLIENT_ID, clientSecret: 'GOCSPX-real-looking' } } }),
    { name: 'SyncStartupError', message: /extprovider is configured but the backend block is missing/ })
})
