import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import Session from 'supertokens-node/recipe/session'

// The specification's refresh path, next to the library's own /api/auth/session/refresh. Native
// clients send `sx-auth-mode: header` and the refresh token as a bearer token and get new
// sx-access-token, sx-refresh-token and front-token headers; browsers send the refresh cookie.
const refresh: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/refresh', {
    schema: {
      description: 'Rotate the session tokens. A replayed (already rotated) refresh token revokes the session.',
      tags: ['auth'],
      response: { 200: Type.Object({}, { description: 'New tokens are in the response headers or cookies' }) }
    }
  }, async (request, reply) => {
    await Session.refreshSession(request, reply)
    return {}
  })
}

export default refresh
