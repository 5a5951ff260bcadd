import { test } from 'tap'
import { call, cdi, formFields, HeaderClient, startHarness, uniqueEmail } from './harness.js'
import { startTarget } from './target.js'

test('api key: refused when missing or wrong, the JWKS stays public', async (t) => {
  const target = await startTarget(t)
  const configuredKey = target.apiKey
  if (configuredKey === undefined) {
    // A real core given without SESSIONS_KEY has nothing to refuse; plan(0) reports this test as skipped.
    t.plan(0, 'the core under test (SESSIONS_URI) has no api key: set SESSIONS_KEY to run this check')
    return
  }
  // The SDK in this file is configured with the wrong key.
  const { baseUrl } = await startHarness(t, target, { apiKey: `${configuredKey}-wrong` })

  await t.test('direct calls', async (t) => {
    const verifyBody = { accessToken: 'not-a-token', doAntiCsrfCheck: false, enableAntiCsrf: false, checkDatabase: false }
    const missing = await call(target.uri, 'POST', '/recipe/session/verify', { body: verifyBody, headers: { 'cdi-version': '5.4' } })
    t.equal(missing.status, 401, 'no api-key header')
    const wrong = await cdi(target, 'POST', '/recipe/session/verify', verifyBody, { 'api-key': `${configuredKey}x` })
    t.equal(wrong.status, 401, 'wrong api key')
    const sameLengthWrong = await cdi(target, 'POST', '/recipe/session/verify', verifyBody,
      { 'api-key': `${configuredKey.slice(0, -1)}${configuredKey.endsWith('a') ? 'b' : 'a'}` })
    t.equal(sameLengthWrong.status, 401, 'wrong api key of the same length')
    const right = await cdi(target, 'POST', '/recipe/session/verify', verifyBody)
    t.equal(right.status, 200, 'right api key')
    t.equal(right.body['status'], 'TRY_REFRESH_TOKEN', 'a garbage token is a business error, not an HTTP one')

    const jwks = await call(target.uri, 'GET', '/.well-known/jwks.json')
    t.equal(jwks.status, 200, 'JWKS needs no api key')
    t.match(jwks.headers.get('cache-control') ?? '', /max-age=\d+/, 'JWKS is cacheable')
    const keys = jwks.body['keys'] as Array<Record<string, unknown>>
    t.ok(keys.length > 0)
    for (const key of keys) {
      t.equal(key['kty'], 'RSA')
      t.notOk('d' in key, 'no private key material')
    }
  })

  await t.test('the SDK with a wrong key cannot create users', async (t) => {
    const email = uniqueEmail('nokey')
    const result = await new HeaderClient(baseUrl).request('POST', '/auth/signup', formFields({ email, password: 'correct-horse-9', name: 'X' }))
    t.equal(result.status, 500, 'the SDK throws on the 401 and the app answers 500')
    const lookup = await cdi(target, 'GET', `/public/users/by-accountinfo?email=${encodeURIComponent(email)}&doUnionOfAccountInfo=false`)
    t.equal(lookup.status, 200)
    t.same(lookup.body['users'], [], 'no user was created')
  })
})
