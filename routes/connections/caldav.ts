import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CalDavConnectRequestSchema, CalDavConnectResponseSchema } from '../../schemas/sync/index.js'
import { SECURITY, bodyResponses, errorResponse, sessionResponses } from '../../schemas/responses.js'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { tooManyAttempts } from '../../plugins/external/auth-rate-limit.js'

// Each connect makes Sync reach a server the person named: a few a minute is what a person
// needs, and it keeps anyone from using Sync to probe servers in bulk.
const CONNECTS_PER_USER = { max: 10, timeWindow: 60_000 }
const CONNECTS_PER_SERVER = { max: 30, timeWindow: 60_000 }

// The password-based provider kind (CalDAV, for example iCloud with an app password): no OAuth
// round trip, the Sync service checks the account at the server and stores it encrypted. Sync's
// refusals pass through with its status and code (422 CALDAV_CONNECT_FAILED, 400
// CREDENTIAL_ENCRYPTION_KEY_MISSING, ...).
const caldav: FastifyPluginAsyncTypebox = async (fastify) => {
  const perUser = fastify.createRateLimit({ ...CONNECTS_PER_USER, keyGenerator: (request) => `caldav-connect:user:${request.userId}` })
  const perServer = fastify.createRateLimit({
    ...CONNECTS_PER_SERVER,
    keyGenerator: (request) => `caldav-connect:server:${serverHost((request.body as { serverUrl?: unknown } | undefined)?.serverUrl)}`
  })
  fastify.post('/caldav', {
    preHandler: async (request, reply) => {
      // The password would be stored in clear inside the connection's account field.
      if (/^https?:\/\/[^/?#]*@/i.test(request.body.serverUrl)) {
        throw new TypedHttpError(400, 'VALIDATION', 'body/serverUrl must not carry a user name or password: give them in username and password')
      }
      for (const limit of [perUser, perServer]) {
        const result = await limit(request)
        if (!result.isAllowed && result.isExceeded) return await tooManyAttempts(reply, result.ttlInSeconds)
      }
    },
    schema: {
      description: 'Connect (or repair) a CalDAV account with a server URL, user name and app password; its import follows. ' +
        'Sync reaches only public addresses (and those the operator allows), and stays on the server\'s origin',
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
        422: errorResponse('CALDAV_CONNECT_FAILED: the server did not take the account (a refused password, no calendar, an address Sync ' +
          'does not reach for a user: loopback, private, link-local, see sync.privateAddressAllowlist); one answer whatever failed, after at least a second'),
        429: errorResponse('RATE_LIMITED: more than 10 connects a minute by this user, or 30 to this server, or two of the user\'s still under way; Retry-After says when')
      }
    }
  }, async (request) => await fastify.providerConnections.connectCalDav(request.userId, request.body))
}

/** The host a connect names, lower-cased; the whole value when it is not a URL. */
function serverHost (serverUrl: unknown): string {
  try {
    return new URL(String(serverUrl)).host.toLowerCase()
  } catch {
    return String(serverUrl)
  }
}

export default caldav
