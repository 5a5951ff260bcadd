import { connect } from 'node:net'
import { test } from 'tap'
import { buildApp, listen, signUp, startDependencies, uniqueEmail, WEB_URL } from '../helper.js'
import { REQUEST_RECEIVE_DEADLINE_MS } from '../../app.js'

test('request pipeline', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)

  await t.test('an allowed origin gets credentials and the session headers exposed', async (t) => {
    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/api/auth/signin',
      headers: { origin: WEB_URL, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,sx-auth-mode,rid' }
    })
    t.equal(preflight.statusCode, 204)
    t.equal(preflight.headers['access-control-allow-origin'], WEB_URL)
    t.equal(preflight.headers['access-control-allow-credentials'], 'true')
    t.match(String(preflight.headers['access-control-allow-headers']), /sx-auth-mode/)
    t.match(String(preflight.headers['access-control-allow-headers']), /st-auth-mode/)

    const response = await app.inject({ method: 'GET', url: '/api/health', headers: { origin: WEB_URL } })
    t.equal(response.headers['access-control-allow-origin'], WEB_URL)
    const exposed = String(response.headers['access-control-expose-headers'])
    for (const header of ['sx-access-token', 'sx-refresh-token', 'front-token']) t.match(exposed, header)
  })

  await t.test('another origin gets no CORS grant', async (t) => {
    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/api/auth/signin',
      headers: { origin: 'https://evil.example.net', 'access-control-request-method': 'POST' }
    })
    t.notOk(preflight.headers['access-control-allow-origin'])
    t.notOk(preflight.headers['access-control-allow-credentials'])
    const response = await app.inject({ method: 'GET', url: '/api/health', headers: { origin: 'https://evil.example.net' } })
    t.notOk(response.headers['access-control-allow-origin'])
    t.notOk(response.headers['access-control-expose-headers'])
  })

  await t.test('CORS and security headers are on error responses too', async (t) => {
    for (const [method, url, expected] of [['GET', '/api/no-such-route', 404], ['GET', '/api/user/profile', 401]] as const) {
      const response = await app.inject({ method, url, headers: { origin: WEB_URL } })
      t.equal(response.statusCode, expected)
      t.equal(response.headers['access-control-allow-origin'], WEB_URL, `${url}: CORS`)
      t.equal(response.headers['x-content-type-options'], 'nosniff', `${url}: security headers`)
      t.ok(response.headers['content-security-policy'], `${url}: CSP`)
    }
    const notFound = await app.inject({ method: 'GET', url: '/api/no-such-route' })
    t.same(notFound.json(), { statusCode: 404, error: 'Not Found', message: 'Route GET /api/no-such-route not found' })
  })

  await t.test('bodies are parsed before routes; a malformed body gets a 400 and no route runs', async (t) => {
    const session = await signUp(app, { email: uniqueEmail('order'), password: 'pw-for-order-1' })
    const malformed = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      headers: { ...session.headers, 'content-type': 'application/json' },
      payload: '{"broken": '
    })
    t.equal(malformed.statusCode, 400)
    t.equal(malformed.json().statusCode, 400)
    t.equal(malformed.headers['x-content-type-options'], 'nosniff')
  })

  await t.test('a request is logged once, with its status', async (t) => {
    const before = log.lines().length
    await app.inject({ method: 'GET', url: '/api/no-such-route?x=1' })
    const lines = log.lines().slice(before).filter((line) => line.msg === 'request completed')
    t.equal(lines.length, 1)
    t.equal((lines[0]?.res as { statusCode: number }).statusCode, 404)
  })
})

test('the request order is the specification\'s: CORS and session, then security headers, logging and body parsing, then the routes', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  // Fastify runs the hooks of plugins in the order they were registered (and parses bodies after
  // every onRequest hook), so the order of registration is the order of handling.
  const tree = app.printPlugins().split('\n')
  const position = (name: string, from = 0) => tree.findIndex((line, index) => index >= from && new RegExp(`[─┬] ${name} \\d+ ms$`).test(line))
  const routes = position('refresh')
  const order = ['cors', 'auth-rate-limit', 'session', 'security-headers', 'request-logging'].map((name) => [name, position(name)] as const)
  for (const [name, index] of order) t.ok(index > 0, `${name} is registered`)
  for (let i = 1; i < order.length; i++) {
    const [before, beforeAt] = order[i - 1] as readonly [string, number]
    const [after, afterAt] = order[i] as readonly [string, number]
    t.ok(beforeAt < afterAt, `${before} comes before ${after}`)
  }
  t.ok((order.at(-1)?.[1] ?? Infinity) < routes, 'the routes come after the request pipeline')

  // And as a client sees it: a session refused by the library still carries the CORS grant and
  // the security headers, and its answer is the library's own.
  const refused = await app.inject({ method: 'GET', url: '/api/user/profile', headers: { origin: WEB_URL, authorization: 'Bearer not-a-token' } })
  t.equal(refused.statusCode, 401)
  t.same(refused.json(), { message: 'unauthorised' }, 'the session library\'s error handler answered')
  t.equal(refused.headers['access-control-allow-origin'], WEB_URL)
  t.equal(refused.headers['x-content-type-options'], 'nosniff')
})

test('at run time a request without a session is refused before its body is read or parsed', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const base = new URL(await listen(app))

  // Malformed JSON: the session check answers first, so no parser error is ever produced for it.
  const malformed = await app.inject({ method: 'POST', url: '/api/event', headers: { 'content-type': 'application/json' }, payload: '{"title":' })
  t.equal(malformed.statusCode, 401, 'a malformed body without a session is a 401, not a 400')
  t.equal(malformed.headers['x-content-type-options'], 'nosniff', 'with the security headers')

  // Headers announcing a body that never comes: the answer arrives without it.
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(base.port), base.hostname)
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { text += chunk; if (text.includes('\r\n\r\n')) { socket.destroy(); resolve(text) } })
    socket.on('error', reject)
    setTimeout(() => { socket.destroy(); reject(new Error(`no answer before the body; got ${JSON.stringify(text)}`)) }, 5000)
    socket.write(`POST /api/event HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`)
  })
  t.match(answer, /^HTTP\/1\.1 401 /, 'refused while the body is still unsent')
})

test('server errors never show internals', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps, {}, undefined, (app) => {
    app.get('/api/test-only-failure', async () => { throw new Error('database password is hunter2') })
  })
  const response = await app.inject({ method: 'GET', url: '/api/test-only-failure' })
  t.equal(response.statusCode, 500)
  t.notMatch(response.body, /hunter2/)
  t.same(response.json(), { statusCode: 500, error: 'Internal Server Error', message: 'Something went wrong on our side; try again later' })
  t.ok(log.lines().some((line) => line.msg === 'request failed'), 'the error is logged for operators')
})

test('a request must arrive within the receive deadline; answering has none, so streams may last', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  await listen(app)
  t.equal(app.server.requestTimeout, REQUEST_RECEIVE_DEADLINE_MS, 'the whole request (headers and body) within 30 s')
  t.ok(app.server.headersTimeout > 0 && app.server.headersTimeout <= app.server.requestTimeout, 'headers within that too')
  t.equal(app.server.timeout, 0, 'no deadline on the answer: an event stream is one long answer')
})
