// Watch maintenance for an outside scheduler, authenticated with an ID token whose audience is this
// endpoint's URL, signed by the configured issuer (sync.maintenanceIssuer) or key (sync.maintenanceKey).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MaintenanceResultSchema, SyncErrorBodySchema } from '../../../schemas/sync/index.js'
import { errorBody } from '../../lib/errors.js'
import { MaintenanceUnauthorizedError } from '../../services/maintenance.js'

const maintenance: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/', {
    schema: {
      description: 'Renews notification channels expiring soon for active users and stops those of inactive users',
      response: {
        200: MaintenanceResultSchema,
        401: SyncErrorBodySchema
      }
    }
  }, async (request, reply) => {
    try {
      await fastify.syncMaintenance.authenticate(request.headers.authorization)
    } catch (error) {
      if (!(error instanceof MaintenanceUnauthorizedError)) throw error
      request.log.warn({ reason: error.message }, 'maintenance request refused')
      return reply.code(401).send(errorBody('UNAUTHORIZED', 'A valid ID token of the trusted caller is required'))
    }
    return await fastify.syncMaintenance.run()
  })
}

export default maintenance
