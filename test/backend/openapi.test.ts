import { readFileSync } from 'node:fs'
import { test } from 'tap'
import { buildApp, startDependencies } from '../helper.js'
import { documentText } from '../../plugins/external/openapi.js'
import { DOCUMENT_FILE } from '../contract/requests.js'

interface Operation { responses: Record<string, { content?: Record<string, unknown> }>, description?: string, security?: Array<Record<string, string[]>> }
interface Document { openapi: string, paths: Record<string, Record<string, Operation>> }

test('the committed OpenAPI document is the one the route schemas generate, and it is not served', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
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
