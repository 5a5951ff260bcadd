import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CalendarListView, HiddenCalendarsView } from '../../schemas/calendar.js'
import { SECURITY, bodyResponses, errorResponse, sessionResponses } from '../../schemas/responses.js'
import { TypedHttpError } from '../../lib/error-bodies.js'

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

  const noUser = errorResponse('No user record for this session')

  fastify.get('/hidden', {
    schema: {
      description: 'The calendars the user hid in the list, kept with the account so every browser and device shows the same choice',
      tags: ['connections'],
      security: SECURITY.session,
      response: { 200: HiddenCalendarsView, 404: noUser, ...sessionResponses }
    }
  }, async (request) => {
    const user = await fastify.users.findById(request.userId)
    if (user === null) throw new TypedHttpError(404, 'USER_NOT_FOUND', 'No user record for this session')
    return { hidden: user.hiddenCalendars ?? [] }
  })

  fastify.put('/hidden', {
    // A view preference, not calendar data: a read-only (billing) account may still choose what it sees.
    config: { billingExempt: true },
    schema: {
      description: 'Replaces the set of hidden calendars (keys need not name a calendar listed now: a reconnected account keeps its choice)',
      tags: ['connections'],
      security: SECURITY.session,
      body: HiddenCalendarsView,
      response: { 200: HiddenCalendarsView, 404: noUser, ...bodyResponses, ...sessionResponses }
    }
  }, async (request) => {
    const hidden = request.body.hidden
    if (!await fastify.users.setHiddenCalendars(request.userId, hidden)) throw new TypedHttpError(404, 'USER_NOT_FOUND', 'No user record for this session')
    return { hidden }
  })
}

export default calendars
