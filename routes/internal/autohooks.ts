import type { FastifyInstance } from 'fastify'
import { bearerToken, secretsEqual } from '../../lib/secrets.js'
import { errorBody } from '../../lib/error-bodies.js'

// The backend's internal endpoints (specification, "Internal and webhook authentication"): only
// the Sync service calls them, with backend.serviceToken as a bearer token. Checked before the
// body is read, so an unauthenticated caller costs nothing.
export default async function requireServiceToken (fastify: FastifyInstance) {
  const expected = fastify.config.backend.serviceToken
  fastify.addHook('onRequest', async (request, reply) => {
    const presented = bearerToken(request.headers.authorization)
    if (presented !== undefined && secretsEqual(presented, expected)) return
    return await reply.code(401).send(errorBody(401, 'A valid service token is required', 'SERVICE_TOKEN_REQUIRED'))
  })
}
