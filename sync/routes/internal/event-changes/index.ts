import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { EventChangeAcceptedSchema, EventChangeReportSchema } from '../../../../schemas/sync/index.js'
import { requireActingUser } from '../../../lib/acting-user.js'
import { errorResponses } from '../../../lib/route-schemas.js'

const eventChanges: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/', {
    schema: {
      description: 'The backend applied an own-data event change: tell the user\'s other tabs and queue the provider write. ' +
        'When the connection\'s grant is revoked the change is held (heldUntilReconnect) and written once the user reconnects; 503 MAINTENANCE in maintenance mode; ' +
        'a repeated idempotency key answers as the first report did and changes nothing.',
      body: EventChangeReportSchema,
      response: { 202: EventChangeAcceptedSchema, ...errorResponses }
    }
  }, async (request, reply) => {
    requireActingUser(request.syncActingUser, request.body.userId)
    return reply.code(202).send(await fastify.syncEventChanges.apply(request.body))
  })
}

export default eventChanges
