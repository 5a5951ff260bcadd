import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CalDavConnectRequestSchema, CalDavConnectResponseSchema } from '../../schemas/sync/index.js'
import { SECURITY, bodyResponses, errorResponse, sessionResponses } from '../../schemas/responses.js'

// The password-based provider kind (CalDAV, for example iCloud with an app password): no OAuth
// round trip, the Sync service checks the account at the server and stores it encrypted. Sync's
// refusals pass through with its status and code (422 CALDAV_CREDENTIALS_REFUSED or
// CALDAV_DISCOVERY_FAILED, 400 CREDENTIAL_ENCRYPTION_KEY_MISSING, ...).
const caldav: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/caldav', {
    schema: {
      description: 'Connect (or repair) a CalDAV account with a server URL, user name and app password; its import follows',
      tags: ['connections'],
      security: SECURITY.session,
      body: CalDavConnectRequestSchema,
      response: {
        200: CalDavConnectResponseSchema,
        ...bodyResponses,
        ...sessionResponses,
        400: errorResponse('The body does not match its schema; PROVIDER_NOT_CONFIGURED; CREDENTIAL_ENCRYPTION_KEY_MISSING'),
        404: errorResponse('CONNECTION_NOT_FOUND: the connection to repair is not the user\'s'),
        409: errorResponse('EXECUTION_PASSIVE: the Sync service does not run connects (sync.execution: passive)'),
        422: errorResponse('CALDAV_CREDENTIALS_REFUSED or CALDAV_DISCOVERY_FAILED: the server refused the account or has no calendar')
      }
    }
  }, async (request) => await fastify.providerConnections.connectCalDav(request.userId, request.body))
}

export default caldav
