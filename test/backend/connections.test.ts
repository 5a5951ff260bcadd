import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { startSyncService } from '../events/sync-service.js'

// POST /api/auth/connections/begin and POST /api/connections/refresh against the real Sync
// service: Sync's refusals reach the client with their status and code.
test('connections through the backend', async (t) => {
  const deps = await startDependencies(t)
  const sync = await startSyncService(t, deps.databaseUri(`sync_connections_${randomBytes(4).toString('hex')}`))
  const { app } = await buildApp(t, deps, { syncUrl: sync.url, internalAuthToken: sync.internalAuthToken })
  const user = await signUp(app, { email: uniqueEmail('connector'), password: 'pw-for-connector-1' })
  const begin = async (headers: Record<string, string> = user.headers, payload: Record<string, unknown> = { provider: 'google', intent: 'connect' }) =>
    await app.inject({ method: 'POST', url: '/api/auth/connections/begin', headers, payload })

  await t.test('a session is required, and the body is checked', async (t) => {
    t.equal((await begin({})).statusCode, 401)
    const bad = await begin(user.headers, { provider: 'myspace', intent: 'connect' })
    t.equal(bad.statusCode, 400)
    t.match(bad.json().message, /provider/)
  })

  await t.test('a passive Sync service cannot begin a connection', async (t) => {
    const answer = await begin()
    t.equal(answer.statusCode, 409)
    t.equal(answer.json().code, 'EXECUTION_PASSIVE')
  })

  await t.test('maintenance answers 503 MAINTENANCE', async (t) => {
    await sync.stop()
    await sync.start({ cloudMutationMode: 'maintenance', execution: 'active' })
    const answer = await begin()
    t.equal(answer.statusCode, 503)
    t.equal(answer.json().code, 'MAINTENANCE')
  })

  await t.test('a reconnect of a connection the user does not have is 404', async (t) => {
    await sync.stop()
    await sync.start({ cloudMutationMode: 'enabled', execution: 'active' })
    const answer = await begin(user.headers, { provider: 'google', intent: 'reconnect', connectionId: 'a'.repeat(24) })
    t.ok([400, 404].includes(answer.statusCode), `answered ${answer.statusCode}`)
    t.ok(['CONNECTION_NOT_FOUND', 'PROVIDER_NOT_CONFIGURED'].includes(answer.json().code))
  })

  await t.test('refresh with no connection queues nothing', async (t) => {
    const answer = await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
    t.equal(answer.statusCode, 200)
    t.same(answer.json(), { queued: 0 })
    t.equal((await app.inject({ method: 'POST', url: '/api/connections/refresh' })).statusCode, 401)
  })

  await t.test('a CalDAV connect: a server URL holding a password is refused (400); more than 10 a minute is 429', async (t) => {
    const caldav = async (serverUrl: string, headers = user.headers) =>
      await app.inject({ method: 'POST', url: '/api/connections/caldav', headers, payload: { serverUrl, username: 'me', password: 'app-password' } })
    const userinfo = await caldav('https://me:secret@caldav.example.com/')
    t.equal(userinfo.statusCode, 400)
    t.match(userinfo.json(), { code: 'VALIDATION', message: /user name or password/ })

    const other = await signUp(app, { email: uniqueEmail('prober'), password: 'pw-for-prober-1' })
    const statuses: number[] = []
    for (let attempt = 0; attempt < 11; attempt++) statuses.push((await caldav(`http://10.0.0.${attempt + 1}/`, other.headers)).statusCode)
    // This Sync has no CalDAV adapter (400 PROVIDER_NOT_CONFIGURED); what counts is that each went to it.
    t.same(statuses.slice(0, 10), Array(10).fill(400), 'ten went through to Sync')
    const limited = await caldav('http://10.0.0.99/', other.headers)
    t.equal(statuses[10], 429, 'the eleventh within a minute is limited')
    t.equal(limited.json().code, 'RATE_LIMITED')
    t.ok(Number(limited.headers['retry-after']) > 0, 'with Retry-After')
    t.not((await caldav('http://10.0.0.1/')).statusCode, 429, 'another user is not limited by it')
  })

  await t.test('Sync away: 503 SYNC_UNAVAILABLE with Retry-After', async (t) => {
    await sync.stop()
    for (const answer of [await begin(), await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })]) {
      t.equal(answer.statusCode, 503)
      t.equal(answer.json().code, 'SYNC_UNAVAILABLE')
      t.equal(answer.headers['retry-after'], '5')
    }
  })
})
