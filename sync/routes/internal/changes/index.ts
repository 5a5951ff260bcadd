import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CHANGES_BATCH_BODY_LIMIT, CHANGES_PAGE_DEFAULT_LIMIT, ChangesBatchRequestSchema, ChangesBatchResponseSchema, ChangesPageSchema, ChangesQuerySchema
} from '../../../../schemas/sync/index.js'
import { requireActingUser } from '../../../lib/acting-user.js'
import { errorResponses } from '../../../lib/route-schemas.js'
import { noteActivity } from '../autohooks.js'

const changes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/', {
    schema: {
      description: 'One user\'s page of invalidations after a cursor; no cursor answers a watermark',
      querystring: ChangesQuerySchema,
      response: { 200: ChangesPageSchema, ...errorResponses }
    }
  }, async (request) => {
    const { userId, cursor, limit } = request.query
    requireActingUser(request.syncActingUser, userId)
    return await fastify.syncFeed.page(userId, cursor ?? null, limit ?? CHANGES_PAGE_DEFAULT_LIMIT)
  })

  fastify.post('/batch', {
    bodyLimit: CHANGES_BATCH_BODY_LIMIT,
    schema: {
      description: 'Many users\' pages in one request; each page equals the single-user answer',
      body: ChangesBatchRequestSchema,
      response: { 200: ChangesBatchResponseSchema, ...errorResponses }
    }
  }, async (request) => {
    const { users, limit } = request.body
    // A batched poll acts for nobody, yet each of its users has an open stream.
    noteActivity(fastify, users.map((user) => user.userId))
    return { pages: await fastify.syncFeed.pages(users, limit ?? CHANGES_PAGE_DEFAULT_LIMIT) }
  })
}

export default changes
