import { test } from 'tap'
import { buildApp, startDependencies } from '../helper.js'

test('the OpenAPI document is generated from the route schemas and not served', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const document = app.swagger() as unknown as { openapi: string, paths: Record<string, Record<string, { responses: Record<string, unknown>, description?: string }>> }
  t.match(document.openapi, /^3\./)
  for (const [path, method] of [['/api/health', 'get'], ['/api/event', 'post'], ['/api/event/{id}', 'put'], ['/api/event/{id}', 'delete'], ['/api/events/stream', 'get'], ['/api/user/profile', 'get'], ['/api/auth/refresh', 'post'], ['/api/auth/extprovider/connect', 'post'], ['/api/config', 'get'], ['/api/internal/grant-revoked', 'post']] as const) {
    const operation = document.paths[path]?.[method]
    t.ok(operation, `${method.toUpperCase()} ${path} is documented`)
    t.ok(operation?.description, `${method.toUpperCase()} ${path} has a description`)
  }
  t.ok(document.paths['/api/health']?.get?.responses['500'], 'error responses are declared')
  t.ok(document.paths['/api/event']?.post?.responses['410'], 'the 410 of a revoked connection is declared')
  t.ok(document.paths['/api/auth/extprovider/connect']?.post?.responses['409'], 'the connect conflicts are declared')

  const served = await app.inject({ method: 'GET', url: '/documentation/json' })
  t.equal(served.statusCode, 404, 'no unauthenticated documentation route')
})
