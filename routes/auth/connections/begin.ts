import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import cookie from '@fastify/cookie'
import { binderCookieName, binderCookieOptions } from '../../../lib/connect-binder.js'
import { BeginConnectionRequestSchema, BeginConnectionResponseSchema } from '../../../schemas/sync/index.js'
import { SECURITY, bodyResponses, errorResponse, sessionResponses } from '../../../schemas/responses.js'

// Specification, Endpoints: starts the provider OAuth exchange, proxied to the Sync service,
// with an intent of `connect` or `reconnect`; needs sync.execution `active`. The browser gets the
// attempt's binder as a cookie: the callback finishes only where it is (lib/connect-binder.ts).
const begin: FastifyPluginAsyncTypebox = async (fastify) => {
  await fastify.register(cookie, { hook: false })
  const cookieOptions = binderCookieOptions(fastify.config.sync.callbackBaseUrl)
  fastify.post('/begin', {
    onRequest: fastify.requireSession,
    schema: {
      description: 'Start connecting (or reconnecting) a provider calendar; answers the URL to send the browser to, and sets ' +
        'an HttpOnly cookie (calendar_connect_<provider>, SameSite=Lax, for the /sync/oauth/ callbacks) without which the connect does not finish',
      tags: ['connections'],
      security: SECURITY.session,
      body: BeginConnectionRequestSchema,
      response: {
        200: BeginConnectionResponseSchema,
        ...bodyResponses,
        ...sessionResponses,
        400: errorResponse('The body does not match its schema, or PROVIDER_NOT_CONFIGURED'),
        404: errorResponse('CONNECTION_NOT_FOUND: no such connection of the user to reconnect'),
        409: errorResponse('EXECUTION_PASSIVE: the Sync service does not run connects (sync.execution: passive)')
      }
    }
  }, async (request, reply) => {
    const { browserBinder, ...begun } = await fastify.providerConnections.begin(request.userId, request.body)
    reply.header('set-cookie', fastify.serializeCookie(binderCookieName(request.body.provider), browserBinder, cookieOptions))
    return begun
  })
}

export default begin
