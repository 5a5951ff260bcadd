import { test } from 'tap'
import { buildApp, startDependencies } from '../helper.js'

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
