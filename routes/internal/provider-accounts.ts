import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProviderAccountClaimResultSchema, ProviderAccountClaimSchema } from '../../schemas/sync/index.js'
import { SECURITY, bodyResponses, errorResponse, serviceResponses } from '../../schemas/responses.js'

// Where the Sync service asks, after a provider connect's code exchange and before it stores
// anything, whether the user may hold that provider account: the same rules as the direct connect
// (specification, Errors: EXTERNAL_ACCOUNT_ALREADY_CONNECTED, EXTERNAL_CONNECT_EMAIL_MISMATCH).
const providerAccounts: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/provider-accounts/claim', {
    schema: {
      description: 'A provider account a connect through Sync brought: conflict when another user holds it, mismatch when its email ' +
        'is not the user\'s, else it is the user\'s from now on (Sync service only)',
      tags: ['internal'],
      body: ProviderAccountClaimSchema,
      security: SECURITY.service,
      response: { 200: ProviderAccountClaimResultSchema, ...bodyResponses, ...serviceResponses, 404: errorResponse('USER_NOT_FOUND: no such user') }
    }
  }, async (request) => await fastify.providerAuth.claimConnectedAccount(request.body))
}

export default providerAccounts
