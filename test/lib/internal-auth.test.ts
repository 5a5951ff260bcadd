import { test } from 'tap'
import { DEFAULT_FRESHNESS_MS, INTERNAL_AUTH_HEADERS, signInternalRequest, verifyInternalRequest } from '../../lib/internal-auth.js'

const secret = 'a-shared-internal-secret-of-some-length'
const userId = '64b7f0c2a1b2c3d4e5f60718'
const now = Date.UTC(2026, 10, 21, 9, 0, 0)
const request = { secret, method: 'POST', path: '/internal/event-changes', body: '{"eventId":"e1"}', userId }

function verify (overrides: Partial<typeof request> & { headers?: Record<string, string | undefined> }, at = now) {
  const headers = overrides.headers ?? signInternalRequest(request, now)
  const { headers: _ignored, ...rest } = overrides
  return verifyInternalRequest({ ...request, ...rest, headers }, at)
}

test('a signed request verifies and names its acting user', async (t) => {
  t.same(verify({}), { ok: true, userId })
  const headers = signInternalRequest({ ...request, userId: null, body: undefined }, now)
  t.notOk(INTERNAL_AUTH_HEADERS.user in headers, 'no user header when acting for nobody')
  t.same(verifyInternalRequest({ ...request, body: undefined, headers }, now), { ok: true, userId: null })
})

test('missing headers are refused as missing', async (t) => {
  const signed = signInternalRequest(request, now)
  t.same(verify({ headers: {} }), { ok: false, reason: 'missing' })
  t.same(verify({ headers: { ...signed, [INTERNAL_AUTH_HEADERS.signature]: undefined } }), { ok: false, reason: 'missing' })
  t.same(verify({ headers: { ...signed, [INTERNAL_AUTH_HEADERS.timestamp]: undefined } }), { ok: false, reason: 'missing' })
})

test('a stale or future timestamp is refused', async (t) => {
  t.same(verify({}, now + DEFAULT_FRESHNESS_MS + 1000), { ok: false, reason: 'stale' })
  t.same(verify({}, now - DEFAULT_FRESHNESS_MS - 1000), { ok: false, reason: 'stale' })
  t.same(verify({}, now + DEFAULT_FRESHNESS_MS - 1000), { ok: true, userId }, 'inside the window')
})

test('any change to what was signed makes the signature forged', async (t) => {
  t.same(verify({ path: '/internal/changes/batch' }), { ok: false, reason: 'forged' }, 'replayed on another path')
  t.same(verify({ path: '/internal/event-changes?x=1' }), { ok: false, reason: 'forged' }, 'query string is covered')
  t.same(verify({ method: 'GET' }), { ok: false, reason: 'forged' }, 'another method')
  t.same(verify({ body: '{"eventId":"e2"}' }), { ok: false, reason: 'forged' }, 'another body')
  t.same(verify({ secret: 'another-secret' }), { ok: false, reason: 'forged' }, 'another secret')
  const signed = signInternalRequest(request, now)
  t.same(verify({ headers: { ...signed, [INTERNAL_AUTH_HEADERS.user]: '64b7f0c2a1b2c3d4e5f60719' } }), { ok: false, reason: 'forged' }, 'another acting user')
  t.same(verify({ headers: { ...signed, [INTERNAL_AUTH_HEADERS.user]: undefined } }), { ok: false, reason: 'forged' }, 'acting user removed')
  const shifted = String(Number(signed[INTERNAL_AUTH_HEADERS.timestamp]) + 1)
  t.same(verify({ headers: { ...signed, [INTERNAL_AUTH_HEADERS.timestamp]: shifted } }), { ok: false, reason: 'forged' }, 'another timestamp')
})

test('malformed signatures are refused without comparing', async (t) => {
  const signed = signInternalRequest(request, now)
  const signature = signed[INTERNAL_AUTH_HEADERS.signature] ?? ''
  for (const bad of [signature.slice(0, -2), signature.replace('v1=', 'v2='), signature.toUpperCase(), 'v1=' + 'zz'.repeat(32)]) {
    t.same(verify({ headers: { ...signed, [INTERNAL_AUTH_HEADERS.signature]: bad } }), { ok: false, reason: 'malformed' }, bad)
  }
  t.same(verify({ headers: { ...signed, [INTERNAL_AUTH_HEADERS.timestamp]: 'soon' } }), { ok: false, reason: 'malformed' })
})
