import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import { test } from 'tap'
import { buildApp, listen, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { INTERNAL_AUTH_HEADERS, verifyInternalRequest } from '../../lib/internal-auth.js'

// `/sync/*` reaches the Sync service's public callbacks and nothing else of it. A recording
// upstream stands where Sync listens, so the test sees exactly what Sync would receive.
test('the /sync proxy', async (t) => {
  const received: Array<{ method: string, url: string, headers: Record<string, string | string[] | undefined>, body: unknown }> = []
  const upstream = Fastify()
  upstream.all('/*', async (request, reply) => {
    received.push({ method: request.method, url: request.url, headers: request.headers, body: request.body })
    if (request.url.startsWith('/oauth/')) return await reply.redirect('http://localhost:9080/day?status=connected&cid=abc123', 302)
    return { ok: true }
  })
  await upstream.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => upstream.close())
  const internalAuthToken = randomBytes(16).toString('hex')
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps, { syncUrl: `http://127.0.0.1:${(upstream.server.address() as { port: number }).port}`, internalAuthToken })
  const base = await listen(app)
  const email = uniqueEmail('proxied')
  const user = await signUp(app, { email, password: 'pw-for-proxy-1' })

  await t.test('an OAuth callback with a browser session: Sync learns the signed-in user, not the session', async (t) => {
    received.length = 0
    const cookieSession = await app.inject({
      method: 'POST',
      url: '/api/auth/signin',
      headers: { rid: 'emailpassword' },
      payload: { formFields: [{ id: 'email', value: email }, { id: 'password', value: 'pw-for-proxy-1' }] }
    })
    const cookies = [cookieSession.headers['set-cookie']].flat().filter((cookie): cookie is string => typeof cookie === 'string').map((cookie) => cookie.split(';')[0]).join('; ')
    const answer = await fetch(`${base}/sync/oauth/google/callback?code=c0de&state=s7ate`, {
      redirect: 'manual',
      headers: { cookie: cookies, [INTERNAL_AUTH_HEADERS.user]: 'f'.repeat(24) }
    })
    t.equal(answer.status, 302)
    t.equal(answer.headers.get('location'), 'http://localhost:9080/day?status=connected&cid=abc123', 'Sync\'s redirect reaches the browser')
    const seen = received[0]
    t.equal(seen?.url, '/oauth/google/callback?code=c0de&state=s7ate')
    t.notOk(seen?.headers.cookie, 'the backend\'s session cookies stay with the backend')
    const verified = verifyInternalRequest({ secret: internalAuthToken, method: 'GET', path: seen?.url ?? '', headers: seen?.headers ?? {} }, Date.now())
    t.same(verified, { ok: true, userId: user.userId }, 'a signed statement of who is signed in, not the header the browser sent')
  })

  await t.test('without a session: no user, and a forged one is dropped', async (t) => {
    received.length = 0
    const answer = await fetch(`${base}/sync/oauth/google/callback?error=access_denied&state=s7ate`, {
      redirect: 'manual',
      headers: { [INTERNAL_AUTH_HEADERS.user]: 'f'.repeat(24), [INTERNAL_AUTH_HEADERS.signature]: 'v1=00' }
    })
    t.equal(answer.status, 302)
    t.notOk(received[0]?.headers[INTERNAL_AUTH_HEADERS.user])
    t.notOk(received[0]?.headers[INTERNAL_AUTH_HEADERS.signature])
  })

  await t.test('provider notifications pass through with their headers', async (t) => {
    received.length = 0
    const answer = await fetch(`${base}/sync/webhooks/google`, {
      method: 'POST',
      headers: { 'x-goog-channel-id': 'channel-1', 'x-goog-channel-token': 'secret-token', 'x-goog-resource-state': 'exists' }
    })
    t.equal(answer.status, 200)
    t.equal(received[0]?.url, '/webhooks/google')
    t.equal(received[0]?.headers['x-goog-channel-token'], 'secret-token')
  })

  await t.test('a scheduler\'s ID token reaches /maintenance; a browser\'s bearer token never reaches the others', async (t) => {
    received.length = 0
    await fetch(`${base}/sync/maintenance`, { method: 'POST', headers: { authorization: 'Bearer id-token-of-the-scheduler' } })
    await fetch(`${base}/sync/webhooks/google`, { method: 'POST', headers: { authorization: `Bearer ${user.accessToken}` } })
    t.equal(received[0]?.headers.authorization, 'Bearer id-token-of-the-scheduler')
    t.notOk(received[1]?.headers.authorization)
  })

  await t.test('the internal API of Sync is not reachable through the proxy', async (t) => {
    received.length = 0
    for (const path of ['/sync/internal/changes', '/sync/health/live', '/sync/']) {
      const answer = await fetch(`${base}${path}`)
      t.equal(answer.status, 404, `${path} is not proxied`)
    }
    t.same(received, [], 'nothing reached Sync')
  })
})
