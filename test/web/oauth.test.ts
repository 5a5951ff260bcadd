// The pure parts of provider sign-in and connect: the intent under `state`, the same-origin
// return path, the callback and connect-redirect parsing, and the oauth_return event.
import { test } from 'tap'
import {
  FALLBACK_RETURN_PATH, INTENT_PREFIX, INTENT_TTL_MS, googleAuthorizationUrl, newState, oauthReturnEvent, parseCallback,
  parseConnectRedirect, safeReturnPath, saveIntent, savePendingConnect, scopesComplete, takeIntent, takePendingConnect, withoutConnectRedirect,
  GOOGLE_CALENDAR_SCOPES
} from '../../web/src/lib/oauth.js'
import { memoryStore } from '../../web/src/lib/storage.js'

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
  t.same(parseCallback('?code=4%2F0Ab&state=s1&scope=email%20openid'), { kind: 'code', code: '4/0Ab', state: 's1', scope: 'email openid' })
  t.same(parseCallback('?error=access_denied&state=s1'), { kind: 'providerError', error: 'access_denied', state: 's1' })
  t.same(parseCallback('?state=s1'), { kind: 'invalid' })
  t.same(parseCallback(''), { kind: 'invalid' })
})

test('the Sync redirect after a connect: status and cid, one oauth_return for each, connected included', async (t) => {
  t.same(parseConnectRedirect('?status=connected&cid=Ab12cd'), { status: 'connected', correlationId: 'Ab12cd', provider: 'google' })
  t.same(parseConnectRedirect('?status=error&cid=zz99&provider=microsoft'), { status: 'error', correlationId: 'zz99', provider: 'microsoft' })
  t.equal(parseConnectRedirect('?status=connected'), null, 'no cid: not a connect redirect')
  t.equal(parseConnectRedirect('?status=<script>&cid=abcd'), null)
  t.equal(withoutConnectRedirect(`${origin}/day?status=connected&cid=Ab12cd&date=2026-03-02`), '/day?date=2026-03-02')

  const store = memoryStore()
  const now = 1_700_000_000_000
  savePendingConnect(store, 'reconnect', now)
  const intent = takePendingConnect(store, now + 5000)
  t.equal(intent, 'reconnect', 'the reconnect banner said so before leaving')
  t.equal(takePendingConnect(store, now), 'connect', 'nothing pending: a plain connect')
  t.same(oauthReturnEvent({ status: 'connected', correlationId: 'Ab12cd', provider: 'google' }, intent), {
    event: 'oauth_return',
    properties: { provider: 'google', status: 'connected', intent: 'reconnect', correlationId: 'Ab12cd' }
  })
})

test('the authorization request asks for offline access with the calendar scope; granted scopes are checked', async (t) => {
  const url = new URL(googleAuthorizationUrl({ endpoint: 'https://accounts.google.com/o/oauth2/v2/auth', clientId: 'client-1', redirectUri: `${origin}/auth/extprovider/callback`, state: 'st', scopes: GOOGLE_CALENDAR_SCOPES }))
  t.equal(url.searchParams.get('access_type'), 'offline')
  t.equal(url.searchParams.get('response_type'), 'code')
  t.equal(url.searchParams.get('redirect_uri'), `${origin}/auth/extprovider/callback`)
  t.equal(url.searchParams.get('state'), 'st')
  t.match(url.searchParams.get('scope'), /calendar/)
  t.equal(scopesComplete('openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile https://www.googleapis.com/auth/calendar', GOOGLE_CALENDAR_SCOPES), true)
  t.equal(scopesComplete('openid email profile', GOOGLE_CALENDAR_SCOPES), false, 'calendar access not granted')
  t.equal(scopesComplete(null, GOOGLE_CALENDAR_SCOPES), false)
})
