import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import {
  CHANGES_BATCH_BODY_LIMIT, CHANGES_PAGE_DEFAULT_LIMIT, ChangesBatchRequestSchema, ChangesBatchResponseSchema, ChangesPageSchema, ChangesQuerySchema,
  type ChangesPage, type CursorRequest
} from '../../../../schemas/sync/index.js'
import { requireActingUser } from '../../../lib/acting-user.js'
import { errorResponses } from '../../../lib/route-schemas.js'
import { noteActivity } from '../autohooks.js'

/**
 * Reads the pages; while all are empty, waits for an append of one of the users (or the deadline,
 * or the caller going away) and reads them again. The wait is registered before each read, so an
 * append that lands during the read is not missed.
 */
async function heldPages (fastify: FastifyInstance, reply: FastifyReply, users: CursorRequest[], limit: number, waitMs: number): Promise<ChangesPage[]> {
  const deadline = performance.now() + waitMs
  const gone = new AbortController()
  const onClose = (): void => { if (!reply.raw.writableFinished) gone.abort() }
  reply.raw.once('close', onClose)
  const ticket = fastify.syncFeedWaits.open(users.map((user) => user.userId))
  try {
    for (;;) {
      const { pages, heads } = await fastify.syncFeed.pagesAndHeads(users, limit)
      const remainingMs = deadline - performance.now()
      if (remainingMs <= 0 || gone.signal.aborted || ticket.ended || pages.some((page) => page.invalidations.length > 0 || page.hasMore || page.resyncRequired)) return pages
      ticket.readHeads(heads)
      await ticket.wait(remainingMs, gone.signal)
      if (gone.signal.aborted) return pages
    }
  } finally {
    ticket.release()
    reply.raw.off('close', onClose)
  }
}

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
  }, async (request, reply) => {
    const { users, limit, waitMs } = request.body
    // A batched poll acts for nobody, yet each of its users has an open stream.
    noteActivity(fastify, users.map((user) => user.userId))
    const pageLimit = limit ?? CHANGES_PAGE_DEFAULT_LIMIT
    // A null cursor asks for a watermark, which the caller needs at once.
    if (waitMs === undefined || waitMs === 0 || users.some((user) => user.cursor === null || user.cursor === '')) {
      return { pages: await fastify.syncFeed.pages(users, pageLimit) }
    }
    return { pages: await heldPages(fastify, reply, users, pageLimit, waitMs) }
  })
}

export default changes
