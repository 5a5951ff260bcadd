import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  ProviderCalendarRemovalResultSchema, ProviderCalendarRemovalSchema, ProviderEventBatchResultSchema, ProviderEventBatchSchema,
  ProviderWriteStateResultSchema, ProviderWriteStateSchema
} from '../../schemas/sync/index.js'
import { SECURITY, bodyResponses, serviceResponses } from '../../schemas/responses.js'

// Where the Sync service hands the backend what providers changed (docs/design.md, "Provider data").
const providerEvents: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/provider-events', {
    // A page of a big calendar is larger than the default body limit of ordinary requests.
    bodyLimit: 16 * 1024 * 1024,
    schema: {
      description: 'Apply one page of a provider calendar\'s events to the user\'s data (Sync service only)',
      tags: ['internal'],
      body: ProviderEventBatchSchema,
      security: SECURITY.service,
      response: { 200: ProviderEventBatchResultSchema, ...bodyResponses, ...serviceResponses }
    }
  }, async (request) => await fastify.providerEvents.applyBatch(request.body, request.log))

  fastify.post('/provider-events/remove', {
    schema: {
      description: 'Remove a connection\'s provider calendars (or one of them) from the user\'s data (Sync service only)',
      tags: ['internal'],
      body: ProviderCalendarRemovalSchema,
      security: SECURITY.service,
      response: { 200: ProviderCalendarRemovalResultSchema, ...bodyResponses, ...serviceResponses }
    }
  }, async (request) => ({ deleted: await fastify.providerEvents.remove(request.body) }))

  fastify.post('/provider-events/write-state', {
    schema: {
      description: 'Mark an event whose change made here its provider does not have (refused, or failing), or clear the mark (Sync service only)',
      tags: ['internal'],
      body: ProviderWriteStateSchema,
      security: SECURITY.service,
      response: { 200: ProviderWriteStateResultSchema, ...bodyResponses, ...serviceResponses }
    }
  }, async (request) => ({ updated: await fastify.providerEvents.setWriteState(request.body) }))
}

export default providerEvents
