import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BeginConnectionRequestSchema, BeginConnectionResponseSchema } from '../../../schemas/sync/index.js'
import { ErrorResponse } from '../../../schemas/errors.js'

// Specification, Endpoints: starts the provider OAuth exchange, proxied to the Sync service,
// with an intent of `connect` or `reconnect`; needs sync.execution `active`.
const begin: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/begin', {
    onRequest: fastify.requireSession,
    schema: {
      description: 'Start connecting (or reconnecting) a provider calendar; answers the URL to send the browser to',
      tags: ['connections'],
      body: BeginConnectionRequestSchema,
      response: {
        200: BeginConnectionResponseSchema,
        400: ErrorResponse,
        404: ErrorResponse,
        409: ErrorResponse,
        503: ErrorResponse
      }
    }
  }, async (request) => await fastify.providerConnections.begin(request.userId, request.body))
}

export default begin
