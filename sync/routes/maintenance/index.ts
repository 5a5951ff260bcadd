// Watch maintenance for an outside scheduler, authenticated with an ID token whose audience is this
// endpoint's URL, signed by the configured issuer (sync.maintenanceIssuer) or key (sync.maintenanceKey).
import { Counter } from '../../../lib/metrics.js'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MaintenanceResultSchema, SyncErrorBodySchema } from '../../../schemas/sync/index.js'
import { errorBody } from '../../lib/errors.js'
import { MaintenanceUnauthorizedError } from '../../services/maintenance.js'

const maintenance: FastifyPluginAsyncTypebox = async (fastify) => {
  // A scheduler that stops calling shows as no `done` for a while; one that is refused or fails, at once.
  const runs = new Counter({ name: 'sync_maintenance_runs_total', help: 'Calls of POST /maintenance, by outcome (done, failed, refused)', labelNames: ['outcome'], registers: [fastify.metrics] })
  for (const outcome of ['done', 'failed', 'refused']) runs.inc({ outcome }, 0)
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
      runs.inc({ outcome: 'refused' })
      return reply.code(401).send(errorBody('UNAUTHORIZED', 'A valid ID token of the trusted caller is required'))
    }
    try {
      const result = await fastify.syncMaintenance.run()
      runs.inc({ outcome: 'done' })
      return result
    } catch (error) {
      runs.inc({ outcome: 'failed' })
      throw error
    }
  })
}

export default maintenance
