// A valid session is never answered 401 because a dependency is down: a 401 makes clients refresh
// and then sign the person out. The session core and the database run as processes of their own
// here, so they can be stopped (SIGSTOP: sockets open, no answer) and killed like real servers.
import { randomBytes } from 'node:crypto'
import tap, { test, type Test } from 'tap'
import { authFields, buildApp, freePort, listen, signUp, uniqueEmail, type Dependencies } from '../helper.js'
import { startScript, waitFor, type RunningProcess } from '../processes.js'
import { RawSseReader } from '../realtime/sse-reader.js'

const EVENT = { title: 'Standup', startDate: '2026-05-04T09:00:00Z', endDate: '2026-05-04T09:15:00Z', timeZone: 'UTC' }

interface Stoppable { uri: string, hang: () => void, resume: () => void, kill: () => Promise<void> }

async function startProcess (t: Test, script: string, args: string[], what: string, uriPattern: RegExp): Promise<Stoppable> {
  const child: RunningProcess = startScript(t, script, args)
  const ready = await waitFor(() => uriPattern.test(child.stdout()), 30_000)
  if (!ready) throw new Error(`${what} did not start: ${child.output()}`)
  const uri = uriPattern.exec(child.stdout())?.[0] ?? ''
  const pid = child.child.pid
  if (pid === undefined) throw new Error('no pid')
  // A stopped process is resumed at the end, so the test's own cleanup can end it.
  t.teardown(() => { if (child.child.exitCode === null && child.child.signalCode === null) process.kill(pid, 'SIGCONT') })
  return {
    uri,
    hang: () => { process.kill(pid, 'SIGSTOP') },
    resume: () => { process.kill(pid, 'SIGCONT') },
    kill: async () => { child.child.kill('SIGKILL'); await child.exited }
  }
}

// The session library keeps one configuration per process: every test of this file uses this core.
const sessionsKey = randomBytes(16).toString('hex')
const mongo = await startProcess(tap, 'dev/mongo/cli.ts', ['--port', String(await freePort()), '--replica-set', 'rs0'], 'the MongoDB stand-in', /mongodb:\/\/\S+/)
const core = await startProcess(tap, 'dev/session-core/cli.ts', ['--port', String(await freePort()), '--api-key', sessionsKey], 'the session core stand-in', /http:\/\/127\.0\.0\.1:\d+/)
const deps: Dependencies = {
  mongoUri: mongo.uri,
  databaseUri: (database) => {
    const url = new URL(mongo.uri)
    url.pathname = `/${database}`
    return url.toString()
  },
  replicaSet: true,
  sessionsUri: core.uri,
  sessionsKey,
  stopMongo: async () => {}
}
const { app, log } = await buildApp(tap, deps)
const base = await listen(app)
app.changeFeed.configure({ readyTimeoutMs: 50 })

async function timed<T> (work: () => Promise<T>): Promise<{ result: T, ms: number }> {
  const started = Date.now()
  const result = await work()
  return { result, ms: Date.now() - started }
}

function checkUnavailable (t: Test, what: string, answer: { result: { statusCode: number, headers: Record<string, unknown>, json: () => unknown }, ms: number }): void {
  if (answer.result.statusCode !== 503) t.comment(what, answer.result.statusCode, JSON.stringify(answer.result.json()))
  t.equal(answer.result.statusCode, 503, `${what}: 503, not 401`)
  t.equal(answer.result.headers['retry-after'], '5', `${what}: Retry-After`)
  t.match(answer.result.json(), { code: 'SESSION_SERVICE_UNAVAILABLE' }, `${what}: a code the client can act on`)
  t.ok(answer.ms < 5500, `${what}: answered in ${answer.ms} ms`)
}

const signIn = async (email: string) => await app.inject({
  method: 'POST', url: '/api/auth/signin', headers: { 'sx-auth-mode': 'header', rid: 'emailpassword' }, payload: authFields({ email, password: 'pw-for-faults-1' })
})

test('a hung session core: a fresh, valid access token gets 503 + Retry-After, and so do sign-in, refresh and a new stream', { timeout: 120_000 }, async (t) => {
  const email = uniqueEmail('core-hung')
  // The backend has not verified any token yet, so it still has to fetch the core's signing keys.
  const user = await signUp(app, { email, password: 'pw-for-faults-1' })
  core.hang()
  t.teardown(() => { core.resume() })

  checkUnavailable(t, 'profile', await timed(async () => await app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })))
  checkUnavailable(t, 'write', await timed(async () => await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: EVENT })))
  checkUnavailable(t, 'sign-in', await timed(async () => await signIn(email)))
  checkUnavailable(t, 'refresh', await timed(async () => await app.inject({
    method: 'POST', url: '/api/auth/refresh', headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${user.refreshToken}` }
  })))
  const stream = await timed(async () => await RawSseReader.open(`${base}/api/events/stream`, user.headers))
  t.teardown(() => stream.result.close())
  t.equal(stream.result.status, 503, 'a new stream: 503, not 401')
  t.equal(stream.result.headers['retry-after'], '5')
  t.ok(stream.ms < 5500, `a new stream: answered in ${stream.ms} ms`)
  t.ok(log.lines().some((line) => line.msg === 'session core unavailable'), 'operators see why')

  core.resume()
  t.ok(await waitFor(async () => (await app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })).statusCode === 200, 10_000), 'the same token works again once the core answers')
})

test('the database hung as well: a fresh, valid access token is never answered 401', { timeout: 120_000 }, async (t) => {
  const email = uniqueEmail('all-hung')
  const user = await signUp(app, { email, password: 'pw-for-faults-1' })
  t.equal((await app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })).statusCode, 200)
  mongo.hang()
  core.hang()
  t.teardown(() => { mongo.resume(); core.resume() })

  const write = await timed(async () => await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: EVENT }))
  t.equal(write.result.statusCode, 503, 'a write: 503, not 401')
  t.ok(write.result.headers['retry-after'], 'with Retry-After')
  checkUnavailable(t, 'sign-in', await timed(async () => await signIn(email)))
  const stream = await timed(async () => await RawSseReader.open(`${base}/api/events/stream`, user.headers))
  t.teardown(() => stream.result.close())
  t.equal(stream.result.status, 503, 'a new stream: 503, not 401')
  t.ok(stream.ms < 5500, `a new stream: answered in ${stream.ms} ms`)
})

test('sign-out while the database is hung: refused here at once, stored for the other processes once the database answers', { timeout: 120_000 }, async (t) => {
  const user = await signUp(app, { email: uniqueEmail('db-hung-signout'), password: 'pw-for-faults-1' })
  const profile = async () => (await app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })).statusCode
  t.equal(await profile(), 200)
  const logged = (msg: string) => log.lines().filter((line) => line.msg === msg).length
  // A streak of failed reads is logged once, at its start: the case before hung the database too,
  // so its streak must have ended (read again) before this one can begin.
  t.ok(await waitFor(() => logged('session revocations could not be read; retrying') === logged('session revocations are read again'), 30_000), 'reads are healthy before the hang')
  const unreadBefore = logged('session revocations could not be read; retrying')
  const readAgainBefore = logged('session revocations are read again')
  mongo.hang()
  t.teardown(() => { mongo.resume() })

  const signedOut = await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { ...user.headers, 'sx-auth-mode': 'header' } })
  t.equal(signedOut.statusCode, 200, 'the sign-out succeeds')
  t.equal(await profile(), 401, 'the access token is refused here at once')
  t.ok(await waitFor(() => logged('session revocations could not be read; retrying') > unreadBefore, 30_000), 'the failing reads are logged')
  t.ok(await waitFor(() => logged('session revocation not stored yet; other backend processes learn of it once it is') > 0, 30_000), 'and so is the write that did not go through')
  mongo.resume()
  const stored = async () => await app.mongo.db.collection('sessionRevocations').countDocuments({ userId: user.userId, reason: 'signOut' }) === 1
  t.ok(await waitFor(stored, 30_000), 'the end is stored once the database answers')
  t.ok(await waitFor(() => logged('session revocations are read again') > readAgainBefore, 10_000), 'and the reads go on')
  t.equal(await profile(), 401, 'the token stays refused')
})

test('a session core that is gone: sign-in and a new stream answer 503 at once; a valid token still reads', { timeout: 120_000 }, async (t) => {
  const email = uniqueEmail('core-gone')
  const user = await signUp(app, { email, password: 'pw-for-faults-1' })
  await core.kill()

  checkUnavailable(t, 'sign-in', await timed(async () => await signIn(email)))
  const stream = await timed(async () => await RawSseReader.open(`${base}/api/events/stream`, user.headers))
  t.teardown(() => stream.result.close())
  t.equal(stream.result.status, 503, 'a new stream: 503, not 401')
  t.ok(stream.ms < 5500, `a new stream: answered in ${stream.ms} ms`)
  const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })
  t.equal(profile.statusCode, 200, 'access tokens are checked with the signing keys already fetched')
})
