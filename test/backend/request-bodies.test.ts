import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { test } from 'tap'
import { authFields, buildApp, captureLog, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { databaseUri, INTERNAL_TOKEN, startDatabase, testConfig } from '../sync/helper.js'
import { signInternalRequest } from '../../lib/internal-auth.js'
import { startProviders } from './provider-fixtures.js'
import syncApp, { syncServerOptions } from '../../sync/app.js'

// A body is taken as what it says it is: JSON types as sent (no coercion), text without control
// characters, UTF-8 only, and a form only where a form is expected.

const EVENT = { startDate: '2026-05-04T09:00:00Z', endDate: '2026-05-04T09:30:00Z', timeZone: 'UTC' }

function eventId (): string {
  return randomBytes(12).toString('hex')
}

test('the backend takes bodies as they are', async (t) => {
  const deps = await startDependencies(t)
  // Apple configured: the session library serves its form-post callback.
  const providers = await startProviders(t)
  const { app } = await buildApp(t, deps, { extra: providers.config })
  const user = await signUp(app, { email: uniqueEmail('bodies'), password: 'pw-for-bodies-1' })
  const events = app.mongo.db.collection('events')
  const post = async (payload: string, contentType = 'application/json') => await app.inject({
    method: 'POST', url: '/api/event', headers: { ...user.headers, 'content-type': contentType }, payload
  })

  await t.test('JSON types are not coerced: null, a number or "false" where text or a boolean belongs is a 400', async (t) => {
    const ids: string[] = []
    for (const [field, value] of [['title', null], ['title', 123], ['isAllDay', 'false'], ['description', false], ['recurrence', { rule: 'RRULE:FREQ=DAILY' }]] as const) {
      const _id = eventId()
      ids.push(_id)
      const answer = await post(JSON.stringify({ ...EVENT, _id, title: 'Standup', [field]: value }))
      t.equal(answer.statusCode, 400, `${field}: ${JSON.stringify(value)} is refused`)
      t.equal(answer.json().code, 'FST_ERR_VALIDATION')
    }
    t.equal(await events.countDocuments({ eventId: { $in: ids } }), 0, 'nothing was stored')
    const _id = eventId()
    t.equal((await post(JSON.stringify({ ...EVENT, _id, title: 'Standup', isAllDay: false }))).statusCode, 204, 'the same change with true types is written')
  })

  await t.test('query strings are still read as text: a range and a delete option', async (t) => {
    const range = await app.inject({ method: 'GET', url: '/api/event?start=2026-05-04T00:00:00Z&end=2026-05-05T00:00:00Z', headers: user.headers })
    t.equal(range.statusCode, 200)
    t.ok((range.json() as Array<{ title: string }>).some((event) => event.title === 'Standup'))
  })

  await t.test('control characters other than tab and line feed are refused in text fields', async (t) => {
    for (const [field, value, what] of [
      ['title', 'Stand\u0007up', 'a bell'], ['title', 'a\rb', 'a carriage return'], ['description', 'line\u001b[31m', 'an escape sequence'],
      ['location', 'Room\u0000 4', 'a NUL'], ['title', 'C1\u0085', 'a C1 control']
    ] as const) {
      const _id = eventId()
      const answer = await post(JSON.stringify({ ...EVENT, _id, [field]: value }))
      t.equal(answer.statusCode, 400, `${field} with ${what}`)
      t.equal(await events.countDocuments({ eventId: _id }), 0)
    }
    const _id = eventId()
    const kept = await post(JSON.stringify({ ...EVENT, _id, title: 'Plan\tA', description: 'first line\nsecond line — café ✓', location: 'Room 4' }))
    t.equal(kept.statusCode, 204)
    t.match(await events.findOne({ eventId: _id }), { title: 'Plan\tA', description: 'first line\nsecond line — café ✓' })
  })

  await t.test('a charset other than UTF-8 is a 415; UTF-8 by any spelling is read', async (t) => {
    for (const contentType of ['application/json; charset=utf-16', 'application/json;charset="ISO-8859-1"']) {
      const _id = eventId()
      const answer = await post(JSON.stringify({ ...EVENT, _id, title: 'x' }), contentType)
      t.equal(answer.statusCode, 415, contentType)
      t.equal(answer.json().code, 'UNSUPPORTED_CHARSET')
      t.equal(await events.countDocuments({ eventId: _id }), 0)
    }
    t.equal((await post(JSON.stringify({ ...EVENT, _id: eventId(), title: 'x' }), 'application/json; charset=UTF-8')).statusCode, 204)
    t.equal((await post(JSON.stringify({ ...EVENT, _id: eventId(), title: 'x' }), 'application/json;charset=utf8')).statusCode, 204)
    const signIn = await app.inject({
      method: 'POST', url: '/api/auth/signin', headers: { rid: 'emailpassword', 'content-type': 'application/json; charset=latin1' }, payload: JSON.stringify(authFields({ email: 'a@example.com', password: 'x' }))
    })
    t.equal(signIn.statusCode, 415, 'the session library\'s routes too')
  })

  await t.test('form bodies only where a provider posts one', async (t) => {
    const _id = eventId()
    const asForm = await post(new URLSearchParams({ _id, title: 'form', ...EVENT }).toString(), 'application/x-www-form-urlencoded')
    t.equal(asForm.statusCode, 415)
    t.equal(asForm.json().code, 'UNSUPPORTED_MEDIA_TYPE')
    t.equal(await events.countDocuments({ eventId: _id }), 0)
    const signIn = await app.inject({
      method: 'POST', url: '/api/auth/signin', headers: { rid: 'emailpassword', 'content-type': 'application/x-www-form-urlencoded' }, payload: 'formFields=x'
    })
    t.equal(signIn.statusCode, 415, 'sign-in takes JSON only')
    // Apple's form post goes to the web client's callback (web/server.ts), never to the backend.
    const apple = await app.inject({
      method: 'POST', url: '/api/auth/callback/apple', headers: { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8' }, payload: new URLSearchParams({ code: 'c0de', state: 'x' }).toString()
    })
    t.equal(apple.statusCode, 415, 'no backend route takes a form')
  })

  await t.test('oversized bodies on public routes answer 413', async (t) => {
    const signIn = await app.inject({
      method: 'POST', url: '/api/auth/signin', headers: { rid: 'emailpassword', 'content-type': 'application/json' }, payload: JSON.stringify(authFields({ email: 'a@example.com', password: 'x'.repeat(2 * 1024 * 1024) }))
    })
    t.equal(signIn.statusCode, 413)
  })
})

test('the Sync service takes its JSON bodies as they are, and no form', async (t) => {
  const serverUri = await startDatabase(t)
  const config = testConfig(databaseUri(serverUri, `sync_bodies_${randomBytes(3).toString('hex')}`))
  const { stream } = captureLog()
  const options = syncServerOptions(config)
  const server = Fastify({ ...options, logger: { ...(options.logger as object), transport: undefined, stream } })
  await server.register(fp(syncApp), { config, worker: { autoStart: false }, maintenance: { autoStart: false } })
  t.teardown(() => server.close())
  await server.ready()
  const userId = randomBytes(12).toString('hex')
  const signedPost = async (url: string, payload: string, contentType = 'application/json') => await server.inject({
    method: 'POST',
    url,
    headers: { ...signInternalRequest({ secret: INTERNAL_TOKEN, method: 'POST', path: url, body: payload, userId: null }, Date.now()), 'content-type': contentType },
    payload
  })

  const exact = await signedPost('/internal/changes/batch', JSON.stringify({ users: [{ userId, cursor: null }], limit: 2 }))
  t.equal(exact.statusCode, 200, exact.body)
  const coerced = await signedPost('/internal/changes/batch', JSON.stringify({ users: [{ userId, cursor: null }], limit: '2' }))
  t.equal(coerced.statusCode, 400, 'a number sent as text is refused')
  const form = await signedPost('/internal/changes/batch', 'limit=2', 'application/x-www-form-urlencoded')
  t.equal(form.statusCode, 415)
  const query = await server.inject({
    method: 'GET',
    url: `/internal/changes?userId=${userId}&limit=2`,
    headers: signInternalRequest({ secret: INTERNAL_TOKEN, method: 'GET', path: `/internal/changes?userId=${userId}&limit=2`, userId }, Date.now())
  })
  t.equal(query.statusCode, 200, 'a query string\'s number is still read from text')
})
