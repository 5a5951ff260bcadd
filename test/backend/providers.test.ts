import { test } from 'tap'
import { buildApp, startDependencies, WEB_URL } from '../helper.js'
import { signInProviders } from '../../lib/identity-providers.js'
import { checkCrossKeyRules } from '../../lib/config-rules.js'

test('provider sign-in is offered only for configured providers', async (t) => {
  t.same(signInProviders({}), [])
  t.same(signInProviders({ extprovider: { clientId: 'REPLACE_WITH_ID', clientSecret: 'REPLACE_WITH_SECRET' } }), [], 'placeholders offer nothing')
  const all = signInProviders({
    extprovider: { clientId: 'g-id', clientSecret: 'g-secret' },
    extprovider2: { clientId: 'm-id', clientSecret: 'm-secret' },
    idsignin: { servicesId: 'com.example.web', teamId: 'TEAM', keyId: 'KEY', privateKey: '-----BEGIN PRIVATE KEY-----' }
  })
  t.same(all.map((provider) => provider.config.thirdPartyId), ['google', 'microsoft', 'apple'])
})

// The session library keeps one configuration per process: this file configures Google.
test('with Google configured, the authorisation URL asks for offline calendar access', async (t) => {
  // The machine is offline: Google's OpenID discovery document is answered here, as Google does.
  const realFetch = globalThis.fetch
  globalThis.fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input)
    if (url.startsWith('https://accounts.google.com/.well-known/openid-configuration')) {
      return Response.json({
        issuer: 'https://accounts.google.com',
        authorization_endpoint: 'https://accounts.google.com/o/oauth2/v2/auth',
        token_endpoint: 'https://oauth2.googleapis.com/token',
        userinfo_endpoint: 'https://openidconnect.googleapis.com/v1/userinfo',
        jwks_uri: 'https://www.googleapis.com/oauth2/v3/certs'
      })
    }
    return await realFetch(input, init)
  }
  t.teardown(() => { globalThis.fetch = realFetch })

  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps, { extra: { extprovider: { clientId: 'google-client-id.apps.example', clientSecret: 'google-client-secret' } } })
  const redirect = `${WEB_URL}/auth/extprovider/callback`
  const response = await app.inject({
    method: 'GET',
    url: `/api/auth/authorisationurl?thirdPartyId=google&redirectURIOnProviderDashboard=${encodeURIComponent(redirect)}`
  })
  t.equal(response.statusCode, 200, response.body)
  const body = response.json()
  t.equal(body.status, 'OK')
  const url = new URL(body.urlWithQueryParams)
  t.equal(url.host, 'accounts.google.com')
  t.equal(url.searchParams.get('client_id'), 'google-client-id.apps.example')
  t.equal(url.searchParams.get('access_type'), 'offline')
  t.equal(url.searchParams.get('redirect_uri'), redirect)
  t.match(url.searchParams.get('scope') ?? '', /https:\/\/www\.googleapis\.com\/auth\/calendar/)
  t.notMatch(body.urlWithQueryParams, /google-client-secret/, 'the secret never leaves the backend')

  for (const other of ['https://evil.example/cb', `${redirect}/`, `${redirect}?next=https://evil.example`, 'http://localhost:9081/auth/extprovider/callback']) {
    const refused = await app.inject({ method: 'GET', url: `/api/auth/authorisationurl?thirdPartyId=google&redirectURIOnProviderDashboard=${encodeURIComponent(other)}` })
    t.equal(refused.statusCode, 400, other)
    t.equal(refused.json().code, 'REDIRECT_URI_NOT_ALLOWED', other)
    t.notMatch(refused.body, /accounts\.google\.com/, 'no authorization URL for it')
  }

  const unknown = await app.inject({ method: 'GET', url: '/api/auth/authorisationurl?thirdPartyId=apple&redirectURIOnProviderDashboard=x' })
  t.not(unknown.json().status, 'OK', 'an unconfigured provider is not offered')
})

test('stand-in origins are development only, Apple\'s included', async (t) => {
  const production = {
    runtime: { nodeEnv: 'production' as const, timezone: 'UTC' as const, logLevel: 'info' as const, version: 'latest' },
    sync: { databaseUri: 'mongodb://x/sync', internalAuthToken: 't', callbackBaseUrl: 'http://x', serviceUrl: 'http://x', port: 3010, cloudMutationMode: 'enabled' as const, execution: 'passive' as const, postConnectRedirectUrl: 'http://x' },
    idsignin: { endpointBase: 'http://127.0.0.1:4030' }
  }
  t.same(checkCrossKeyRules(production, 'backend').filter((finding) => finding.key.endsWith('endpointBase')).map((finding) => finding.key), ['idsignin.endpointBase'])
  t.same(checkCrossKeyRules({ ...production, runtime: { ...production.runtime, nodeEnv: 'development' } }, 'backend').filter((finding) => finding.key.endsWith('endpointBase')), [])
})
