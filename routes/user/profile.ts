import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { UserProfile } from '../../schemas/user.js'
import { SECURITY, errorResponse, sessionResponses } from '../../schemas/responses.js'
import { isProviderConnected } from '../../lib/provider-connection.js'

const profile: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/profile', {
    schema: {
      description: 'The signed-in user\'s profile',
      tags: ['user'],
      security: SECURITY.session,
      response: { 200: UserProfile, 404: errorResponse('No user record for this session'), ...sessionResponses }
    }
  }, async (request, reply) => {
    const user = await fastify.users.findById(request.userId)
    if (user === null) {
      return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: 'No user record for this session' })
    }
    return {
      id: user._id.toHexString(),
      email: user.email,
      ...(user.name !== undefined ? { name: user.name } : {}),
      signedUpAt: user.signedUpAt.toISOString(),
      lastLoggedInAt: user.lastLoggedInAt.toISOString(),
      providerConnected: isProviderConnected(user)
    }
  })
}

export default profile
