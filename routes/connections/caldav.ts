import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CalDavConnectRequestSchema, CalDavConnectResponseSchema } from '../../schemas/sync/index.js'
import { ErrorResponse } from '../../schemas/errors.js'

// The password-based provider kind (CalDAV, for example iCloud with an app password): no OAuth
// round trip, the Sync service checks the account at the server and stores it encrypted. Sync's
// refusals pass through with its status and code (422 CALDAV_CREDENTIALS_REFUSED or
// CALDAV_DISCOVERY_FAILED, 400 CREDENTIAL_ENCRYPTION_KEY_MISSING, ...).
const caldav: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/caldav', {
    schema: {
      description: 'Connect (or repair) a CalDAV account with a server URL, user name and app password; its import follows',
      tags: ['connections'],
      body: CalDavConnectRequestSchema,
      response: {
        200: CalDavConnectResponseSchema,
        400: ErrorResponse,
        404: ErrorResponse,
        409: ErrorResponse,
        422: ErrorResponse,
        503: ErrorResponse
      }
    }
  }, async (request) => await fastify.providerConnections.connectCalDav(request.userId, request.body))
}

export default caldav
