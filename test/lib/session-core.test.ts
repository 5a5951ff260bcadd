import { createServer, type AddressInfo } from 'node:net'
import { test } from 'tap'
import { claimedExpiry, coreProbe, isSessionCoreUnavailableError } from '../../clients/session-core.js'

function token (payload: unknown): string {
  return `header.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.signature`
}

test('the session library\'s errors for a core it could not use are told from its refusals', async (t) => {
  t.ok(isSessionCoreUnavailableError(new Error('No SuperTokens core available to query')))
  t.ok(isSessionCoreUnavailableError(new Error('SuperTokens core threw an error for a POST request to path: \'/recipe/signin\' with status code: 500 and message: x')))
  t.notOk(isSessionCoreUnavailableError(new Error('SuperTokens core threw an error for a POST request to path: \'/recipe/signin\' with status code: 400 and message: x')), 'a 4xx is a refusal')
  t.notOk(isSessionCoreUnavailableError(new Error('something else')))
  t.notOk(isSessionCoreUnavailableError('No SuperTokens core available to query'), 'only errors')
})

test('the expiry an access token claims, read without its signature', async (t) => {
  t.equal(claimedExpiry(token({ exp: 1_800_000_000 })), 1_800_000_000_000)
  t.equal(claimedExpiry(token({ sub: 'x' })), undefined, 'no exp')
  t.equal(claimedExpiry(token('a string')), undefined, 'not an object')
  t.equal(claimedExpiry('no-dots'), undefined, 'not a JWT')
  t.equal(claimedExpiry('a.%%%.c'), undefined, 'not JSON')
})

test('the core probe: false for a core that does not answer, shared while fresh', async (t) => {
  const silent = createServer(() => {})
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => silent.close())
  const probe = coreProbe(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, 200, 60_000)
  const started = Date.now()
  t.equal(await probe(), false)
  t.ok(Date.now() - started < 2000, 'within its deadline')
  const again = Date.now()
  t.equal(await probe(), false)
  t.ok(Date.now() - again < 100, 'the answer is reused')
})
