import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BeginConnectionRequestSchema, BeginConnectionResponseSchema } from '../../../schemas/sync/index.js'
import { SECURITY, bodyResponses, errorResponse, sessionResponses } from '../../../schemas/responses.js'

// Specification, Endpoints: starts the provider OAuth exchange, proxied to the Sync service,
// with an intent of `connect` or `reconnect`; needs sync.execution `active`.
const begin: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/begin', {
    onRequest: fastify.requireSession,
    schema: {
      description: 'Start connecting (or reconnecting) a provider calendar; answers the URL to send the browser to',
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
  }, async (request) => await fastify.providerConnections.begin(request.userId, request.body))
}

export default begin
