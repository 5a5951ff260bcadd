// A CalDAV server that never answers costs its own user, not the others: the backend lets one user
// have two connects under way (a third is 429 at once), they travel to Sync on sockets of their
// own, so everyone else's reads keep theirs, and Sync itself holds a user to two connects whatever
// backend process sends them. Against the whole stack, with a DAV server of the tests' own that
// accepts every request and never answers (hostile-dav.ts).
import { test } from 'tap'
import { startFullStack } from './stack.js'
import { signUp, uniqueEmail } from '../helper.js'
import { startHostileDav } from '../sync/caldav/hostile-dav.js'
import { signInternalRequest } from '../../lib/internal-auth.js'

test('a silent CalDAV server holds its own user\'s connects only', async (t) => {
  const stack = await startFullStack(t)
  const silent = await startHostileDav(t, { silent: true })
  const serverUrl = `http://127.0.0.1:${silent.port}/`
  const app = stack.backend.app
  const connect = async (headers: Record<string, string>) =>
    await app.inject({ method: 'POST', url: '/api/connections/caldav', headers, payload: { serverUrl, username: 'me', password: 'app-password' } })
  const reader = await signUp(app, { email: uniqueEmail('reader'), password: 'pw-for-reader-1' })

  await t.test('a third connect of one user while two wait is 429 at once, with Retry-After', async (t) => {
    const mallory = await signUp(app, { email: uniqueEmail('mallory'), password: 'pw-for-mallory-1' })
    const waiting = [connect(mallory.headers), connect(mallory.headers)]
    while (silent.requests.length < 2) await new Promise((resolve) => setTimeout(resolve, 20))
    const startedAt = Date.now()
    const third = await connect(mallory.headers)
    t.equal(third.statusCode, 429)
    t.match(third.json(), { code: 'RATE_LIMITED', message: 'Two connects of yours are under way; try again once one has finished' })
    t.equal(third.headers['retry-after'], '10')
    t.ok(Date.now() - startedAt < 2_000, 'answered without waiting on the server')
    t.equal(silent.requests.length, 2, 'and nothing more was sent to the server')
    // Left waiting on purpose: the next subtest runs beside them.
    waiting.forEach((pending) => { pending.catch(() => {}) })
  })

  await t.test('connects of many users waiting on the server leave the reads of everyone else their sockets', async (t) => {
    // Nine users with two connects each: more than the sixteen sockets of the backend's pool to Sync.
    const users = []
    for (let index = 0; index < 9; index++) users.push(await signUp(app, { email: uniqueEmail(`waiter-${index}`), password: 'pw-for-waiter-1' }))
    const waiting = users.flatMap((user) => [connect(user.headers), connect(user.headers)])
    waiting.forEach((pending) => { pending.catch(() => {}) })
    while (silent.requests.length < 8) await new Promise((resolve) => setTimeout(resolve, 20))
    const startedAt = Date.now()
    const calendars = await app.inject({ method: 'GET', url: '/api/calendars', headers: reader.headers })
    t.equal(calendars.statusCode, 200)
    t.ok(Date.now() - startedAt < 1_500, `another user's calendar list answers at once (${Date.now() - startedAt} ms)`)
  })

  await t.test('Sync holds a user to two connects under way whichever backend process sends them', async (t) => {
    const userId = 'a'.repeat(24)
    const path = `/internal/users/${userId}/connections/caldav`
    const body = JSON.stringify({ serverUrl, username: 'me', password: 'app-password' })
    const send = async () => await stack.sync.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': 'application/json', ...signInternalRequest({ secret: stack.syncConfig.sync.internalAuthToken, method: 'POST', path, body, userId }, Date.now()) },
      payload: body
    })
    const before = silent.requests.length
    const waiting = [send(), send()]
    waiting.forEach((pending) => { pending.catch(() => {}) })
    while (silent.requests.length < before + 2) await new Promise((resolve) => setTimeout(resolve, 20))
    const third = await send()
    t.equal(third.statusCode, 429)
    t.match(third.json(), { code: 'RATE_LIMITED' })
  })
})
