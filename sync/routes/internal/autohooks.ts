// Every /internal/* route: the request must carry a fresh signature (lib/internal-auth.ts) made
// with sync.internalAuthToken over its method, path, acting user and body.
import type { FastifyInstance } from 'fastify'
import { verifyInternalRequest } from '../../../lib/internal-auth.js'
import { errorBody } from '../../lib/errors.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes as received; the signature covers them. */
    syncRawBody: Buffer | null
    syncBodyUnparsable: boolean
    /** The user the verified signature acts for, or null for requests acting for nobody. */
    syncActingUser: string | null
  }
}

/** Records users as active without holding up the request; a failed write is only logged. */
export function noteActivity (fastify: FastifyInstance, userIds: string[]): void {
  fastify.syncActivity.touch(userIds, fastify.syncClock.now()).catch((error: unknown) => {
    fastify.log.warn({ err: error }, 'user activity could not be recorded')
  })
}

export default async function internalAuth (fastify: FastifyInstance): Promise<void> {
  fastify.decorateRequest('syncRawBody', null)
  fastify.decorateRequest('syncBodyUnparsable', false)
  fastify.decorateRequest('syncActingUser', null)

  // The signature is checked before the body is trusted, so a body that is not JSON is kept aside
  // and refused only after the caller proved it holds the secret.
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    request.syncRawBody = body
    if (body.length === 0) return done(null, undefined)
    try {
      done(null, JSON.parse(body.toString('utf8')))
    } catch {
      request.syncBodyUnparsable = true
      done(null, undefined)
    }
  })

  fastify.addHook('preValidation', async (request, reply) => {
    const result = verifyInternalRequest({
      secret: fastify.syncConfig.sync.internalAuthToken,
      method: request.method,
      path: request.url,
      body: request.syncRawBody ?? undefined,
      headers: request.headers
    }, fastify.syncClock.now().getTime())
    if (!result.ok) {
      request.log.warn({ reason: result.reason, path: request.url.split('?')[0] }, 'internal request refused')
      return reply.code(401).send(errorBody('UNAUTHORIZED', 'Missing, stale or invalid internal request signature'))
    }
    request.syncActingUser = result.userId
    // The backend acts for a user only while that user uses the service: watch maintenance reads it.
    if (result.userId !== null) noteActivity(fastify, [result.userId])
    if (request.syncBodyUnparsable) {
      return reply.code(400).send(errorBody('VALIDATION', 'Request body is not valid JSON'))
    }
  })
}
