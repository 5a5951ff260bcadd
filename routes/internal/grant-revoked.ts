import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { GrantRevokedNoticeSchema, GrantRevokedResultSchema } from '../../schemas/sync/index.js'
import { SECURITY, bodyResponses, serviceResponses } from '../../schemas/responses.js'

// Where the Sync service tells the backend that a provider answered invalid_grant for a user's
// stored refresh token (specification, States and transitions: the session is revoked and the
// client returns to login), whether or not the user has a stream open anywhere.
const grantRevoked: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/grant-revoked', {
    schema: {
      description: 'A provider refused the user\'s stored refresh token for good: revoke every session of the user (Sync service only)',
      tags: ['internal'],
      body: GrantRevokedNoticeSchema,
      security: SECURITY.service,
      response: { 200: GrantRevokedResultSchema, ...bodyResponses, ...serviceResponses }
    }
  }, async (request) => await fastify.providerAuth.grantRevoked({
    userId: request.body.userId,
    provider: request.body.provider,
    connectionId: request.body.connectionId,
    source: 'sync'
  }))
}

export default grantRevoked
