import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { FieldErrorResponse } from '../../schemas/session-library.js'
import { SECURITY, anyRouteResponses, bodyResponses, errorResponse, rateLimitedResponse, SessionRefusedResponse } from '../../schemas/responses.js'
import Session from 'supertokens-node/recipe/session'

// The specification's refresh path, next to the library's own /api/auth/session/refresh. Native
// clients send `sx-auth-mode: header` and the refresh token as a bearer token and get new
// sx-access-token, sx-refresh-token and front-token headers; browsers send the refresh cookie.
const refresh: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/refresh', {
    schema: {
      description: 'Rotate the session tokens. A replayed (already rotated) refresh token revokes the session.',
      tags: ['auth'],
      security: SECURITY.refresh,
      response: {
        200: Type.Object({}, { description: 'New tokens are in the response headers (sx-access-token, sx-refresh-token, front-token) or cookies' }),
        ...bodyResponses,
        // A credential route's fields are bounded before anything reads them, in the library's field-error shape.
        400: Type.Union([errorResponse('The body cannot be read'), FieldErrorResponse], { description: 'The body cannot be read, or a form field is longer than any valid one' }),
        401: SessionRefusedResponse,
        ...rateLimitedResponse,
        ...anyRouteResponses
      }
    }
  }, async (request, reply) => {
    await Session.refreshSession(request, reply)
    return {}
  })
}

export default refresh
