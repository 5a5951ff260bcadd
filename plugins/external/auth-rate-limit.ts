import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import { AUTH_LIMITS, accountOf, limitedAuthAction, type Limit } from '../../lib/auth-limits.js'
import { errorBody } from '../../lib/error-bodies.js'

// Rate limits of the credential routes (lib/auth-limits.ts), per client address and per account.
// Checked after the body is parsed, since the account is named in it, and before the session
// library sees the request. A refused request gets 429 with Retry-After and changes nothing.
export default fp(async function authRateLimit (fastify) {
  await fastify.register(rateLimit, { global: false })

  const limiter = (limit: Limit, keyOf: (request: FastifyRequest) => string) =>
    fastify.createRateLimit({ max: limit.max, timeWindow: limit.windowMs, keyGenerator: keyOf })
  const byAddress = {
    credentials: limiter(AUTH_LIMITS.perAddress.credentials, (request) => `address:credentials:${request.ip}`),
    refresh: limiter(AUTH_LIMITS.perAddress.refresh, (request) => `address:refresh:${request.ip}`)
  }
  const byAccount = limiter(AUTH_LIMITS.perAccount, (request) => `account:${accountOf(request.body) ?? ''}`)

  fastify.addHook('preHandler', async (request, reply) => {
    const action = limitedAuthAction(request.method, request.url)
    if (action === undefined) return
    const checks = [byAddress[action]]
    if (action === 'credentials' && accountOf(request.body) !== undefined) checks.push(byAccount)
    for (const check of checks) {
      const result = await check(request)
      if (!result.isAllowed && result.isExceeded) {
        request.log.warn({ action, limited: result.key.split(':')[0] }, 'authentication request rate-limited')
        return await reply.code(429).header('retry-after', String(result.ttlInSeconds))
          .send(errorBody(429, `Too many attempts; try again in ${result.ttlInSeconds} seconds`, 'RATE_LIMITED'))
      }
    }
  })
}, { name: 'auth-rate-limit' })
