import { test } from 'tap'
import { INTERNAL_AUTH_HEADERS, signInternalRequest } from '../../lib/internal-auth.js'
import { buildSyncApp, INTERNAL_TOKEN, newUserId, startDatabase } from './helper.js'

test('internal routes demand a fresh signature over method, path, user and body', async (t) => {
  const server = await startDatabase(t)
  const { app, clock, signed, logs } = await buildSyncApp(t, server)
  const userId = newUserId()
  const url = `/internal/changes?userId=${userId}`

  const ok = await signed({ method: 'GET', url, userId })
  t.equal(ok.statusCode, 200, 'a signed request is answered')

  const missing = await app.inject({ method: 'GET', url })
  t.equal(missing.statusCode, 401)
  t.same(missing.json(), { statusCode: 401, code: 'UNAUTHORIZED', error: 'Unauthorized', message: 'Missing, stale or invalid internal request signature' })

  const stale = signInternalRequest({ secret: INTERNAL_TOKEN, method: 'GET', path: url, userId }, clock.now().getTime() - 10 * 60_000)
  t.equal((await app.inject({ method: 'GET', url, headers: stale })).statusCode, 401, 'stale signature')

  const forged = signInternalRequest({ secret: 'not-the-shared-secret', method: 'GET', path: url, userId }, clock.now().getTime())
  t.equal((await app.inject({ method: 'GET', url, headers: forged })).statusCode, 401, 'signature under another secret')

  const otherUser = newUserId()
  const replayed = signInternalRequest({ secret: INTERNAL_TOKEN, method: 'GET', path: url, userId }, clock.now().getTime())
  const replayedResponse = await app.inject({ method: 'GET', url: `/internal/users/${userId}/metadata`, headers: replayed })
  t.equal(replayedResponse.statusCode, 401, 'a signature replayed on another path')
  t.equal((await app.inject({ method: 'GET', url: `/internal/changes?userId=${otherUser}`, headers: replayed })).statusCode, 401, 'on another query')

  const body = JSON.stringify({ userId, eventId: 'e1', operation: 'create', idempotencyKey: 'key-000000001' })
  const headers = { ...signInternalRequest({ secret: INTERNAL_TOKEN, method: 'POST', path: '/internal/event-changes', body, userId }, clock.now().getTime()), 'content-type': 'application/json' }
  const tampered = await app.inject({ method: 'POST', url: '/internal/event-changes', headers, payload: body.replace('e1', 'e2') })
  t.equal(tampered.statusCode, 401, 'a body other than the signed one')

  const refusals = logs.filter((line) => line.msg === 'internal request refused').map((line) => line.reason)
  t.same(refusals, ['missing', 'stale', 'forged', 'forged', 'forged', 'forged'], 'each refusal is logged with its reason')
  const written = JSON.stringify(logs)
  t.notOk(written.includes(INTERNAL_TOKEN), 'the shared secret never reaches the log')
  t.notOk(written.includes(forged[INTERNAL_AUTH_HEADERS.signature] ?? 'absent'), 'nor does a presented signature')
})

test('the signed acting user must be the user asked about', async (t) => {
  const server = await startDatabase(t)
  const { signed } = await buildSyncApp(t, server)
  const userId = newUserId()
  const response = await signed({ method: 'GET', url: `/internal/users/${userId}/metadata`, userId: newUserId() })
  t.equal(response.statusCode, 403)
  t.equal(response.json().code, 'FORBIDDEN_USER')
  const changes = await signed({ method: 'GET', url: `/internal/changes?userId=${userId}`, userId: null })
  t.equal(changes.statusCode, 403, 'a request signed for nobody cannot read one user\'s feed')
})

test('a body that is not JSON is refused with 400 only after the signature holds', async (t) => {
  const server = await startDatabase(t)
  const { app, clock } = await buildSyncApp(t, server)
  const body = '{"not json'
  const headers = { ...signInternalRequest({ secret: INTERNAL_TOKEN, method: 'POST', path: '/internal/changes/batch', body }, clock.now().getTime()), 'content-type': 'application/json' }
  const response = await app.inject({ method: 'POST', url: '/internal/changes/batch', headers, payload: body })
  t.equal(response.statusCode, 400)
  t.equal(response.json().code, 'VALIDATION')
  const unsigned = await app.inject({ method: 'POST', url: '/internal/changes/batch', headers: { 'content-type': 'application/json' }, payload: body })
  t.equal(unsigned.statusCode, 401)
})

test('health routes need no signature; ready reflects the database', async (t) => {
  const server = await startDatabase(t)
  const { app, clock } = await buildSyncApp(t, server)
  const live = await app.inject({ method: 'GET', url: '/health/live' })
  t.same(live.json(), { status: 'ok', timestamp: clock.now().toISOString() })
  const ready = await app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 200)
  t.same(ready.json(), { status: 'ok', timestamp: clock.now().toISOString() })
  await app.syncDb.client.close()
  const down = await app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(down.statusCode, 503)
  t.same(down.json(), { status: 'error', timestamp: clock.now().toISOString() })
})

test('health probes stay out of the log unless runtime.logLevel is debug', async (t) => {
  const server = await startDatabase(t)
  const quiet = await buildSyncApp(t, server)
  await quiet.app.inject({ method: 'GET', url: '/health/live' })
  await quiet.app.inject({ method: 'GET', url: '/health/ready' })
  await quiet.signed({ method: 'GET', url: '/internal/users/aaaaaaaaaaaaaaaaaaaaaaaa/metadata', userId: 'aaaaaaaaaaaaaaaaaaaaaaaa' })
  const urls = (logs: Array<Record<string, unknown>>) => logs
    .filter((line) => line.msg === 'incoming request')
    .map((line) => (line.req as { url?: string } | undefined)?.url)
  t.same(urls(quiet.logs), ['/internal/users/aaaaaaaaaaaaaaaaaaaaaaaa/metadata'])

  const verbose = await buildSyncApp(t, server, { config: { ...quiet.config, runtime: { ...quiet.config.runtime, logLevel: 'debug' } } })
  await verbose.app.inject({ method: 'GET', url: '/health/live' })
  t.same(urls(verbose.logs), ['/health/live'])
})
