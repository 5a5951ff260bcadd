import { test } from 'tap'
import { authFields, buildApp, listen, signUp, startDependencies, uniqueEmail, type Dependencies } from '../helper.js'
import { waitFor } from '../processes.js'
import { startDatabaseProcess } from '../database-process.js'
import { RawSseReader } from '../realtime/sse-reader.js'
import { DATABASE_CALL_DEADLINE_MS, setRequestDatabaseDeadline } from '../../stores/database.js'
import { EVENT_REQUEST_DEADLINE_MS } from '../../lib/deadline.js'

// The deadlines are what these tests are about: production's, not the test helper's longer ones.
setRequestDatabaseDeadline(DATABASE_CALL_DEADLINE_MS)
const PRODUCTION_DEADLINES = { eventRequestDeadlineMs: EVENT_REQUEST_DEADLINE_MS }

// The database as an operator meets its failures: a process that hangs (stopped, its sockets
// open, so the driver sees no error, only silence) and one that is gone. The MongoDB stand-in
// runs as a process of its own here, so it can be stopped and resumed like a real server.

const EVENT = {
  title: 'Standup',
  startDate: '2026-05-04T09:00:00Z',
  endDate: '2026-05-04T09:15:00Z',
  timeZone: 'UTC'
}

function onProcess (deps: Dependencies, uri: string): Dependencies {
  return {
    ...deps,
    mongoUri: uri,
    databaseUri: (database) => {
      const url = new URL(uri)
      url.pathname = `/${database}`
      return url.toString()
    },
    replicaSet: true
  }
}

// How long each answer takes while the database hangs is measured in bench/hung-database.ts
// (about the per-call deadline); here: what is answered, and the log line that shows the deadline
// ended the wait rather than the driver's own timeouts.
test('a hung database: health answers 500, writes 503 with Retry-After, nothing half-written', { skip: process.env.MONGODB_URI !== undefined && 'a real server given by MONGODB_URI cannot be stopped from here' }, async (t) => {
  const mongo = await startDatabaseProcess(t)
  const deps = onProcess(await startDependencies(t), mongo.uri)
  const { app, log } = await buildApp(t, deps, {}, undefined, undefined, PRODUCTION_DEADLINES)
  const email = uniqueEmail('hung-db')
  const user = { ...await signUp(app, { email, password: 'pw-for-hung-db-1' }), email }
  t.equal((await app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200)

  mongo.hang()
  for (const round of [1, 2]) {
    const health = await app.inject({ method: 'GET', url: '/api/health' })
    t.equal(health.statusCode, 500, `probe ${round}: 500 while the database is silent`)
    t.equal(health.json().status, 'error')
  }

  // Every database call has a deadline (DATABASE_CALL_DEADLINE_MS): a request meets a 503 instead
  // of waiting on the driver's deadlines (5-11 s before).
  const answers = [
    ['write', { method: 'POST', url: '/api/event', headers: user.headers, payload: { ...EVENT, _id: 'a'.repeat(24) } }],
    ['read', { method: 'GET', url: '/api/event?start=2026-05-04T00:00:00Z&end=2026-05-05T00:00:00Z', headers: user.headers }],
    ['one event', { method: 'GET', url: `/api/event/${'d'.repeat(24)}`, headers: user.headers }]
  ] as const
  // Sent together: each ends on its own deadline, and none waits for another.
  const answered = await Promise.all(answers.map(async ([what, request]) => [what, await app.inject(request)] as const))
  for (const [what, answer] of answered) {
    t.equal(answer.statusCode, 503, `${what}: ${answer.body}`)
    t.match(answer.json().code, /^(DATABASE_UNAVAILABLE|DEADLINE_EXCEEDED)$/)
    t.equal(answer.headers['retry-after'], '5')
  }
  t.ok(log.lines().some((line) => line.msg === 'database unavailable' || line.msg === 'request deadline exceeded'), 'operators see why')

  // Sign-in asks the session core (up here) and then the database for the user.
  const signIn = await app.inject({ method: 'POST', url: '/api/auth/signin', headers: { rid: 'emailpassword' }, payload: authFields({ email: user.email, password: 'pw-for-hung-db-1' }) })
  t.equal(signIn.statusCode, 503, `sign-in: ${signIn.body}`)
  t.equal(signIn.json().code, 'DATABASE_UNAVAILABLE', 'no driver message reaches the client')
  t.equal(signIn.headers['retry-after'], '5')
  t.ok(log.lines().some((line) => (line.err as { message?: string } | undefined)?.message === `the database did not answer within ${DATABASE_CALL_DEADLINE_MS} ms`),
    'the per-call deadline ended the waits')

  mongo.resume()
  t.ok(await waitFor(async () => (await app.inject({ method: 'GET', url: '/api/health' })).statusCode === 200, 15_000), 'health recovers with the database')
  const events = app.mongo.db.collection('events')
  const outbox = app.mongo.db.collection('syncOutbox')
  const stored = await events.countDocuments({ user: user.userId, eventId: 'a'.repeat(24) })
  const reported = await outbox.countDocuments({ user: user.userId, 'entry.report.eventId': 'a'.repeat(24) })
  t.equal(stored, reported, 'the event and its report exist together or not at all')
  const retried = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { ...EVENT, _id: 'b'.repeat(24) } })
  t.equal(retried.statusCode, 204, 'writes work again')
})

test('a hung database: every route class answers 503 with Retry-After while it hangs, a stream still opens, and what was acknowledged is kept', {
  skip: process.env.MONGODB_URI !== undefined && 'a real server given by MONGODB_URI cannot be stopped from here',
  // Each request ends on its call's deadline (DATABASE_CALL_DEADLINE_MS); without one, a read waits
  // on the driver's socket deadline (the profile: 12 s measured) and this would take minutes.
  timeout: 120_000
}, async (t) => {
  const mongo = await startDatabaseProcess(t)
  const deps = onProcess(await startDependencies(t), mongo.uri)
  const { app, log } = await buildApp(t, deps, {}, undefined, undefined, PRODUCTION_DEADLINES)
  const base = await listen(app)
  const email = uniqueEmail('hung-db-routes')
  const user = await signUp(app, { email, password: 'pw-for-hung-db-2' })
  const kept = { ...EVENT, _id: 'e'.repeat(24), title: 'Acknowledged before the hang' }
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: kept })).statusCode, 204)

  mongo.hang()
  const requests = [
    ['profile', { method: 'GET', url: '/api/user/profile', headers: user.headers }],
    ['create', { method: 'POST', url: '/api/event', headers: user.headers, payload: { ...EVENT, _id: 'f'.repeat(24) } }],
    ['update', { method: 'PUT', url: `/api/event/${kept._id}`, headers: user.headers, payload: { ...EVENT, title: 'Changed during the hang' } }],
    ['delete', { method: 'DELETE', url: `/api/event/${kept._id}`, headers: user.headers }],
    ['range read', { method: 'GET', url: '/api/event?start=2026-05-04T00:00:00Z&end=2026-05-05T00:00:00Z', headers: user.headers }],
    ['one event', { method: 'GET', url: `/api/event/${kept._id}`, headers: user.headers }],
    ['sign-in', { method: 'POST', url: '/api/auth/signin', headers: { rid: 'emailpassword' }, payload: authFields({ email, password: 'pw-for-hung-db-2' }) }],
    ['sign-up', { method: 'POST', url: '/api/auth/signup', headers: { rid: 'emailpassword' }, payload: authFields({ email: uniqueEmail('hung-db-new'), password: 'pw-for-hung-db-2', name: 'New' }) }]
  ] as const
  // Sent together: each ends on its own deadline, and none waits for another.
  const answered = await Promise.all(requests.map(async ([what, request]) => [what, await app.inject(request)] as const))
  for (const [what, answer] of answered) {
    t.equal(answer.statusCode, 503, `${what}: ${answer.body}`)
    t.match(answer.json(), { code: /^(DATABASE_UNAVAILABLE|DEADLINE_EXCEEDED)$/, message: 'The service is briefly unavailable; try again shortly' }, `${what}: a code to act on, no driver message`)
    t.equal(answer.headers['retry-after'], '5', `${what}: Retry-After`)
  }
  const deadlineLines = log.lines().filter((line) => line.msg === 'database unavailable' &&
    (line.err as { type?: string, message?: string } | undefined)?.message === `the database did not answer within ${DATABASE_CALL_DEADLINE_MS} ms`)
  t.ok(deadlineLines.length > 0, 'operators see that a database call passed its deadline')

  // Opening a stream needs no database (the session check is local, revocations are held in
  // memory): it opens and replays the user's state.
  const stream = await RawSseReader.open(`${base}/api/events/stream`, user.headers)
  t.teardown(() => { stream.close() })
  t.equal(stream.status, 200, 'a stream opens while the database hangs')
  const [replay] = await stream.untilMessages(1, 15_000)
  t.match(replay, { type: 'userMetadataChanged' }, 'and replays the user\'s state')

  mongo.resume()
  t.ok(await waitFor(async () => (await app.inject({ method: 'GET', url: '/api/health' })).statusCode === 200, 15_000), 'health recovers with the database')
  const read = await app.inject({ method: 'GET', url: `/api/event/${kept._id}`, headers: user.headers })
  t.equal(read.statusCode, 200, 'the event acknowledged before the hang is there')
  t.equal(read.json().title, kept.title, 'unchanged by the refused update')
  const events = app.mongo.db.collection('events')
  const outbox = app.mongo.db.collection('syncOutbox')
  const stored = await events.countDocuments({ user: user.userId, eventId: 'f'.repeat(24) })
  const reported = await outbox.countDocuments({ user: user.userId, 'entry.report.eventId': 'f'.repeat(24) })
  t.equal(stored, reported, 'the refused create and its report exist together or not at all')
})

test('a database that is gone: writes answer 503 with Retry-After', { skip: process.env.MONGODB_URI !== undefined && 'a real server given by MONGODB_URI cannot be stopped from here' }, async (t) => {
  const mongo = await startDatabaseProcess(t)
  const deps = onProcess(await startDependencies(t), mongo.uri)
  const { app } = await buildApp(t, deps, {}, undefined, undefined, PRODUCTION_DEADLINES)
  const user = await signUp(app, { email: uniqueEmail('gone-db'), password: 'pw-for-gone-db-1' })
  await mongo.kill()

  const write = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { ...EVENT, _id: 'c'.repeat(24) } })
  t.equal(write.statusCode, 503)
  t.same({ ...write.json() }, {
    statusCode: 503,
    code: 'DATABASE_UNAVAILABLE',
    error: 'Service Unavailable',
    message: 'The service is briefly unavailable; try again shortly'
  })
  t.equal(write.headers['retry-after'], '5')
  const health = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(health.statusCode, 500)
})
