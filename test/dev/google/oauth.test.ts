// OAuth 2.0 and OpenID Connect as Google documents them, driven through google-auth-library's
// OAuth2Client wherever an application would use it.
import { createHash } from 'node:crypto'
import { test } from 'tap'
import { CALENDAR_READONLY_SCOPE, CALENDAR_SCOPE, CLIENT, EMAIL_SCOPE, PROFILE_SCOPE, REDIRECT_URI, connect, control, oauthClient, startStandIn, testClock, visit } from './harness.js'

const ALICE = 'alice@example.com'

function authUrl (origin: string, params: Record<string, string>): string {
  const query = new URLSearchParams({
    client_id: CLIENT.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: `openid email ${CALENDAR_SCOPE}`,
    ...params
  })
  return `${origin}/o/oauth2/v2/auth?${query.toString()}`
}

async function tokenRequest (origin: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<{ status: number, body: Record<string, unknown> }> {
  const response = await fetch(`${origin}/token`, { method: 'POST', headers, body: new URLSearchParams(form) })
  return { status: response.status, body: await response.json() as Record<string, unknown> }
}

/** The `error` field of a failed google-auth-library call's answer. */
async function oauthFailure (promise: Promise<unknown>): Promise<{ status: number | undefined, error: unknown }> {
  try {
    await promise
  } catch (err) {
    // google-auth-library throws gaxios errors, which carry the HTTP answer.
    const response = (err as { response?: { status?: number, data?: Record<string, unknown> } }).response
    if (response === undefined) throw err
    return { status: response.status, error: response.data?.['error'] }
  }
  throw new Error('the call succeeded')
}

test('discovery and keys name this origin\'s endpoints', async (t) => {
  const google = await startStandIn(t)
  const discovery = await (await fetch(google.discoveryUrl)).json() as Record<string, unknown>
  t.match(discovery, {
    issuer: google.url,
    authorization_endpoint: `${google.url}/o/oauth2/v2/auth`,
    token_endpoint: `${google.url}/token`,
    userinfo_endpoint: `${google.url}/v1/userinfo`,
    revocation_endpoint: `${google.url}/revoke`,
    jwks_uri: `${google.url}/oauth2/v3/certs`,
    id_token_signing_alg_values_supported: ['RS256'],
    code_challenge_methods_supported: ['plain', 'S256']
  })
  const jwks = await (await fetch(`${google.url}/oauth2/v3/certs`)).json() as { keys: Array<Record<string, unknown>> }
  t.match(jwks.keys, [{ kty: 'RSA', alg: 'RS256', use: 'sig', kid: String }])
  const pem = await (await fetch(`${google.url}/oauth2/v1/certs`)).json() as Record<string, string>
  t.match(pem[String(jwks.keys[0]?.['kid'])], /^-----BEGIN CERTIFICATE-----/, 'the same key as a certificate, by kid')
})

test('code flow with PKCE and state through OAuth2Client; the ID token verifies against the stand-in\'s keys', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE, name: 'Alice Example' }] })
  const { client, tokens, redirect } = await connect(google, ALICE, ['openid', 'email', 'profile', CALENDAR_SCOPE], { nonce: 'n-0S6' })
  t.equal(redirect.location.origin + redirect.location.pathname, REDIRECT_URI, 'back to the registered redirect URI')
  t.equal(redirect.location.searchParams.get('state'), 'state-value', 'state comes back unchanged')
  t.match(tokens, { token_type: 'Bearer', access_token: /^ya29\./, refresh_token: /^1\/\//, id_token: String })
  t.same(String(tokens.scope).split(' ').sort(), [CALENDAR_SCOPE, EMAIL_SCOPE, PROFILE_SCOPE, 'openid'].sort(), 'granted scopes, email/profile by their long names')

  const ticket = await client.verifyIdToken({ idToken: tokens.id_token ?? '', audience: CLIENT.clientId })
  const payload = ticket.getPayload()
  t.match(payload, { iss: google.url, aud: CLIENT.clientId, azp: CLIENT.clientId, email: ALICE, email_verified: true, name: 'Alice Example', nonce: 'n-0S6' })
  t.match(payload?.sub, /^\d{21}$/)
  const atHash = createHash('sha256').update(tokens.access_token ?? '').digest().subarray(0, 16).toString('base64url')
  t.equal(payload?.at_hash, atHash, 'at_hash binds the access token')
  t.equal((payload?.exp ?? 0) - (payload?.iat ?? 0), 3600)
  await t.rejects(client.verifyIdToken({ idToken: tokens.id_token ?? '', audience: 'someone-else' }), /Wrong recipient/)

  const userinfo = await fetch(`${google.url}/v1/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token ?? ''}` } })
  t.match(await userinfo.json(), { sub: payload?.sub, email: ALICE, email_verified: true, name: 'Alice Example', given_name: 'Alice', family_name: 'Example' })
  const info = await client.getTokenInfo(tokens.access_token ?? '')
  t.match(info, { aud: CLIENT.clientId, sub: payload?.sub, email: ALICE })
  t.ok(info.scopes.includes(CALENDAR_SCOPE))
})

test('the code is single-use, short-lived, bound to its verifier and redirect URI', async (t) => {
  const clock = testClock()
  const google = await startStandIn(t, { clock: clock.now, accounts: [{ email: ALICE }] })
  const client = oauthClient(google)
  const { codeVerifier, codeChallenge } = await client.generateCodeVerifierAsync()
  const codeFor = async (): Promise<string> => {
    const redirect = await visit(authUrl(google.url, { login_hint: ALICE, approve: '1', code_challenge: codeChallenge ?? '', code_challenge_method: 'S256' }))
    return redirect.location.searchParams.get('code') ?? ''
  }
  const form = { grant_type: 'authorization_code', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, redirect_uri: REDIRECT_URI }

  const code = await codeFor()
  t.match(await tokenRequest(google.url, { ...form, code }), { status: 400, body: { error: 'invalid_grant', error_description: 'Missing code verifier.' } })
  t.match(await tokenRequest(google.url, { ...form, code, code_verifier: 'x'.repeat(43) }), { status: 400, body: { error: 'invalid_grant' } })
  t.match(await tokenRequest(google.url, { ...form, code, code_verifier: codeVerifier, redirect_uri: 'http://127.0.0.1:3000/other' }),
    { status: 400, body: { error: 'redirect_uri_mismatch' } })
  t.match(await tokenRequest(google.url, { ...form, code, code_verifier: codeVerifier }), { status: 200, body: { access_token: String } })
  t.match(await tokenRequest(google.url, { ...form, code, code_verifier: codeVerifier }), { status: 400, body: { error: 'invalid_grant' } }, 'a used code is refused')

  const late = await codeFor()
  clock.advance(11 * 60 * 1000)
  t.match(await tokenRequest(google.url, { ...form, code: late, code_verifier: codeVerifier }), { status: 400, body: { error: 'invalid_grant' } }, 'an expired code is refused')
  t.match(await tokenRequest(google.url, { ...form, code: 'not-a-code', code_verifier: codeVerifier }), { status: 400, body: { error: 'invalid_grant' } })
})

test('client authentication: client_secret_post and client_secret_basic; a wrong secret is invalid_client', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const basic = oauthClient(google, { basic: true })
  const redirect = await visit(basic.generateAuthUrl({ scope: CALENDAR_SCOPE, login_hint: ALICE, approve: '1' } as Parameters<typeof basic.generateAuthUrl>[0]))
  const { tokens } = await basic.getToken(redirect.location.searchParams.get('code') ?? '')
  t.match(tokens, { access_token: String }, 'client_secret_basic accepted')
  t.notOk(tokens.refresh_token, 'access_type=online: no refresh token')

  const wrong = oauthClient(google, { secret: 'not-the-secret' })
  const again = await visit(wrong.generateAuthUrl({ scope: CALENDAR_SCOPE, login_hint: ALICE, approve: '1' } as Parameters<typeof wrong.generateAuthUrl>[0]))
  t.same(await oauthFailure(wrong.getToken(again.location.searchParams.get('code') ?? '')), { status: 401, error: 'invalid_client' })
  const unknown = await tokenRequest(google.url, { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'nobody', client_secret: 'x' })
  t.match(unknown, { status: 401, body: { error: 'invalid_client' } })
  t.match(await tokenRequest(google.url, { grant_type: 'password', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret }),
    { status: 400, body: { error: 'unsupported_grant_type' } })
})

test('a refresh token on the first consent only, again with prompt=consent; refreshes keep working', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const first = await connect(google, ALICE, ['openid', 'email', CALENDAR_SCOPE])
  t.ok(first.tokens.refresh_token, 'first consent: a refresh token')
  const second = await connect(google, ALICE, ['openid', 'email', CALENDAR_SCOPE])
  t.notOk(second.tokens.refresh_token, 'consent already given: none')
  const forced = await connect(google, ALICE, ['openid', 'email', CALENDAR_SCOPE], { prompt: 'consent' })
  t.ok(forced.tokens.refresh_token, 'prompt=consent: a new one')
  t.not(forced.tokens.refresh_token, first.tokens.refresh_token)

  const refreshed = await first.client.refreshAccessToken()
  t.match(refreshed.credentials, { access_token: /^ya29\./, id_token: String, refresh_token: first.tokens.refresh_token })
  t.not(refreshed.credentials.access_token, first.tokens.access_token)
  const otherRefresh = await forced.client.refreshAccessToken()
  t.ok(otherRefresh.credentials.access_token, 'the older refresh token and the newer both work')
})

test('revoking a token ends the grant: invalid_grant on refresh, 401 on the API; the next consent issues a refresh token again', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const { client, tokens } = await connect(google, ALICE, [CALENDAR_SCOPE])
  const revoked = await client.revokeToken(tokens.access_token ?? '')
  t.equal(revoked.status, 200)
  t.same(await oauthFailure(client.refreshAccessToken()), { status: 400, error: 'invalid_grant' })
  const api = await fetch(`${google.url}/calendar/v3/users/me/calendarList`, { headers: { authorization: `Bearer ${tokens.access_token ?? ''}` } })
  t.equal(api.status, 401)
  t.same(await oauthFailure(client.revokeToken(tokens.access_token ?? '')), { status: 400, error: 'invalid_token' }, 'revoking twice')

  const reconnected = await connect(google, ALICE, [CALENDAR_SCOPE])
  t.ok(reconnected.tokens.refresh_token, 'first consent after a revocation')
  t.match((await control(google, 'POST', `/accounts/${ALICE}/revoke`)).body, { revoked: 1 })
  t.same(await oauthFailure(reconnected.client.refreshAccessToken()), { status: 400, error: 'invalid_grant' },
    'a revocation from the control surface (the person removing access)')
})

test('include_granted_scopes adds earlier grants to the token; without it the token has what was asked', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }] })
  await connect(google, ALICE, [CALENDAR_READONLY_SCOPE])
  const narrow = await connect(google, ALICE, ['openid', 'email'])
  t.same(String(narrow.tokens.scope).split(' ').sort(), [EMAIL_SCOPE, 'openid'].sort())
  const wide = await connect(google, ALICE, ['openid', 'email'], { include_granted_scopes: true })
  t.same(String(wide.tokens.scope).split(' ').sort(), [CALENDAR_READONLY_SCOPE, EMAIL_SCOPE, 'openid'].sort())
})

test('the person denies: error=access_denied with the state', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const denied = await visit(authUrl(google.url, { login_hint: ALICE, approve: '0', state: 's-1' }))
  t.equal(denied.status, 302)
  t.equal(denied.location.searchParams.get('error'), 'access_denied')
  t.equal(denied.location.searchParams.get('state'), 's-1')
  t.notOk(denied.location.searchParams.get('code'))
})

test('requests Google refuses on a page, never redirecting to an unverified address', async (t) => {
  const google = await startStandIn(t)
  const mismatch = await visit(authUrl(google.url, { redirect_uri: 'https://attacker.example/cb' }))
  t.equal(mismatch.status, 400)
  t.match(mismatch.body, /redirect_uri_mismatch/)
  const unknownClient = await visit(authUrl(google.url, { client_id: 'unknown.apps.googleusercontent.com' }))
  t.equal(unknownClient.status, 401)
  t.match(unknownClient.body, /invalid_client/)
  const noScope = await visit(authUrl(google.url, { scope: '' }))
  t.equal(noScope.status, 400)
  t.match(noScope.body, /Missing required parameter: scope/)
})

test('the consent page: pick an account, Allow; then the signed-in browser skips it, and prompt=none works', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE, name: 'Alice Example' }, { email: 'bob@example.com' }] })
  const scopeParams = { access_type: 'offline', state: 'page-state' }
  const page = await visit(authUrl(google.url, { ...scopeParams, login_hint: ALICE }))
  t.equal(page.status, 200)
  t.match(page.body, /<form method="post" action="\/o\/oauth2\/v2\/auth">/)
  t.match(page.body, /value="alice@example.com" checked/, 'the hinted account is preselected')
  t.match(page.body, /bob@example.com/)
  const requestId = /name="request_id" value="([^"]+)"/.exec(page.body)?.[1] ?? ''

  const noneBefore = await visit(authUrl(google.url, { prompt: 'none', state: 'silent' }))
  t.equal(noneBefore.location.searchParams.get('error'), 'login_required', 'prompt=none before signing in')

  const allowed = await fetch(`${google.url}/o/oauth2/v2/auth`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ request_id: requestId, account: ALICE, decision: 'allow' })
  })
  t.equal(allowed.status, 302)
  const location = new URL(allowed.headers.get('location') ?? '')
  t.equal(location.searchParams.get('state'), 'page-state')
  t.ok(location.searchParams.get('code'))
  const cookie = (allowed.headers.get('set-cookie') ?? '').split(';', 1)[0]
  t.match(cookie, /^GOOGLE_STAND_IN_SID=/)

  const silent = await visit(authUrl(google.url, { state: 'again' }), cookie)
  t.equal(silent.status, 302, 'signed in and already granted: no page')
  t.ok(silent.location.searchParams.get('code'))
  const none = await visit(authUrl(google.url, { prompt: 'none' }), cookie)
  t.ok(none.location.searchParams.get('code'), 'prompt=none with a session and the grant')
  const moreScopes = await visit(authUrl(google.url, { prompt: 'none', scope: `openid ${CALENDAR_SCOPE} profile` }), cookie)
  t.equal(moreScopes.location.searchParams.get('error'), 'consent_required')
  const chooser = await visit(authUrl(google.url, { prompt: 'select_account' }), cookie)
  t.equal(chooser.status, 200, 'prompt=select_account shows the page')

  const reused = await fetch(`${google.url}/o/oauth2/v2/auth`, { method: 'POST', body: new URLSearchParams({ request_id: requestId, account: ALICE, decision: 'allow' }) })
  t.equal(reused.status, 400, 'a consent form is used once')

  const newcomer = await visit(authUrl(google.url, {}))
  const newcomerId = /name="request_id" value="([^"]+)"/.exec(newcomer.body)?.[1] ?? ''
  const created = await fetch(`${google.url}/o/oauth2/v2/auth`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ request_id: newcomerId, new_account: 'carol@example.com', decision: 'allow' })
  })
  t.equal(created.status, 302)
  t.equal((await control(google, 'GET', '/accounts/carol@example.com')).status, 200, 'an address typed on the page becomes an account')
})
