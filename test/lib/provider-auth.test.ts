import { test } from 'tap'
import {
  decideGoogleAuthMode, googleGrantRefusal, isAllowedRedirectUri, missingGoogleScopes, providerLoginDetails, providerRedirectUri,
  syncAllowsIncremental, traceIdsFrom
} from '../../lib/provider-auth.js'
import { GOOGLE_SCOPES } from '../../lib/identity-providers.js'

test('the Google mode, cell by cell', async (t) => {
  for (const userExists of [false, true]) {
    for (const refreshTokenStored of [false, true]) {
      for (const syncOk of [false, true]) {
        const expected = !userExists ? 'SIGNUP' : refreshTokenStored && syncOk ? 'SIGNIN_INCREMENTAL' : 'RECONNECT_REPAIR'
        t.equal(decideGoogleAuthMode({ userExists, refreshTokenStored, syncAllowsIncremental: syncOk }), expected, JSON.stringify({ userExists, refreshTokenStored, syncOk }))
      }
    }
  }
})

test('sync health allows an incremental sync only for live Google connections', async (t) => {
  t.notOk(syncAllowsIncremental(null), 'Sync unreachable')
  t.notOk(syncAllowsIncremental([]), 'no connection')
  t.ok(syncAllowsIncremental([{ provider: 'google', state: 'healthy' }, { provider: 'caldav', state: 'actionRequired' }]))
  t.ok(syncAllowsIncremental([{ provider: 'google', state: 'catchingUp' }]))
  for (const state of ['actionRequired', 'delayed', 'disconnected', 'connecting'] as const) {
    t.notOk(syncAllowsIncremental([{ provider: 'google', state }]), state)
  }
})

test('one redirect URI, compared exactly', async (t) => {
  t.equal(providerRedirectUri('https://calendar.example.com/some/path'), 'https://calendar.example.com/auth/extprovider/callback')
  t.ok(isAllowedRedirectUri('https://calendar.example.com/auth/extprovider/callback', 'https://calendar.example.com'))
  for (const other of ['https://calendar.example.com/auth/extprovider/callback/', 'http://calendar.example.com/auth/extprovider/callback', 'https://calendar.example.com/auth/extprovider/callback?x=1']) {
    t.notOk(isAllowedRedirectUri(other, 'https://calendar.example.com'), other)
  }
})

test('Google scopes: short and long names are one grant; offline access is required unless a token is stored', async (t) => {
  const granted = 'openid https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile https://www.googleapis.com/auth/calendar'
  t.same(missingGoogleScopes(GOOGLE_SCOPES, granted), [])
  t.same(missingGoogleScopes(GOOGLE_SCOPES, 'openid email profile'), ['https://www.googleapis.com/auth/calendar'])
  t.same(missingGoogleScopes(GOOGLE_SCOPES, undefined), GOOGLE_SCOPES)
  t.equal(googleGrantRefusal({ requiredScopes: GOOGLE_SCOPES, grantedScope: granted, refreshTokenIssued: false, refreshTokenStored: true }), undefined)
  t.match(googleGrantRefusal({ requiredScopes: GOOGLE_SCOPES, grantedScope: granted, refreshTokenIssued: false, refreshTokenStored: false }), /offline/)
})

test('trace ids: stable per value, keyed, never the value', async (t) => {
  const trace = traceIdsFrom('a-service-token-0123456789')
  t.equal(trace('Ada@Example.com '), trace('ada@example.com'), 'normalized first')
  t.not(trace('ada@example.com'), trace('bob@example.com'))
  t.not(traceIdsFrom('another-key-0123456789')('ada@example.com'), trace('ada@example.com'), 'another key, another id')
  t.notMatch(trace('ada@example.com'), /ada/)
})

test('what each provider says about the person', async (t) => {
  const base = { thirdPartyUserId: 'sub-1', email: ' Ada@Example.com ', oAuthTokens: { refresh_token: '1//r', scope: 'openid email' } }
  t.match(providerLoginDetails({ ...base, thirdPartyId: 'google', rawUserInfo: { fromIdTokenPayload: { email_verified: true, name: 'Ada' } } }),
    { provider: 'google', accountId: 'sub-1', email: 'ada@example.com', emailVerified: true, privateRelay: false, name: 'Ada', refreshToken: '1//r', grantedScope: 'openid email' })
  t.match(providerLoginDetails({ ...base, thirdPartyId: 'microsoft', rawUserInfo: { fromIdTokenPayload: { xms_edov: true } } }), { emailVerified: true })
  t.match(providerLoginDetails({ ...base, thirdPartyId: 'microsoft', rawUserInfo: { fromIdTokenPayload: {} } }), { emailVerified: false })
  t.match(providerLoginDetails({
    ...base,
    thirdPartyId: 'apple',
    email: 'x@privaterelay.appleid.com',
    rawUserInfo: { fromIdTokenPayload: { email_verified: 'true', is_private_email: 'true', user: { name: { firstName: 'Cy', lastName: 'Twombly' } } } }
  }), { emailVerified: true, privateRelay: true, name: 'Cy Twombly' })
  t.equal(providerLoginDetails({ ...base, thirdPartyId: 'github', rawUserInfo: {} }), undefined)
})
