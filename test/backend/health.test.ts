import { test } from 'tap'
import { buildApp, startDependencies } from '../helper.js'
import { createReadiness, type Readiness } from '../../services/readiness.js'

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

test('health answers ok without authentication while the database answers', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const response = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^application\/json/)
  const body = response.json()
  t.equal(body.status, 'ok')
  t.match(body.timestamp, ISO_UTC)
  t.ok(Math.abs(Date.parse(body.timestamp) - Date.now()) < 60_000, 'timestamp is now')
  t.same(Object.keys(body).sort(), ['status', 'timestamp'])
})

test('health answers 500 with status error when the database is gone', async (t) => {
  if (process.env.MONGODB_URI !== undefined) {
    t.comment('a real server given by MONGODB_URI cannot be stopped from here')
    return
  }
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)
  await deps.stopMongo()
  const started = Date.now()
  const response = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(response.statusCode, 500)
  const body = response.json()
  t.equal(body.status, 'error')
  t.match(body.timestamp, ISO_UTC)
  t.ok(Date.now() - started < 5000, 'the ping has a short deadline')
  t.ok(log.lines().some((line) => line.msg === 'health check: database ping failed'), 'the failure is logged')
})

test('health probes are hidden from the log at info and visible at debug', async (t) => {
  const deps = await startDependencies(t)
  for (const [level, visible] of [['info', false], ['debug', true]] as const) {
    const { app, log } = await buildApp(t, deps, { logLevel: level })
    await app.inject({ method: 'GET', url: '/api/health' })
    await app.inject({ method: 'GET', url: '/api/nothing-here' })
    const completed = log.lines().filter((line) => line.msg === 'request completed')
    const urls = completed.map((line) => (line.req as { url: string }).url)
    t.equal(urls.includes('/api/health'), visible, `health at ${level}`)
    t.equal(urls.filter((url) => url === '/api/nothing-here').length, 1, `other requests logged once at ${level}`)
  }
})

test('liveness and readiness: public, apart, and readiness names what is down', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)
  const live = await app.inject({ method: 'GET', url: '/api/health/live' })
  t.equal(live.statusCode, 200)
  t.same(Object.keys(live.json()).sort(), ['status', 'timestamp'])
  const ready = await app.inject({ method: 'GET', url: '/api/health/ready' })
  t.equal(ready.statusCode, 200, ready.body)
  t.match(ready.json(), { status: 'ok', timestamp: ISO_UTC, checks: { database: 'ok', sessionCore: 'ok', load: 'ok' } })
  t.notOk(log.lines().some((line) => line.msg === 'request completed' && String((line.req as { url: string }).url).startsWith('/api/health')), 'probes are logged at debug only')

  if (process.env.MONGODB_URI !== undefined) return
  await deps.stopMongo()
  const notReady = await app.inject({ method: 'GET', url: '/api/health/ready' })
  t.equal(notReady.statusCode, 503, 'the database gone: not ready')
  t.match(notReady.json(), { status: 'error', checks: { database: 'error', sessionCore: 'ok', load: 'ok' } })
  t.equal((await app.inject({ method: 'GET', url: '/api/health/live' })).statusCode, 200, 'and still alive: a restart would not bring the database back')
})

test('readiness: each check decides alone', async (t) => {
  const cases: Array<[[boolean, boolean, boolean], boolean, Readiness['checks']]> = [
    [[true, true, false], true, { database: 'ok', sessionCore: 'ok', load: 'ok' }],
    [[false, true, false], false, { database: 'error', sessionCore: 'ok', load: 'ok' }],
    [[true, false, false], false, { database: 'ok', sessionCore: 'error', load: 'ok' }],
    [[true, true, true], false, { database: 'ok', sessionCore: 'ok', load: 'overloaded' }]
  ]
  for (const [[database, sessionCore, overloaded], ready, checks] of cases) {
    const readiness = createReadiness({ database: async () => database, sessionCore: async () => sessionCore, overloaded: () => overloaded })
    t.same(await readiness.check(), { ready, checks })
  }
})
