import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProviderConnectRequestSchema, ProviderConnectResponseSchema } from '../../../schemas/provider-auth.js'
import { ConnectionConflictResponse } from '../../../schemas/errors.js'
import { SECURITY, bodyResponses, errorResponse, sessionResponses } from '../../../schemas/responses.js'
import { ConnectConflictError } from '../../../services/provider-auth.js'

// Specification, "Provider connect from an authenticated session": the web callback posts the
// code of Google's redirect here. Never the session library's sign-in-up route: the current
// session is kept, whatever the answer.
const connect: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/connect', {
    onRequest: fastify.requireSession,
    schema: {
      description: 'Connect a Google account (and its calendar) to the signed-in user with the authorization code of Google\'s redirect. ' +
        'On success the credential is stored, the user metadata sync flags are set to RESTART and sync restarts in the background; ' +
        'on any refusal nothing is stored and no flag is set.',
      tags: ['auth'],
      security: SECURITY.session,
      body: ProviderConnectRequestSchema,
      response: {
        200: ProviderConnectResponseSchema,
        ...bodyResponses,
        ...sessionResponses,
        400: errorResponse('The body does not match its schema; PROVIDER_NOT_CONFIGURED; REDIRECT_URI_NOT_ALLOWED; AUTHORIZATION_CODE_REJECTED, ' +
          'SCOPES_INCOMPLETE or OFFLINE_ACCESS_MISSING (Google\'s grant is not enough)'),
        404: errorResponse('USER_NOT_FOUND: no user record for this session'),
        409: ConnectionConflictResponse
      }
    }
  }, async (request, reply) => {
    try {
      return await fastify.providerAuth.connectGoogle(request.userId, request.body)
    } catch (error) {
      if (error instanceof ConnectConflictError) return await reply.code(409).send({ result: 'User not connected', code: error.code, message: error.message })
      throw error
    }
  })
}

export default connect
