// The identity platform's v2 endpoints as Microsoft documents them: the authorization code flow
// with PKCE and state, ID tokens checked against the published keys, refresh tokens that are
// replaced on every use, and the AADSTS errors an application has to tell apart.
import { test } from 'tap'
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose'
import { CONSUMERS_TENANT } from '../../../dev/microsoft/index.js'
import { CLIENT, REDIRECT_URI, authorizeUrl, connect, control, graph, pkce, startStandIn, testClock, tokenRequest, visit } from './harness.js'

const ALICE = 'alice@example.com'
const BOB = 'bob@contoso.example'
const OTHER_APP = { clientId: '11111111-2222-4333-8444-555555555555', clientSecret: 'other-secret', redirectUris: ['http://127.0.0.1:3001/cb'] }

const refreshForm = (refreshToken: string, extra: Record<string, string> = {}): Record<string, string> =>
  ({ grant_type: 'refresh_token', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, refresh_token: refreshToken, ...extra })

test('discovery and keys name this origin on Microsoft\'s paths', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: BOB, kind: 'work' }] })
  const common = await (await fetch(microsoft.discoveryUrl)).json() as Record<string, unknown>
  t.match(common, {
    issuer: `${microsoft.url}/{tenantid}/v2.0`,
    authorization_endpoint: `${microsoft.url}/common/oauth2/v2.0/authorize`,
    token_endpoint: `${microsoft.url}/common/oauth2/v2.0/token`,
    jwks_uri: `${microsoft.url}/common/discovery/v2.0/keys`,
    userinfo_endpoint: `${microsoft.url}/oidc/userinfo`,
    subject_types_supported: ['pairwise'],
    id_token_signing_alg_values_supported: ['RS256'],
    scopes_supported: ['openid', 'profile', 'email', 'offline_access']
  })
  const consumers = await (await fetch(`${microsoft.url}/consumers/v2.0/.well-known/openid-configuration`)).json() as Record<string, unknown>
  t.equal(consumers['issuer'], `${microsoft.url}/${CONSUMERS_TENANT}/v2.0`)
  const bob = (await control<{ tenantId: string }>(microsoft, 'GET', `/accounts/${BOB}`)).body
  const tenant = await (await fetch(`${microsoft.url}/${bob.tenantId}/v2.0/.well-known/openid-configuration`)).json() as Record<string, unknown>
  t.equal(tenant['issuer'], `${microsoft.url}/${bob.tenantId}/v2.0`)
  const keys = await (await fetch(`${microsoft.url}/common/discovery/v2.0/keys`)).json() as { keys: Array<Record<string, unknown>> }
  t.match(keys.keys, [{ kty: 'RSA', use: 'sig', kid: String, x5t: String, n: String, e: 'AQAB', issuer: `${microsoft.url}/{tenantid}/v2.0` }])
  const unknown = await fetch(`${microsoft.url}/not-a-tenant/v2.0/.well-known/openid-configuration`)
  t.equal(unknown.status, 400)
  t.match(await unknown.json(), { error: 'invalid_tenant', error_codes: [90002] })
})

test('code flow with PKCE and state; the ID token verifies against the keys with the documented claims', async (t) => {
  const microsoft = await startStandIn(t, { clients: [CLIENT, OTHER_APP], accounts: [{ email: ALICE, name: 'Alice Example' }, { email: BOB, name: 'Bob Worker', kind: 'work' }] })
  const { tokens, redirect } = await connect(microsoft, ALICE, { nonce: 'n-0S6_WzA2Mj' })
  t.equal(redirect.status, 302)
  t.equal(redirect.location.origin + redirect.location.pathname, REDIRECT_URI, 'back to the registered redirect URI')
  t.equal(redirect.location.searchParams.get('state'), 'state-value', 'state comes back unchanged')
  t.match(tokens, { token_type: 'Bearer', expires_in: 3599, access_token: /^EwB/, refresh_token: /^M\.R3_/, id_token: String })
  t.same(tokens.scope.split(' ').sort(), ['email', 'https://graph.microsoft.com/Calendars.ReadWrite', 'https://graph.microsoft.com/User.Read', 'openid', 'profile'])

  const keys = createRemoteJWKSet(new URL(`${microsoft.url}/common/discovery/v2.0/keys`))
  const { payload, protectedHeader } = await jwtVerify(tokens.id_token, keys, { issuer: `${microsoft.url}/${CONSUMERS_TENANT}/v2.0`, audience: CLIENT.clientId })
  t.match(protectedHeader, { alg: 'RS256', typ: 'JWT', kid: String })
  t.match(payload, {
    ver: '2.0', aud: CLIENT.clientId, tid: CONSUMERS_TENANT, email: ALICE, preferred_username: ALICE, name: 'Alice Example', nonce: 'n-0S6_WzA2Mj'
  })
  t.match(payload['oid'], /^00000000-0000-0000-[0-9a-f]{4}-[0-9a-f]{12}$/, 'a personal account\'s oid')
  t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 3600)
  await t.rejects(jwtVerify(tokens.id_token, keys, { audience: 'someone-else' }), /aud/)

  // The subject is pairwise: another application sees another `sub` for the same account (and the same oid).
  const { verifier, challenge } = pkce()
  const other = await visit(authorizeUrl(microsoft, { client_id: OTHER_APP.clientId, redirect_uri: OTHER_APP.redirectUris[0] ?? '', login_hint: ALICE, approve: '1', code_challenge: challenge, code_challenge_method: 'S256' }))
  const otherTokens = (await tokenRequest(microsoft, {
    grant_type: 'authorization_code', client_id: OTHER_APP.clientId, client_secret: OTHER_APP.clientSecret, code: other.location.searchParams.get('code') ?? '', redirect_uri: OTHER_APP.redirectUris[0] ?? '', code_verifier: verifier
  })).body
  const otherClaims = decodeJwt(String(otherTokens['id_token']))
  t.not(otherClaims.sub, payload.sub, 'pairwise sub')
  t.equal(otherClaims['oid'], payload['oid'], 'oid is the account\'s, whatever the application')

  // A work account signs in through its own tenant; its issuer names that tenant.
  const work = await connect(microsoft, BOB)
  const workClaims = decodeJwt(work.tokens.id_token)
  t.match(workClaims, { tid: /^[0-9a-f-]{36}$/, oid: /^[0-9a-f-]{36}$/ })
  t.not(workClaims['tid'], CONSUMERS_TENANT)
  t.equal(workClaims.iss, `${microsoft.url}/${String(workClaims['tid'])}/v2.0`)

  const userinfo = await fetch(`${microsoft.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  t.match(await userinfo.json(), { sub: payload.sub, name: 'Alice Example', given_name: 'Alice', family_name: 'Example', email: ALICE })
})

test('refresh tokens rotate on every use; the replaced one keeps working, as documented', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const { tokens } = await connect(microsoft, ALICE)
  const first = await tokenRequest(microsoft, refreshForm(tokens.refresh_token, { scope: 'offline_access openid Calendars.ReadWrite' }))
  t.equal(first.status, 200)
  t.equal(first.headers.get('cache-control'), 'no-store, no-cache')
  t.match(first.body, { token_type: 'Bearer', access_token: /^EwB/, refresh_token: /^M\.R3_/, id_token: String })
  t.not(first.body['refresh_token'], tokens.refresh_token, 'a new refresh token each time')
  t.not(first.body['access_token'], tokens.access_token)
  t.notOk('nonce' in decodeJwt(String(first.body['id_token'])), 'no nonce on refresh')
  const second = await tokenRequest(microsoft, refreshForm(String(first.body['refresh_token'])))
  t.equal(second.status, 200)
  t.not(second.body['refresh_token'], first.body['refresh_token'])
  const old = await tokenRequest(microsoft, refreshForm(tokens.refresh_token))
  t.equal(old.status, 200, 'the identity platform does not revoke a refresh token when it is used')
  for (const answer of [first, second, old]) {
    t.equal((await graph(microsoft, String(answer.body['access_token']), 'GET', '/me')).status, 200, 'each new access token works')
  }
  const basic = await tokenRequest(microsoft, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, 'common',
    { authorization: `Basic ${Buffer.from(`${CLIENT.clientId}:${CLIENT.clientSecret}`).toString('base64')}` })
  t.equal(basic.status, 200, 'client_secret_basic works too')
  const wider = await tokenRequest(microsoft, refreshForm(tokens.refresh_token, { scope: 'Mail.Read' }))
  t.match(wider, { status: 400, body: { error: 'invalid_grant', error_codes: [65001] } }, 'a scope never consented to needs the person')
})

test('after revocation a refresh answers invalid_grant with the AADSTS code of the cause; access tokens run out on their own', async (t) => {
  const clock = testClock()
  const microsoft = await startStandIn(t, { clock: clock.now, accounts: [{ email: ALICE }, { email: BOB, kind: 'work' }] })
  const alice = await connect(microsoft, ALICE)
  t.same((await control(microsoft, 'POST', `/accounts/${ALICE}/revoke`, {})).body, { revoked: 1, subscriptions: 0 })
  const revoked = await tokenRequest(microsoft, refreshForm(alice.tokens.refresh_token))
  t.equal(revoked.status, 400)
  t.match(revoked.body, {
    error: 'invalid_grant',
    error_description: /^AADSTS50173: The provided grant has expired due to it being revoked.*\r\nTrace ID: [0-9a-f-]{36}\r\nCorrelation ID: [0-9a-f-]{36}\r\nTimestamp: \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/s,
    error_codes: [50173],
    timestamp: /Z$/,
    trace_id: String,
    correlation_id: String
  })
  t.equal((await graph(microsoft, alice.tokens.access_token, 'GET', '/me')).status, 200, 'an access token cannot be revoked: it works until it expires')
  clock.advance(3600 * 1000)
  t.match(await graph(microsoft, alice.tokens.access_token, 'GET', '/me'), { status: 401, body: { error: { code: 'InvalidAuthenticationToken', message: /expired/ } } })

  const bob = await connect(microsoft, BOB)
  await control(microsoft, 'POST', `/accounts/${BOB}/revoke`, { reason: 'consent', clientId: CLIENT.clientId })
  t.match(await tokenRequest(microsoft, refreshForm(bob.tokens.refresh_token)), { status: 400, body: { error: 'invalid_grant', error_codes: [65001] } })

  // A new consent is a new grant: the new tokens work, the old ones stay dead.
  const again = await connect(microsoft, BOB)
  t.equal((await tokenRequest(microsoft, refreshForm(again.tokens.refresh_token))).status, 200)
  t.equal((await tokenRequest(microsoft, refreshForm(bob.tokens.refresh_token))).status, 400)

  await control(microsoft, 'POST', `/accounts/${BOB}/expire-refresh-tokens`)
  t.match(await tokenRequest(microsoft, refreshForm(again.tokens.refresh_token)), { status: 400, body: { error: 'invalid_grant', error_codes: [700082] } })
  t.match(await tokenRequest(microsoft, refreshForm('M.R3_not-a-token')), { status: 400, body: { error: 'invalid_grant', error_codes: [9002313] } })
})

test('token endpoint refusals: client, code, PKCE, redirect URI, grant type', async (t) => {
  const clock = testClock()
  const microsoft = await startStandIn(t, { clock: clock.now, accounts: [{ email: ALICE }] })
  const { verifier, challenge } = pkce()
  const codeOf = async (): Promise<string> =>
    (await visit(authorizeUrl(microsoft, { login_hint: ALICE, approve: '1', code_challenge: challenge, code_challenge_method: 'S256' }))).location.searchParams.get('code') ?? ''
  const exchange = (code: string, extra: Record<string, string> = {}): Record<string, string> =>
    ({ grant_type: 'authorization_code', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, code, redirect_uri: REDIRECT_URI, code_verifier: verifier, ...extra })

  t.match(await tokenRequest(microsoft, exchange(await codeOf(), { client_secret: 'wrong' })), { status: 401, body: { error: 'invalid_client', error_codes: [7000215] } })
  t.match(await tokenRequest(microsoft, exchange(await codeOf(), { client_id: 'unknown-app' })), { status: 400, body: { error: 'unauthorized_client', error_codes: [700016] } })
  t.match(await tokenRequest(microsoft, exchange(await codeOf(), { code_verifier: pkce().verifier })), { status: 400, body: { error: 'invalid_grant', error_codes: [501481] } })
  const withoutVerifier = exchange(await codeOf())
  delete withoutVerifier['code_verifier']
  t.match(await tokenRequest(microsoft, withoutVerifier), { status: 400, body: { error: 'invalid_grant', error_codes: [501481] } })
  t.match(await tokenRequest(microsoft, exchange(await codeOf(), { redirect_uri: 'http://127.0.0.1:3000/elsewhere' })), { status: 400, body: { error: 'invalid_grant', error_codes: [50011] } })
  const code = await codeOf()
  t.equal((await tokenRequest(microsoft, exchange(code))).status, 200)
  t.match(await tokenRequest(microsoft, exchange(code)), { status: 400, body: { error: 'invalid_grant', error_codes: [54005] } }, 'a code is single-use')
  const late = await codeOf()
  clock.advance(601 * 1000)
  t.match(await tokenRequest(microsoft, exchange(late)), { status: 400, body: { error: 'invalid_grant', error_codes: [70008] } })
  t.match(await tokenRequest(microsoft, { client_id: CLIENT.clientId }), { status: 400, body: { error: 'invalid_request', error_codes: [900144] } })
  t.match(await tokenRequest(microsoft, { grant_type: 'password', client_id: CLIENT.clientId }), { status: 400, body: { error: 'unsupported_grant_type' } })
})

test('authorize: error page for an unknown app or redirect URI; errors go back with state; prompt, sign-in cookie and consent page', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE }, { email: BOB, kind: 'work' }] })
  const unknownApp = await visit(authorizeUrl(microsoft, { client_id: 'nope' }))
  t.equal(unknownApp.status, 400)
  t.match(unknownApp.body, /AADSTS700016/)
  const badRedirect = await visit(authorizeUrl(microsoft, { redirect_uri: 'https://evil.example/cb' }))
  t.equal(badRedirect.status, 400, 'an unregistered redirect URI is never redirected to')
  t.match(badRedirect.body, /AADSTS50011/)

  const denied = await visit(authorizeUrl(microsoft, { state: 's1', login_hint: ALICE, approve: '0' }))
  t.same(Object.fromEntries(denied.location.searchParams), { error: 'access_denied', error_description: 'AADSTS65004: User declined to consent to access the app.', state: 's1' })
  const badScope = await visit(authorizeUrl(microsoft, { state: 's2', scope: 'openid api://other/thing' }))
  t.equal(badScope.location.searchParams.get('error'), 'invalid_scope')
  t.equal(badScope.location.searchParams.get('state'), 's2')
  const noType = await visit(authorizeUrl(microsoft, { response_type: '' }))
  t.match(noType.location.searchParams.get('error_description'), /^AADSTS900144/)
  const noSession = await visit(authorizeUrl(microsoft, { prompt: 'none', state: 's3' }))
  t.same([noSession.location.searchParams.get('error'), noSession.location.searchParams.get('state')], ['login_required', 's3'])
  const wrongTenant = await visit(authorizeUrl(microsoft, { login_hint: BOB, approve: '1' }, 'consumers'))
  t.equal(wrongTenant.location.searchParams.get('error'), 'invalid_request', 'the consumers tenant admits personal accounts only')

  // The consent page a person clicks: it lists the accounts and the permissions, and Accept redirects with a code.
  const pageVisit = await visit(authorizeUrl(microsoft, { state: 's4', login_hint: ALICE }))
  t.equal(pageVisit.status, 200)
  t.match(pageVisit.body, /Let <strong>8f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e<\/strong> access your info\?/)
  t.match(pageVisit.body, /Calendars\.ReadWrite/)
  const requestId = /name="request_id" value="([^"]+)"/.exec(pageVisit.body)?.[1] ?? ''
  const accepted = await visit(`${microsoft.url}/common/oauth2/v2.0/authorize`, undefined, {
    method: 'POST', body: new URLSearchParams({ request_id: requestId, account: ALICE, decision: 'accept' })
  })
  t.equal(accepted.status, 302)
  t.match(accepted.location.searchParams.get('code'), /^M\.C5_/)
  t.equal(accepted.location.searchParams.get('state'), 's4')
  t.match(accepted.cookie, /^ESTSAUTH=/, 'the browser is signed in')

  // Signed in and consented: no page again, and prompt=none works; prompt=consent shows the page.
  const silent = await visit(authorizeUrl(microsoft, { state: 's5' }), accepted.cookie)
  t.match(silent.location.searchParams.get('code'), /^M\.C5_/)
  const none = await visit(authorizeUrl(microsoft, { prompt: 'none' }), accepted.cookie)
  t.match(none.location.searchParams.get('code'), /^M\.C5_/)
  const wider = await visit(authorizeUrl(microsoft, { prompt: 'none', scope: 'openid Calendars.Read.Shared' }), accepted.cookie)
  t.equal(wider.location.searchParams.get('error'), 'consent_required')
  t.equal((await visit(authorizeUrl(microsoft, { prompt: 'consent' }), accepted.cookie)).status, 200)

  // Cancel, and response_mode=form_post (a page that posts the answer back).
  const second = await visit(authorizeUrl(microsoft, { state: 's6', response_mode: 'form_post' }))
  const secondId = /name="request_id" value="([^"]+)"/.exec(second.body)?.[1] ?? ''
  const cancelled = await visit(`${microsoft.url}/common/oauth2/v2.0/authorize`, undefined, {
    method: 'POST', body: new URLSearchParams({ request_id: secondId, account: ALICE, decision: 'cancel' })
  })
  t.equal(cancelled.status, 200)
  t.match(cancelled.body, new RegExp(`<form method="post" name="hiddenform" action="${REDIRECT_URI}">`))
  t.match(cancelled.body, /name="error" value="access_denied"/)
  t.match(cancelled.body, /name="state" value="s6"/)
})
