import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { UserPreferences } from '../../schemas/preferences.js'
import { SECURITY, bodyResponses, errorResponse, sessionResponses } from '../../schemas/responses.js'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { checkPreferences } from '../../lib/preferences.js'

// The display preferences kept with the account, beside the hidden calendars: every browser and
// device of the user shows the calendar with the same week, clock, language, zones and colours.
const preferences: FastifyPluginAsyncTypebox = async (fastify) => {
  const noUser = errorResponse('No user record for this session')
  const missing = () => new TypedHttpError(404, 'USER_NOT_FOUND', 'No user record for this session')

  fastify.get('/preferences', {
    schema: {
      description: 'The user\'s display preferences; a field left out has not been chosen (the client uses the browser\'s own)',
      tags: ['user'],
      security: SECURITY.session,
      response: { 200: UserPreferences, 404: noUser, ...sessionResponses }
    }
  }, async (request) => {
    const user = await fastify.users.findById(request.userId)
    if (user === null) throw missing()
    return user.preferences ?? {}
  })

  fastify.put('/preferences', {
    // A view preference, not calendar data: a read-only (billing) account may still choose how it sees.
    config: { billingExempt: true },
    schema: {
      description: 'Replaces the display preferences (fields left out go back to the browser\'s own). Time zones must be IANA names and ' +
        'are stored under their current name; the locale must be a BCP 47 tag Intl can format dates in; working hours start before they end. ' +
        'Anything else is 400 FST_ERR_VALIDATION and nothing is stored. Answers what was stored',
      tags: ['user'],
      security: SECURITY.session,
      body: UserPreferences,
      response: { 200: UserPreferences, 404: noUser, ...bodyResponses, ...sessionResponses }
    }
  }, async (request) => {
    const checked = checkPreferences(request.body)
    if ('error' in checked) throw new TypedHttpError(400, 'FST_ERR_VALIDATION', checked.error)
    if (!await fastify.users.setPreferences(request.userId, checked.preferences)) throw missing()
    return checked.preferences
  })
}

export default preferences
