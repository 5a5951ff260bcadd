import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { test, type Test } from 'tap'
import { buildApp, captureLog, startDependencies } from '../helper.js'
import { databaseUri, startDatabase, testConfig } from '../sync/helper.js'
import syncApp, { syncServerOptions } from '../../sync/app.js'
import { errorSerializer, loggerOptions, redactUrl } from '../../lib/logging.js'

// Secrets a URL can carry: an access token a client put in the query string, and what a provider
// appends to a callback. None of them may be written to a log, by either service.
const ACCESS_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.access-token-in-query.sig'
const CODE = '4/0AfJohXn-authorization-code'
const STATE = 'signed-state-value-0123456789'

function assertNoSecrets (t: Test, text: string): void {
  for (const secret of [ACCESS_TOKEN, CODE, STATE]) t.notOk(text.includes(secret), `${secret.slice(0, 12)}… is not in the log`)
}

test('the backend logs request URLs with their secrets replaced', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)

  const stream = await app.inject({ method: 'GET', url: `/api/events/stream?access_token=${ACCESS_TOKEN}&since=5` })
  t.equal(stream.statusCode, 401, 'a token in the query string is no credential')
  const callback = await app.inject({ method: 'GET', url: `/sync/oauth/google/callback?state=${STATE}&code=${CODE}&scope=calendar` })
  t.ok(callback.statusCode >= 500, 'Sync is not running here; the request is still logged')

  const urls = log.lines().filter((line) => line.msg === 'request completed').map((line) => (line.req as { url: string }).url)
  t.same(urls, [
    '/api/events/stream?access_token=[redacted]&since=5',
    '/sync/oauth/google/callback?state=[redacted]&code=[redacted]&scope=calendar'
  ], 'the path and harmless parameters stay readable')
  assertNoSecrets(t, log.text())
})

test('the Sync service logs request URLs with their secrets replaced', async (t) => {
  const serverUri = await startDatabase(t)
  const config = testConfig(databaseUri(serverUri, 'sync_log_redaction'))
  const { stream, log } = captureLog()
  const options = syncServerOptions(config)
  const server = Fastify({ ...options, logger: { ...(options.logger as object), transport: undefined, stream } })
  await server.register(fp(syncApp), { config, worker: { autoStart: false }, maintenance: { autoStart: false } })
  t.teardown(() => server.close())
  await server.ready()

  const answer = await server.inject({ method: 'GET', url: `/oauth/google/callback?code=${CODE}&STATE=${STATE}` })
  t.equal(answer.statusCode, 302)
  const urls = log.lines().filter((line) => line.req !== undefined).map((line) => (line.req as { url: string }).url)
  t.ok(urls.length > 0, 'the request was logged')
  for (const url of urls) t.equal(url, '/oauth/google/callback?code=[redacted]&STATE=[redacted]')
  assertNoSecrets(t, log.text())
})

test('redactUrl: names in any case or encoding, values of any shape', async (t) => {
  t.equal(redactUrl('/api/health'), '/api/health')
  t.equal(redactUrl('/x?'), '/x?')
  t.equal(redactUrl('/x?Access_Token=a&%74oken=b&id_token&keep=1'), '/x?Access_Token=[redacted]&%74oken=[redacted]&id_token=[redacted]&keep=1')
  t.equal(redactUrl('/x?%E0%A4%A=1&code=c'), '/x?%E0%A4%A=1&code=[redacted]', 'a name that does not decode is kept, the rest still checked')
})

test('a logged error keeps what explains it and drops what it carried', async (t) => {
  const { stream, log } = captureLog()
  const logger = Fastify({ logger: { ...loggerOptions('info', false), stream } }).log
  // As a provider client's failed token exchange looks: the request it made rides on the error.
  const exchange = Object.assign(new Error('invalid_grant'), {
    status: 400,
    code: 'ERR_BAD_REQUEST',
    config: { url: 'https://oauth2.example/token', data: `client_secret=shh-client-secret&code=${CODE}` },
    response: { data: { refresh_token: 'rt-should-not-appear' } }
  })
  logger.error({ err: new Error('provider connect failed', { cause: exchange }) }, 'provider connect failed')
  const [line] = log.lines()
  t.match(line?.err, { type: 'Error', message: 'provider connect failed', cause: { type: 'Error', message: 'invalid_grant', status: 400, code: 'ERR_BAD_REQUEST' } })
  t.notOk(log.text().includes('shh-client-secret') || log.text().includes('rt-should-not-appear'), 'no secret the error carried')
  assertNoSecrets(t, log.text())
  t.same(errorSerializer('plain text'), { type: 'string', message: 'plain text' }, 'a thrown non-error is still told')
})
