import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CalendarListView } from '../../schemas/calendar.js'
import { SECURITY, sessionResponses } from '../../schemas/responses.js'

// The calendar list beside the web client's grid: names and colours of the user's provider
// calendars, as the Sync service keeps them.
const calendars: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/', {
    schema: {
      description: 'The user\'s provider calendars (each connection\'s primary first): name, colour and the calendarId their events carry. ' +
        'The user\'s own calendar (events without a calendarId) is not listed. 503 SYNC_UNAVAILABLE while the Sync service cannot answer',
      tags: ['connections'],
      security: SECURITY.session,
      response: { 200: CalendarListView, ...sessionResponses }
    }
  }, async (request) => await fastify.providerConnections.calendars(request.userId))
}

export default calendars
