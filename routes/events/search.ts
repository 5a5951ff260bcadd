import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SearchQuery, SearchResults } from '../../schemas/event.js'
import { SECURITY, invalidInputResponse, sessionResponses } from '../../schemas/responses.js'

const search: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/search', {
    schema: {
      description: 'The user\'s events found by the words of their title, location and description, over every calendar and date, ' +
        'in start order, a page at a time: a series is one result (its first start), a changed occurrence one of its own; ' +
        'cancelled events are not found. Send `next` back as `cursor` for the page after.',
      tags: ['event'],
      security: SECURITY.session,
      querystring: SearchQuery,
      response: { 200: SearchResults, ...invalidInputResponse, ...sessionResponses }
    }
  }, async (request) => await fastify.events.search(request.userId, request.query))
}

export default search
