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
        404: errorResponse('The connection to reconnect is not the user\'s'),
        409: errorResponse('The provider is not configured, or Sync is not in active execution')
      }
    }
  }, async (request) => await fastify.providerConnections.begin(request.userId, request.body))
}

export default begin
