import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { plugin as supertokensPlugin, errorHandler as supertokensErrorHandler } from 'supertokens-node/framework/fastify'
import Session from 'supertokens-node/recipe/session'
import { verifySession } from 'supertokens-node/recipe/session/framework/fastify'
import { errorBody, notFoundBody } from '../../lib/error-bodies.js'
import { AUTH_BASE_PATH, assertSessionLibraryServes, signInSummaries } from '../../services/session-library/index.js'
import { observeSessionCoreCalls } from '../../clients/session-core.js'

export { isSessionLibraryError, sessionCoreUnavailable } from '../../services/session-library/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    requireSession: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
    requireLiveSession: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  }
  interface FastifyRequest {
    // The canonical 24-hex user id of the verified session.
    userId: string
  }
}

// Access tokens are verified locally by default. A long-lived stream also asks the session core,
// so a token from a session that was signed out cannot open a new one.
function sessionVerifier (options: { checkDatabase: boolean }) {
  const verify = verifySession({ checkDatabase: options.checkDatabase })
  return async function requireSession (request: FastifyRequest, reply: FastifyReply) {
    await verify(request as Parameters<typeof verify>[0], reply)
    const verified = (request as FastifyRequest & { session?: Session.SessionContainer }).session
    if (verified === undefined) return
    const { sessionRevocations } = request.server
    // Access tokens are checked locally: one of a session that ended (sign-out, password reset,
    // token theft, a dead provider grant) is refused here rather than when it expires.
    if (sessionRevocations.isRevoked(verified.getHandle())) {
      throw new Session.Error({ type: Session.Error.UNAUTHORISED, message: 'session revoked', payload: { clearTokens: true } })
    }
    const { exp, iat } = verified.getAccessTokenPayload() as { exp?: unknown, iat?: unknown }
    if (typeof exp === 'number' && typeof iat === 'number') sessionRevocations.noteAccessTokenLifetime((exp - iat) * 1000)
    request.userId = verified.getUserId()
  }
}

export const sessionErrorHandler = supertokensErrorHandler()

export default fp(async function session (fastify) {
  // The library is the process's, configured by its entry (server.ts): an app whose settings
  // differ would be served with another app's.
  assertSessionLibraryServes(fastify.config)
  if (fastify.metricsPort !== null) {
    const stopObserving = observeSessionCoreCalls(fastify.config.sessions.uri, fastify.metrics)
    fastify.addHook('onClose', async () => { stopObserving() })
  }

  // The library answers its own routes (sign-up, sign-in, sign-out, refresh, password reset,
  // provider sign-in) under /api/auth. They are not Fastify routes: they are served from this
  // scope's not-found path, so the library's hook runs for /api/auth/* only and costs nothing
  // on every other route.
  await fastify.register(async function sessionLibraryRoutes (auth) {
    await auth.register(supertokensPlugin)
    auth.setNotFoundHandler((request, reply) => { reply.code(404).send(notFoundBody(request.method, request.url)) })
    // Errors of the library's routes go to the app's one error handler (typed refusals keep their
    // status, code and Retry-After; an unavailable session core is a 503; a 5xx hides its
    // message). This scope is made before the app sets that handler, so without this its errors
    // would reach Fastify's default, which does neither.
    auth.setErrorHandler(async (error, request, reply) => { await fastify.errorHandler(error, request, reply) })
    // The library reads its parameters from the body as an object: any other JSON (null, a number,
    // an array) would fail inside it as a 500. Before its own preHandler hook, which answers.
    auth.addHook('preValidation', async (request, reply) => {
      const body: unknown = request.body
      if (body === undefined || (typeof body === 'object' && body !== null && !Array.isArray(body))) return
      return await reply.code(400).send(errorBody(400, 'The body must be a JSON object', 'BODY_NOT_AN_OBJECT'))
    })
    auth.addHook('onSend', async (request, _reply, payload) => {
      const summary = signInSummaries.get(request)
      if (summary === undefined || typeof payload !== 'string') return payload
      signInSummaries.delete(request)
      const body = JSON.parse(payload) as Record<string, unknown>
      return body['status'] === 'OK' ? JSON.stringify({ ...body, summary }) : payload
    })
  }, { prefix: AUTH_BASE_PATH })

  fastify.decorateRequest('userId', '')
  fastify.decorate('requireSession', sessionVerifier({ checkDatabase: false }))
  fastify.decorate('requireLiveSession', sessionVerifier({ checkDatabase: true }))
}, { name: 'session', dependencies: ['config', 'identity', 'sign-out', 'provider-auth', 'session-revocations', 'auth-rate-limit'] })
