import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ErrorResponse } from '../../schemas/errors.js'

// The refresh button and the client's focus refresh (specification, "Client reactions"): pull the
// user's connected calendars now. What changes arrives on the stream as usual.
const refresh: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/refresh', {
    schema: {
      description: 'Pull the user\'s connected provider calendars now',
      tags: ['connections'],
      response: {
        200: Type.Object({ queued: Type.Integer({ minimum: 0, description: 'Pulls queued for the user\'s live connections' }) }),
        503: ErrorResponse
      }
    }
  }, async (request) => await fastify.providerConnections.refresh(request.userId))
}

export default refresh
