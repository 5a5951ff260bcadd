import { test } from 'tap'
import { buildApp, startDependencies } from '../helper.js'

// The specification: /api/health is the only intentionally unauthenticated route. The session
// library's own routes under /api/auth (sign-up, sign-in, refresh, reset) authenticate themselves,
// /sync/* are the Sync service's callbacks, verified inside the Sync service (test/backend/sync-proxy
// .test.ts), and /api/internal/* take the service token (test/events/provider-events.test.ts).
// With the email block on, its unsubscribe link (a signed token) and Resend's webhook (a signature)
// join them (test/backend/email.test.ts).
const PUBLIC = [/^\/api\/health\/?$/, /^\/api\/auth\//, /^\/sync\//, /^\*$/, /^\/api\/email\/unsubscribe$/, /^\/api\/email\/webhooks\/resend$/]
const EMAIL_ON = {
  email: { provider: 'mailer', apiKey: 're_unused', from: 'calendar@example.com', webhookSecret: 'whsec_dW51c2VkLXNlY3JldA==', unsubscribeSecret: 'unused', apiBase: 'http://127.0.0.1:9' }
}

test('every route other than health and the auth routes answers 401 without a session', async (t) => {
  const deps = await startDependencies(t)
  const { app, routes } = await buildApp(t, deps, { extra: EMAIL_ON })
  t.ok(routes.some((route) => route.url === '/api/email/unsubscribe'), 'the email routes are there')
  const protectedRoutes = routes.filter(({ method, url }) => method !== 'HEAD' && method !== 'OPTIONS' && !PUBLIC.some((pattern) => pattern.test(url)))
  t.ok(protectedRoutes.length >= 6, `found the protected routes: ${protectedRoutes.map((route) => `${route.method} ${route.url}`).join(', ')}`)
  for (const { method, url } of protectedRoutes) {
    const path = url.replace(/:\w+/g, '0123456789abcdef01234567')
    const payload = method === 'GET' || method === 'DELETE' ? undefined : {}
    const anonymous = await app.inject({ method: method as 'GET', url: path, ...(payload ? { payload } : {}) })
    t.equal(anonymous.statusCode, 401, `${method} ${url} without a session`)
    const forged = await app.inject({ method: method as 'GET', url: path, headers: { authorization: 'Bearer forged.token.value' }, ...(payload ? { payload } : {}) })
    t.equal(forged.statusCode, 401, `${method} ${url} with a forged bearer token`)
  }
})
