// The pure parts of provider sign-in and connect: the intent under `state`, the same-origin
// return path, the callback and connect-redirect parsing, and the oauth_return event.
import { createHash } from 'node:crypto'
import { test } from 'tap'
import { newPkceVerifier, oidcNonceFor, pkceChallenge } from '../../lib/pkce.js'
import {
  FALLBACK_RETURN_PATH, INTENT_PREFIX, INTENT_TTL_MS, appleAuthorizationUrl, googleAuthorizationUrl, microsoftAuthorizationUrl, newState,
  connectRedirectMessage, oauthReturnEvent, parseCallback, parseConnectRedirect, providerStartFailure, safeReturnPath, saveIntent, savePendingConnect, scopesComplete, signInOptions,
  signInUpBody, signInUpRefusal, takeIntent, takePendingConnect, withoutConnectRedirect, GOOGLE_CALENDAR_SCOPES
} from '../../web/src/lib/oauth.js'
import { memoryStore } from '../../web/src/lib/storage.js'
import { bundleValues } from '../../web/build.js'
import { GOOGLE_SCOPES, signInProviders } from '../../lib/identity-providers.js'

const origin = 'https://cal.example.com'

test('return paths stay on this origin; anything else goes to /day', async (t) => {
  t.equal(safeReturnPath('/week?date=2026-03-02#x', origin), '/week?date=2026-03-02#x')
  t.equal(safeReturnPath('/day', origin), '/day')
  for (const unsafe of [
    undefined, null, '', 'day', 'https://evil.example/day', '//evil.example/day', '/\\evil.example', '/\t/evil.example',
    'javascript:alert(1)', '/%0a/evil', ' /day', '/auth/extprovider/callback?code=x', 42, '/'.padEnd(3000, 'a')
  ]) {
    const result = safeReturnPath(unsafe, origin)
    if (unsafe === '/%0a/evil') {
      t.equal(result, '/%0a/evil', 'an encoded newline stays encoded, on this origin')
    } else {
      t.equal(result, FALLBACK_RETURN_PATH, `refused: ${JSON.stringify(unsafe)?.slice(0, 40)}`)
    }
  }
})

test('an intent is kept under its state, taken once, and refused when stale or unknown', async (t) => {
  const store = memoryStore()
  const state = newState()
  t.match(state, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url')
  t.not(newState(), state)
  const now = 1_700_000_000_000
  saveIntent(store, state, { kind: 'connect', provider: 'google', returnPath: '/week', createdAt: now })
  t.ok(store.getItem(INTENT_PREFIX + state), 'stored in session storage under the state')
  t.equal(takeIntent(store, 'x'.repeat(43), now), null, 'another state finds nothing')
  t.match(takeIntent(store, state, now + 1000), { kind: 'connect', returnPath: '/week' })
  t.equal(takeIntent(store, state, now + 2000), null, 'a state is good for one return')
  t.same(store.entries(), {}, 'and removed')

  saveIntent(store, state, { kind: 'signin', provider: 'google', returnPath: '/day', createdAt: now })
  t.equal(takeIntent(store, state, now + INTENT_TTL_MS + 1), null, 'expired')
  t.same(store.entries(), {}, 'an expired intent is removed too')
  t.equal(takeIntent(store, null, now), null)
  t.equal(takeIntent(store, '../../etc', now), null, 'a malformed state is not even looked up')
  store.setItem(INTENT_PREFIX + state, JSON.stringify({ kind: 'other', createdAt: now }))
  t.equal(takeIntent(store, state, now), null, 'only signin and connect are intents')
})

test('the callback: a code with its state, a provider error, or nothing usable', async (t) => {
  t.same(parseCallback('?code=4%2F0Ab&state=s1&scope=email%20openid'), { kind: 'code', code: '4/0Ab', state: 's1', scope: 'email openid', user: null })
  t.same(parseCallback('?code=c1&state=s1&user=%7B%22name%22%3A%7B%7D%7D'), { kind: 'code', code: 'c1', state: 's1', scope: null, user: '{"name":{}}' }, 'Apple\'s user field, carried by the web server')
  t.same(parseCallback('?error=access_denied&state=s1'), { kind: 'providerError', error: 'access_denied', state: 's1' })
  t.same(parseCallback('?state=s1'), { kind: 'invalid' })
  t.same(parseCallback(''), { kind: 'invalid' })
})

test('each outcome of a connect says in words what happened and what to do, naming the provider', async (t) => {
  const of = (status: string, provider = 'google') => ({ status, correlationId: 'Ab12cd', provider })
  t.equal(connectRedirectMessage(of('connected', 'microsoft'), 'connect'), 'Outlook calendar is connected.')
  t.equal(connectRedirectMessage(of('connected'), 'reconnect'), 'Google Calendar is reconnected.')
  t.match(connectRedirectMessage(of('wrong_browser'), 'connect'), /started in another browser\. Start it again here/)
  t.match(connectRedirectMessage(of('conflict', 'microsoft'), 'connect'), /^Outlook calendar was not connected: that account is already connected to another user/)
  t.match(connectRedirectMessage(of('mismatch'), 'connect'), /email differs from yours/)
  t.match(connectRedirectMessage(of('denied'), 'connect'), /access was not granted/)
  t.match(connectRedirectMessage(of('expired'), 'connect'), /took too long/)
  t.equal(connectRedirectMessage(of('something_new'), 'connect'), 'Google Calendar could not be connected. Try again in a moment.', 'a status it does not know is not shown raw')
})

test('the Sync redirect after a connect: status and cid, one oauth_return for each, connected included', async (t) => {
  t.same(parseConnectRedirect('?status=connected&cid=Ab12cd'), { status: 'connected', correlationId: 'Ab12cd', provider: 'google' })
  t.same(parseConnectRedirect('?status=error&cid=zz99&provider=microsoft'), { status: 'error', correlationId: 'zz99', provider: 'microsoft' })
  t.equal(parseConnectRedirect('?status=connected'), null, 'no cid: not a connect redirect')
  t.equal(parseConnectRedirect('?status=<script>&cid=abcd'), null)
  t.equal(withoutConnectRedirect(`${origin}/day?status=connected&cid=Ab12cd&provider=microsoft&intent=connect&date=2026-03-02`), '/day?date=2026-03-02')

  const store = memoryStore()
  const now = 1_700_000_000_000
  savePendingConnect(store, 'reconnect', now, '/week?date=2026-03-02')
  const { intent, returnPath } = takePendingConnect(store, now + 5000, origin)
  t.equal(intent, 'reconnect', 'the reconnect banner said so before leaving')
  t.equal(returnPath, '/week?date=2026-03-02', 'back to the page it began on')
  t.same(takePendingConnect(store, now, origin), { intent: 'connect', returnPath: null }, 'nothing pending: a plain connect, where Sync sent it')
  savePendingConnect(store, 'connect', now, '//evil.example/day')
  t.equal(takePendingConnect(store, now, origin).returnPath, '/day', 'a path that leaves the site is not followed')
  savePendingConnect(store, 'connect', now, '/month')
  t.same(takePendingConnect(store, now + INTENT_TTL_MS + 1, origin), { intent: 'connect', returnPath: null }, 'a stale one is not followed either')
  t.same(oauthReturnEvent({ status: 'connected', correlationId: 'Ab12cd', provider: 'google' }, intent), {
    event: 'oauth_return',
    properties: { provider: 'google', status: 'connected', intent: 'reconnect', correlationId: 'Ab12cd' }
  })
})

test('the authorization request asks for offline access with the calendar scope; granted scopes are checked', async (t) => {
  const verifier = newPkceVerifier()
  t.match(verifier, /^[A-Za-z0-9_-]{64}$/, 'a verifier of RFC 7636\'s alphabet and length')
  const proof = { codeChallenge: await pkceChallenge(verifier), nonce: await oidcNonceFor(verifier) }
  t.not(proof.nonce, proof.codeChallenge, 'the nonce is not the challenge')
  const url = new URL(googleAuthorizationUrl({ endpoint: 'https://accounts.google.com/o/oauth2/v2/auth', clientId: 'client-1', redirectUri: `${origin}/auth/extprovider/callback`, state: 'st', scopes: GOOGLE_CALENDAR_SCOPES, proof }))
  t.equal(url.searchParams.get('code_challenge'), createHash('sha256').update(verifier).digest('base64url'), 'S256 of the verifier, as RFC 7636 computes it')
  t.equal(url.searchParams.get('code_challenge_method'), 'S256')
  t.equal(url.searchParams.get('nonce'), proof.nonce)
  t.same(signInUpBody('google', { kind: 'code', code: 'c1', state: 'st', scope: null, user: null }, `${origin}/auth/extprovider/callback`, verifier).redirectURIInfo.pkceCodeVerifier, verifier, 'the sign-in sends the verifier')
  t.equal(url.searchParams.get('access_type'), 'offline')
  t.equal(url.searchParams.get('response_type'), 'code')
  t.equal(url.searchParams.get('redirect_uri'), `${origin}/auth/extprovider/callback`)
  t.equal(url.searchParams.get('state'), 'st')
  t.match(url.searchParams.get('scope'), /calendar/)
  t.equal(scopesComplete('openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile https://www.googleapis.com/auth/calendar', GOOGLE_CALENDAR_SCOPES), true)
  t.equal(scopesComplete('openid email profile', GOOGLE_CALENDAR_SCOPES), false, 'calendar access not granted')
  t.equal(scopesComplete(null, GOOGLE_CALENDAR_SCOPES), false)
  t.same(GOOGLE_CALENDAR_SCOPES, GOOGLE_SCOPES, 'sign-in and connect ask Google for what the backend requires, the calendar included')
})

const callback = `${origin}/auth/extprovider/callback`
// The backend's sign-in providers, as a configuration with Microsoft and Apple builds them.
const backendProviders = signInProviders({
  extprovider2: { clientId: 'ms-client', clientSecret: 'ms-secret' },
  idsignin: { servicesId: 'org.example.web', teamId: 'TEAM123456', keyId: 'KEY1234567', privateKey: 'key' }
})
const backendScopes = (thirdPartyId: string) => backendProviders.find((provider) => provider.config.thirdPartyId === thirdPartyId)?.config.clients[0]?.scope ?? []

test('Microsoft: the authorization-code request asks for what the backend asks for, the calendar included', async (t) => {
  const url = new URL(microsoftAuthorizationUrl({ endpoint: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize', clientId: 'ms-client', redirectUri: callback, state: 'st', proof: { codeChallenge: 'challenge-1', nonce: 'nonce-1' } }))
  t.equal(`${url.origin}${url.pathname}`, 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize')
  t.same(Object.fromEntries(url.searchParams), {
    client_id: 'ms-client',
    redirect_uri: callback,
    response_type: 'code',
    response_mode: 'query',
    scope: backendScopes('microsoft').join(' '),
    state: 'st',
    code_challenge: 'challenge-1',
    code_challenge_method: 'S256',
    nonce: 'nonce-1'
  }, 'PKCE and a nonce, though the backend redeems the code with the application\'s secret')
  t.match(url.searchParams.get('scope'), /offline_access.*Calendars\.ReadWrite/)
})

test('Apple: the request asks for name and email, which obliges the answer to come as a posted form', async (t) => {
  const url = new URL(appleAuthorizationUrl({ endpoint: 'https://appleid.apple.com/auth/authorize', clientId: 'org.example.web', redirectUri: callback, state: 'st' }))
  t.equal(`${url.origin}${url.pathname}`, 'https://appleid.apple.com/auth/authorize')
  t.equal(url.searchParams.get('response_mode'), 'form_post')
  t.equal(url.searchParams.get('response_type'), 'code')
  t.equal(url.searchParams.get('client_id'), 'org.example.web')
  t.same(url.searchParams.get('scope')?.split(' ').sort(), [...backendScopes('apple')].sort(), 'the scopes of the backend\'s Apple client')
})

test('the bundle: the real providers\' endpoints, or a stand-in\'s origin on the same paths', async (t) => {
  t.match(bundleValues({ apiUrl: 'https://cal.example.com/api', microsoftClientId: 'ms', appleServicesId: 'org.example.web' }), {
    microsoftClientId: 'ms',
    microsoftAuthorizationEndpoint: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    appleServicesId: 'org.example.web',
    appleAuthorizationEndpoint: 'https://appleid.apple.com/auth/authorize'
  })
  t.match(bundleValues({ apiUrl: 'https://cal.example.com/api', microsoftEndpointBase: 'http://127.0.0.1:4001/', appleEndpointBase: 'http://127.0.0.1:4002/some/path' }), {
    microsoftClientId: null,
    microsoftAuthorizationEndpoint: 'http://127.0.0.1:4001/common/oauth2/v2.0/authorize',
    appleServicesId: null,
    appleAuthorizationEndpoint: 'http://127.0.0.1:4002/auth/authorize'
  }, 'dev/oidc serves the providers\' own paths')
})

test('the dialogs offer a provider\'s button only when its id is in the bundle', async (t) => {
  const labels = (ids: Parameters<typeof signInOptions>[0]) => signInOptions(ids).map((option) => `${option.provider}: ${option.label}`)
  t.same(labels({ googleClientId: null, microsoftClientId: null, appleServicesId: null }), [], 'none: email and password only')
  t.same(labels({ googleClientId: 'g', microsoftClientId: null, appleServicesId: null }), ['google: Continue with Google'])
  t.same(labels({ googleClientId: null, microsoftClientId: 'ms', appleServicesId: null }), ['microsoft: Continue with Microsoft'])
  t.same(labels({ googleClientId: 'g', microsoftClientId: 'ms', appleServicesId: 'org.example.web' }), [
    'google: Continue with Google', 'microsoft: Continue with Microsoft', 'apple: Continue with Apple'
  ])
})

test('the sign-in-up body names the provider the round trip went through; only Apple\'s carries the user field', async (t) => {
  const back = { kind: 'code' as const, code: 'c1', state: 's1', scope: null, user: '{"name":{"firstName":"Cy"}}' }
  t.same(signInUpBody('microsoft', back, callback), {
    thirdPartyId: 'microsoft', redirectURIInfo: { redirectURIOnProviderDashboard: callback, redirectURIQueryParams: { code: 'c1', state: 's1' } }
  })
  t.same(signInUpBody('apple', back, callback), {
    thirdPartyId: 'apple', redirectURIInfo: { redirectURIOnProviderDashboard: callback, redirectURIQueryParams: { code: 'c1', state: 's1', user: '{"name":{"firstName":"Cy"}}' } }
  })
  t.same(signInUpBody('google', { ...back, user: null, scope: 'openid email' }, callback), {
    thirdPartyId: 'google', redirectURIInfo: { redirectURIOnProviderDashboard: callback, redirectURIQueryParams: { code: 'c1', state: 's1', scope: 'openid email' } }
  })
})

test('an intent names its provider: Microsoft and Apple sign in; a connect is Google\'s; anything else is refused', async (t) => {
  const store = memoryStore()
  const now = 1_700_000_000_000
  const state = newState()
  for (const provider of ['microsoft', 'apple'] as const) {
    saveIntent(store, state, { kind: 'signin', provider, returnPath: '/week', createdAt: now })
    t.match(takeIntent(store, state, now), { kind: 'signin', provider, returnPath: '/week' })
  }
  saveIntent(store, state, { kind: 'connect', provider: 'microsoft', returnPath: '/day', createdAt: now })
  t.equal(takeIntent(store, state, now), null, 'the client connects only Google')
  store.setItem(INTENT_PREFIX + state, JSON.stringify({ kind: 'signin', provider: 'github', returnPath: '/day', createdAt: now }))
  t.equal(takeIntent(store, state, now), null, 'an unknown provider is not posted to the backend')
  t.same(store.entries(), {}, 'and removed')
})

test('a sign-in the session library refused is said in words, never taken for a session', async (t) => {
  t.equal(signInUpRefusal({ status: 'OK' }), null)
  t.equal(signInUpRefusal({ status: 'SIGN_IN_UP_NOT_ALLOWED', reason: 'Google did not grant every permission the calendar needs.' }), 'Google did not grant every permission the calendar needs.', 'the backend\'s reason')
  t.match(signInUpRefusal({ status: 'SIGN_IN_UP_NOT_ALLOWED' }), /not accepted/)
  t.match(signInUpRefusal({ status: 'NO_EMAIL_GIVEN_BY_PROVIDER' }), /email address/)
  t.match(signInUpRefusal({}), /not accepted/)
})

test('a provider that cannot be left for is said in words: over plain http, what to do instead', async (t) => {
  t.equal(providerStartFailure('google', false), 'Signing in with Google needs this page to be opened over https. Open the calendar at its https address, or use your email and password.')
  t.equal(providerStartFailure('microsoft', true), 'Could not start with Microsoft. Reload the page and try again.')
})
