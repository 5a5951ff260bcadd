import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AUTH_LIMITS, SignInGuard, accountOf, isServedLibraryRoute, limitedAuthRoute, oversizedFields, type Limit } from '../../lib/auth-limits.js'
import { errorBody, notFoundBody } from '../../lib/error-bodies.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Failed sign-ins and known addresses per account (lib/auth-limits.ts); the sign-in route consults it. */
    signInGuard: SignInGuard
  }
}

/** The answer to a refused credential request: 429 with the wait, and nothing changed. */
export function tooManyAttempts (reply: FastifyReply, seconds: number): FastifyReply {
  return reply.code(429).header('retry-after', String(seconds))
    .send(errorBody(429, `Too many attempts; try again in ${seconds} seconds`, 'RATE_LIMITED'))
}

// The credential routes' rules (lib/auth-limits.ts): which spellings reach the session library,
// the flood limits per address and per account, and field sizes. All are checked after the body is
// parsed, since the account is named in it, and before the session library sees the request.
export default fp(async function authRateLimit (fastify) {
  await fastify.register(rateLimit, { global: false })

  const limiter = (limit: Limit, keyOf: (request: FastifyRequest) => string) =>
    fastify.createRateLimit({ max: limit.max, timeWindow: limit.windowMs, keyGenerator: keyOf })
  const byAddress = {
    credentials: limiter(AUTH_LIMITS.perAddress.credentials, (request) => `address:credentials:${request.ip}`),
    refresh: limiter(AUTH_LIMITS.perAddress.refresh, (request) => `address:refresh:${request.ip}`)
  }
  const resetRequestsByAccount = limiter(AUTH_LIMITS.resetRequestsPerAccount, (request) => `account:reset:${accountOf(request.body) ?? ''}`)
  fastify.decorate('signInGuard', new SignInGuard())

  fastify.addHook('preHandler', async (request, reply) => {
    // The session library answers from the not-found path, and would answer other spellings of its
    // routes too: only the exact ones reach it. (Here rather than earlier, so the 404 has every
    // header the other hooks set.)
    if (request.is404 && !isServedLibraryRoute(request.method, request.url)) {
      return await reply.code(404).send(notFoundBody(request.method, request.url))
    }
    // The library's routes are not the router's (it matched none): their path is their route.
    const route = request.routeOptions.url ?? request.url
    const limited = limitedAuthRoute(request.method, route)
    if (limited === undefined) return
    const action = limited.limit
    const checks = [byAddress[action]]
    if (limited.perAccount === 'resetRequests' && accountOf(request.body) !== undefined) checks.push(resetRequestsByAccount)
    for (const check of checks) {
      const result = await check(request)
      if (!result.isAllowed && result.isExceeded) {
        request.log.warn({ action, limited: result.key.split(':')[0] }, 'authentication request rate-limited')
        return await tooManyAttempts(reply, result.ttlInSeconds)
      }
    }
    // A value longer than any valid one is refused before anything looks at it (the session
    // core would fail on a long email in a query string); in the library's field-error shape.
    const oversized = oversizedFields(request.body)
    if (oversized.length > 0) return await reply.code(400).send({ status: 'FIELD_ERROR', formFields: oversized })
  })
}, { name: 'auth-rate-limit' })
