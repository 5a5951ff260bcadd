import { test } from 'tap'
import { buildApp, listen, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { RawSseReader } from '../realtime/sse-reader.js'
import { decodeJwt } from 'jose'

// A session core whose access tokens live three seconds (a real core is configured the same way
// with access_token_validity). Expiry has whole-second precision, so a fresh token stays valid for
// more than two seconds: enough for its first use on a busy machine.
test('an expired access token gets the try-refresh answer; a refresh brings the client back', { timeout: 60_000 }, async (t) => {
  if (process.env.SESSIONS_URI !== undefined) {
    t.comment('token lifetimes of a real core given by SESSIONS_URI are its own')
    return
  }
  const deps = await startDependencies(t, { accessTokenValiditySec: 3 })
  const { app } = await buildApp(t, deps)
  const session = await signUp(app, { email: uniqueEmail('expiry'), password: 'pw-for-expiry-1' })

  const fresh = await app.inject({ method: 'GET', url: '/api/user/profile', headers: session.headers })
  t.equal(fresh.statusCode, 200)

  await new Promise((resolve) => setTimeout(resolve, 3100))
  const expired = await app.inject({ method: 'GET', url: '/api/user/profile', headers: session.headers })
  t.equal(expired.statusCode, 401)
  t.same(expired.json(), { message: 'try refresh token' }, 'the library\'s try-refresh answer')

  const refreshed = await app.inject({
    method: 'POST',
    url: '/api/auth/refresh',
    headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${session.refreshToken}` }
  })
  t.equal(refreshed.statusCode, 200)
  const again = await app.inject({
    method: 'GET',
    url: '/api/user/profile',
    headers: { authorization: `Bearer ${String(refreshed.headers['sx-access-token'])}` }
  })
  t.equal(again.statusCode, 200, 'the refreshed token works')
  t.equal(again.json().id, session.userId)
})

test('a stream ends when the access token it was opened with expires, long before its planned 20 minutes', { timeout: 60_000 }, async (t) => {
  if (process.env.SESSIONS_URI !== undefined) {
    t.comment('token lifetimes of a real core given by SESSIONS_URI are its own')
    return
  }
  const deps = await startDependencies(t, { accessTokenValiditySec: 3 })
  const { app } = await buildApp(t, deps)
  t.equal(app.sse.options.lifetimeMs, 20 * 60_000, 'the planned lifetime stays the upper bound')
  const session = await signUp(app, { email: uniqueEmail('stream-expiry'), password: 'pw-for-stream-expiry-1' })
  const expiresAt = (decodeJwt(session.accessToken).exp ?? 0) * 1000
  const stream = await RawSseReader.open(`${await listen(app)}/api/events/stream`, session.headers)
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)
  await stream.untilEnded(10_000)
  const endedAfterExpiry = Date.now() - expiresAt
  t.ok(stream.ended, 'the server ended the stream')
  // The broker checks lifetimes once a second.
  t.ok(endedAfterExpiry > -1000 && endedAfterExpiry < 2500, `ended ${endedAfterExpiry} ms after the token expired`)
})
