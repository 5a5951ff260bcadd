// Properties of the stand-in itself (not of the CDI), so these always run against it.
import { Writable } from 'node:stream'
import { test } from 'tap'
import { startSessionCore } from '../../../dev/session-core/index.js'
import { call, cdi } from './harness.js'
import { decodeJwt, decodeProtectedHeader } from 'jose'

const API_KEY = 'a-test-api-key-that-is-long-enough'

test('refuses api keys the real core would refuse', async (t) => {
  await t.rejects(startSessionCore({ apiKey: 'short' }), /at least 20 characters/)
  await t.rejects(startSessionCore({ apiKey: 'long_enough_but_with_underscores' }), /only letters, digits/)
})

test('binds 127.0.0.1, honours token lifetimes, keeps the api key out of logs', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'))
      done()
    }
  })
  const core = await startSessionCore({
    apiKey: API_KEY, accessTokenValiditySec: 120, refreshTokenValidityMin: 5, logger: { level: 'trace', stream }
  })
  t.teardown(() => core.close())
  t.match(core.uri, /^http:\/\/127\.0\.0\.1:\d+$/)
  const target = { uri: core.uri, apiKey: API_KEY }

  const created = await cdi(target, 'POST', '/public/recipe/session', {
    userId: 'user-1', userDataInJWT: { role: 'tester' }, userDataInDatabase: {}, enableAntiCsrf: false, useDynamicSigningKey: false
  })
  t.equal(created.body['status'], 'OK')
  const access = created.body['accessToken'] as { token: string, expiry: number, createdTime: number }
  const refresh = created.body['refreshToken'] as { expiry: number, createdTime: number }
  t.equal(access.expiry - access.createdTime, 120_000, 'access token lifetime')
  t.equal(refresh.expiry - refresh.createdTime, 5 * 60_000, 'refresh token lifetime')
  const header = decodeProtectedHeader(access.token) as { kid: string }
  t.match(header.kid, /^s-/, 'static signing key on request')
  const claims = decodeJwt(access.token)
  t.equal(claims['role'], 'tester', 'custom claims at the top level')

  const logged = lines.join('')
  t.ok(logged.length > 0, 'requests were logged')
  t.notMatch(logged, API_KEY, 'api key never logged')
  t.notMatch(logged, access.token, 'tokens never logged')
})

test('bad input gets a clear 400 and changes nothing', async (t) => {
  const core = await startSessionCore({ apiKey: API_KEY })
  t.teardown(() => core.close())
  const target = { uri: core.uri, apiKey: API_KEY }

  const bad = await cdi(target, 'POST', '/public/recipe/signup', { email: 42, password: 'whatever-1' })
  t.equal(bad.status, 400)
  t.match(String(bad.body['text']), /email/)
  const lookup = await cdi(target, 'GET', '/public/users/by-accountinfo?email=42&doUnionOfAccountInfo=false')
  t.same(lookup.body['users'], [])

  const missingFlag = await cdi(target, 'POST', '/public/recipe/session', { userId: 'u', userDataInJWT: {}, userDataInDatabase: {} })
  t.equal(missingFlag.status, 400, 'enableAntiCsrf is required, as by the core')
  const protectedClaim = await cdi(target, 'POST', '/public/recipe/session',
    { userId: 'u', userDataInJWT: { sub: 'admin' }, userDataInDatabase: {}, enableAntiCsrf: false })
  t.equal(protectedClaim.status, 400, 'a custom payload cannot set core claims')
  t.same((await cdi(target, 'GET', '/recipe/session/user?userId=u')).body['sessionHandles'], [], 'no session created')

  const otherVersion = await cdi(target, 'GET', '/recipe/user/metadata?userId=u', undefined, { 'cdi-version': '2.9' })
  t.equal(otherVersion.status, 400, 'only CDI 5.4 is spoken')

  const unknownTenant = await cdi(target, 'POST', '/elsewhere/recipe/signup', { email: 'a@b.c', password: 'whatever-1' })
  t.equal(unknownTenant.status, 400)

  const unknownPath = await cdi(target, 'GET', '/recipe/totp/device/list?userId=u')
  t.equal(unknownPath.status, 404)

  const tenant = await cdi(target, 'GET', '/elsewhere/recipe/multitenancy/tenant/v2')
  t.same(tenant.body, { status: 'TENANT_NOT_FOUND_ERROR' })
  const publicTenant = await cdi(target, 'GET', '/public/recipe/multitenancy/tenant/v2')
  t.equal(publicTenant.body['status'], 'OK')
  t.notOk('firstFactors' in publicTenant.body, 'firstFactors omitted, never null')

  t.same((await cdi(target, 'GET', '/apiversion')).body, { versions: ['5.4'] })
  t.equal((await call(core.uri, 'GET', '/apiversion')).status, 401, 'the version handshake needs the key too')
  t.equal((await call(core.uri, 'GET', '/hello')).status, 200, 'hello is open')
})

test('an expired access token must be refreshed; the refresh token still works', async (t) => {
  // JWT expiry has whole-second precision, so a 3 s lifetime leaves a fresh token valid for more
  // than 2 s (a 1 s one could expire before its first use on a busy machine).
  const core = await startSessionCore({ apiKey: API_KEY, accessTokenValiditySec: 3 })
  t.teardown(() => core.close())
  const target = { uri: core.uri, apiKey: API_KEY }
  const created = await cdi(target, 'POST', '/public/recipe/session',
    { userId: 'user-2', userDataInJWT: {}, userDataInDatabase: {}, enableAntiCsrf: false })
  const accessToken = (created.body['accessToken'] as { token: string }).token
  const refreshToken = (created.body['refreshToken'] as { token: string }).token
  const verifyBody = { accessToken, doAntiCsrfCheck: false, enableAntiCsrf: false, checkDatabase: false }
  t.equal((await cdi(target, 'POST', '/recipe/session/verify', verifyBody)).body['status'], 'OK', 'fresh token verifies')
  // Waits out the lifetime; nothing here measures how long anything took.
  await new Promise((resolve) => setTimeout(resolve, 3100))
  const expired = await cdi(target, 'POST', '/recipe/session/verify', verifyBody)
  t.equal(expired.body['status'], 'TRY_REFRESH_TOKEN')
  const refreshed = await cdi(target, 'POST', '/recipe/session/refresh', { refreshToken, enableAntiCsrf: false, useDynamicSigningKey: true })
  t.equal(refreshed.body['status'], 'OK')
})
