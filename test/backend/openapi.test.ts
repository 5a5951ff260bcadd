import { readFileSync } from 'node:fs'
import { test } from 'tap'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { documentText } from '../../plugins/external/openapi.js'
import { DOCUMENT_FILE } from '../contract/requests.js'
import { documentedBlocks } from '../../dev/openapi-blocks.js'

interface Operation { responses: Record<string, { content?: Record<string, unknown> }>, description?: string, security?: Array<Record<string, string[]>> }
interface Document { openapi: string, paths: Record<string, Record<string, Operation>> }

test('the committed OpenAPI document is the one the route schemas generate, and it is not served', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps, { extra: documentedBlocks() })
  t.equal(readFileSync(DOCUMENT_FILE, 'utf8'), documentText(app), 'openapi.json is up to date (regenerate it with `npm run openapi`)')

  const document = app.swagger() as unknown as Document
  t.equal(document.openapi, '3.1.0')
  const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ path, method, operation })))
  for (const { path, method, operation } of operations) {
    const name = `${method.toUpperCase()} ${path}`
    t.ok(operation.description, `${name} has a description`)
    t.ok(Array.isArray(operation.security), `${name} states its security`)
    const secured = (operation.security ?? []).length > 0
    if (secured) t.ok(operation.responses['401'], `${name} declares the 401 of its credentials`)
    if (path !== '/api/health') t.ok(operation.responses['503'], `${name} declares 503`)
  }
  t.same(document.paths['/api/health']?.get?.security, [], 'the health probe needs no credentials')
  t.same(document.paths['/api/event']?.post?.security, [{ bearer: [] }, { cookie: [] }], 'a session route takes the bearer token or the cookie')
  for (const method of ['post', 'put', 'delete'] as const) {
    const path = method === 'post' ? '/api/event' : '/api/event/{id}'
    t.equal(document.paths[path]?.[method]?.responses['204']?.content, undefined, `${method.toUpperCase()} ${path}: the 204 has no body`)
  }
  const stream = document.paths['/api/events/stream']?.get?.responses
  t.same(Object.keys(stream?.['200']?.content ?? {}), ['text/event-stream'], 'the stream is text/event-stream')
  t.same(Object.keys(stream?.['401']?.content ?? {}), ['application/json'], 'its 401 is JSON')
  t.same(Object.keys(document.paths).filter((path) => path.startsWith('/sync')).sort(),
    ['/sync/maintenance', '/sync/oauth/{provider}/callback', '/sync/webhooks/google', '/sync/webhooks/microsoft'], 'the proxied Sync callbacks are their real operations')
  for (const path of ['/api/auth/signup', '/api/auth/signin', '/api/auth/signout', '/api/auth/session/refresh', '/api/auth/user/password/reset/token', '/api/auth/user/password/reset', '/api/auth/user/email/verify', '/api/auth/signinup']) {
    t.ok(document.paths[path], `the session library's ${path} is documented`)
  }
  t.notMatch(JSON.stringify(document), /"nullable"/, 'null is a type (3.1), never `nullable`')

  const served = await app.inject({ method: 'GET', url: '/documentation/json' })
  t.equal(served.statusCode, 404, 'no unauthenticated documentation route')
})

test('what the document promises of dates, zones, types and bodies holds at the server', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const user = await signUp(app, { email: uniqueEmail('formats'), password: 'correct horse 1' })
  const events = app.mongo.db.collection('events')
  const timed = { title: 'Dentist', startDate: '2026-03-02T09:00:00+01:00', endDate: '2026-03-02T10:00:00+01:00', timeZone: 'Europe/Berlin' }
  const refused: Array<[string, unknown, RegExp]> = [
    ['a date that is no date', { ...timed, startDate: '5811-82-43', endDate: '5811-82-44', isAllDay: true }, /body\/startDate/],
    ['a date-time that is no date', { ...timed, startDate: '5811-82-43T09:00:00Z' }, /body\/startDate/],
    ['a zone that is not IANA', { ...timed, timeZone: 'Mars/Olympus_Mons' }, /body\/timeZone must be an IANA time zone name/],
    ['a number for a text field', { ...timed, calendarId: 12345 }, /body\/calendarId must be string/],
    ['text for a boolean', { ...timed, isAllDay: 'true' }, /body\/isAllDay must be boolean/]
  ]
  for (const [label, payload, message] of refused) {
    const response = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: payload as object })
    t.equal(response.statusCode, 400, label)
    t.match(response.json<{ message: string }>().message, message, label)
  }
  t.equal(await events.countDocuments(), 0, 'nothing stored')
  const written = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: timed })
  t.equal(written.statusCode, 204, 'a real date and zone are taken')

  const range = await app.inject({ method: 'GET', url: '/api/event?start=5811-82-43T00:00:00Z&end=5811-82-44T00:00:00Z', headers: user.headers })
  t.equal(range.statusCode, 400, 'a range of dates that are no dates is refused')
  t.match(range.json<{ message: string }>().message, /querystring\/start must match format "date-time"/)

  for (const body of ['null', '12345', '[]', '"x"']) {
    const response = await app.inject({ method: 'POST', url: '/api/auth/signin', headers: { 'content-type': 'application/json' }, payload: body })
    t.equal(response.statusCode, 400, `the session library's routes refuse a JSON ${body} body with 400`)
    t.equal(response.json<{ code: string }>().code, 'BODY_NOT_AN_OBJECT')
  }

  // Nothing listens where this app's Sync service would be.
  const proxied = await app.inject({ method: 'POST', url: '/sync/webhooks/google', headers: { 'x-goog-channel-id': 'c', 'x-goog-resource-id': 'r', 'x-goog-resource-state': 'sync' } })
  t.equal(proxied.statusCode, 503, 'the /sync proxy answers 503 while Sync is down')
  t.equal(proxied.headers['retry-after'], '5')
  t.equal(proxied.json<{ code: string }>().code, 'SYNC_UNAVAILABLE')
  t.notMatch(proxied.body, /ECONN|127\.0\.0\.1/, 'nothing of the cause reaches the caller')
})
