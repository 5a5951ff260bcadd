import { test } from 'tap'
import { buildApp, signUp, startDependencies, testConfig, uniqueEmail } from '../helper.js'
import { appConfigFor } from '../../lib/app-config.js'

const BILLING = { secretKey: 'sk_test_0123456789', webhookSecret: 'whsec_0123456789', priceId: 'price_0123456789', publishableKey: 'pk_test_0123456789' }

// GET /api/config: what the web client needs at run time, behind a session.
test('GET /api/config', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps, {
    extra: {
      extprovider: { clientId: 'google-client-id.apps.example', clientSecret: 'google-client-secret' },
      maps: { placesApiKey: 'places-key-0123' },
      analytics: { key: 'phc_0123', host: 'https://analytics.example' },
      // Nothing answers there: the price is left out, the rest of the block is served.
      billing: { ...BILLING, endpointBase: 'http://127.0.0.1:9' }
    }
  })

  t.equal((await app.inject({ method: 'GET', url: '/api/config' })).statusCode, 401, 'a session is required')
  const user = await signUp(app, { email: uniqueEmail('config'), password: 'pw-for-config-1' })
  const answer = await app.inject({ method: 'GET', url: '/api/config', headers: user.headers })
  t.equal(answer.statusCode, 200)
  t.same(answer.json(), {
    providers: { google: true, microsoft: false, apple: false },
    placesLookup: true,
    analytics: true,
    billing: { publishableKey: BILLING.publishableKey, trialDays: 7 }
  })
  for (const secret of [BILLING.secretKey, BILLING.webhookSecret, 'google-client-secret', 'places-key-0123']) {
    t.notOk(answer.body.includes(secret), 'no secret in the answer')
  }

  // Three of four billing keys: the configuration drops the whole block, and so does the answer.
  for (const missing of Object.keys(BILLING) as Array<keyof typeof BILLING>) {
    const incomplete: Partial<typeof BILLING> = { ...BILLING }
    delete incomplete[missing]
    const dropped = appConfigFor(testConfig(deps, { extra: { billing: incomplete } }))
    t.same(dropped, { providers: { google: false, microsoft: false, apple: false }, placesLookup: false, analytics: false }, `without ${missing}: no billing block`)
  }
  const { priceId: _dropped, ...incomplete } = BILLING
  // The same sign-in provider as the first app: the process's session library serves one set.
  const { app: incompleteApp } = await buildApp(t, deps, { extra: { billing: incomplete, extprovider: { clientId: 'google-client-id.apps.example', clientSecret: 'google-client-secret' } } })
  const other = await signUp(incompleteApp, { email: uniqueEmail('config-incomplete'), password: 'pw-for-config-2' })
  const answered = await incompleteApp.inject({ method: 'GET', url: '/api/config', headers: other.headers })
  t.equal(answered.statusCode, 200)
  t.same(answered.json(), { providers: { google: true, microsoft: false, apple: false }, placesLookup: false, analytics: false }, 'over HTTP: no billing block, nothing else on but the provider')
  t.notOk(answered.body.includes(BILLING.publishableKey), 'not even the publishable key')
})
