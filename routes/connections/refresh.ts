import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { SECURITY, bodyResponses, sessionResponses } from '../../schemas/responses.js'

// The refresh button and the client's focus refresh (specification, "Client reactions"): pull the
// user's connected calendars now. What changes arrives on the stream as usual.
const refresh: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/refresh', {
    schema: {
      description: 'Pull the user\'s connected provider calendars now',
      tags: ['connections'],
      security: SECURITY.session,
      response: {
        200: Type.Object({ queued: Type.Integer({ minimum: 0, description: 'Pulls queued for the user\'s live connections' }) }, { additionalProperties: false }),
        ...bodyResponses,
        ...sessionResponses
      }
    }
  }, async (request) => await fastify.providerConnections.refresh(request.userId))
}

export default refresh
