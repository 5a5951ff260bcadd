import { randomBytes } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import Fastify from 'fastify'
import { test } from 'tap'
import { buildApp, listen, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { INTERNAL_AUTH_HEADERS, verifyInternalRequest } from '../../lib/internal-auth.js'

// `/sync/*` reaches the Sync service's public callbacks and nothing else of it. A recording
// upstream stands where Sync listens, so the test sees exactly what Sync would receive.
test('the /sync proxy', async (t) => {
  const received: Array<{ method: string, url: string, headers: Record<string, string | string[] | undefined>, body: unknown }> = []
  const upstream = Fastify()
  // Bytes as sent, so the test sees whether the proxy passed them on unchanged.
  upstream.removeAllContentTypeParsers()
  upstream.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 8 * 1024 * 1024 }, (_request, body, done) => { done(null, body) })
  upstream.all('/*', async (request, reply) => {
    received.push({ method: request.method, url: request.url, headers: request.headers, body: Buffer.isBuffer(request.body) ? request.body.toString() : request.body })
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

  await t.test('the connect binder: the cookie\'s goes to Sync, a header of the caller\'s does not, and the browser forgets it', async (t) => {
    received.length = 0
    const answer = await fetch(`${base}/sync/oauth/microsoft/callback?code=c0de&state=s7ate`, {
      redirect: 'manual',
      headers: { cookie: 'calendar_connect_microsoft=from-the-cookie; calendar_connect_google=not-this-one', 'x-calendar-connect-binder': 'chosen-by-the-caller', 'x-calendar-session-user': 'f'.repeat(24) }
    })
    t.equal(answer.status, 302)
    t.equal(received[0]?.headers['x-calendar-connect-binder'], 'from-the-cookie', 'the binder of the callback\'s own provider')
    t.notOk(received[0]?.headers['x-calendar-session-user'], 'a user named by the caller does not reach Sync')
    // The cookie's path is sync.callbackBaseUrl's (here without one of its own), then /oauth/.
    t.equal(new URL(app.config.sync.callbackBaseUrl).pathname, '/')
    t.equal(answer.headers.get('set-cookie'), 'calendar_connect_microsoft=; Max-Age=0; Path=/oauth/; HttpOnly; SameSite=Lax')

    received.length = 0
    await fetch(`${base}/sync/oauth/google/callback?code=c0de&state=s7ate`, { redirect: 'manual', headers: { 'x-calendar-connect-binder': 'chosen-by-the-caller' } })
    t.notOk(received[0]?.headers['x-calendar-connect-binder'], 'no cookie: no binder at all')
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

  await t.test('a body sent after Expect: 100-continue (curl does so past 1 KB) is passed on, without the header', async (t) => {
    received.length = 0
    const body = JSON.stringify({ value: [{ subscriptionId: 's-1', clientState: 'c'.repeat(2048) }] })
    const answer = await rawPost(`${base}/sync/webhooks/microsoft`, body, { 'content-type': 'application/json', expect: '100-continue', 'content-length': String(Buffer.byteLength(body)) })
    t.equal(answer.status, 200)
    t.equal(received[0]?.body, body, 'the bytes arrive unchanged')
    t.notOk(received[0]?.headers.expect)
  })

  await t.test('a body over 1 MiB answers 413 and never reaches Sync, announced or chunked', async (t) => {
    received.length = 0
    const big = 'x'.repeat(2 * 1024 * 1024)
    const announced = await rawPost(`${base}/sync/webhooks/google`, big, { 'content-type': 'application/json', expect: '100-continue', 'content-length': String(big.length) })
    t.equal(announced.status, 413)
    t.equal(announced.json()['code'], 'FST_ERR_CTP_BODY_TOO_LARGE')
    const chunked = await rawPost(`${base}/sync/webhooks/google`, big, { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' })
    t.equal(chunked.status, 413)
    t.same(received, [], 'nothing reached Sync')
  })
})

/** A POST over node:http, which sends Expect and chunked bodies as curl does (fetch does neither). */
async function rawPost (url: string, body: string, headers: Record<string, string>): Promise<{ status: number, json: () => Record<string, unknown> }> {
  return await new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        resolve({ status: response.statusCode ?? 0, json: () => JSON.parse(text) as Record<string, unknown> })
      })
    })
    request.on('error', reject)
    if (headers.expect === undefined) request.end(body)
    // A server that refuses before reading answers without 100 Continue; the body is then not sent.
    else request.on('continue', () => request.end(body)).on('response', () => { if (!request.writableEnded) request.end() })
  })
}
