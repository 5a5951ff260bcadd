import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ExportQuery, ImportQuery, ImportResultView } from '../../schemas/event.js'
import { SECURITY, errorResponse, invalidInputResponse, sessionResponses } from '../../schemas/responses.js'
import { ICS_LIMITS, OWN_CALENDAR, exportFileName, exportRangeOf } from '../../lib/events/ics.js'
import { TypedHttpError } from '../../lib/error-bodies.js'

const ICS_TYPE = 'text/calendar'

/** The calendar a query names: undefined for the user's own. */
function calendarOf (calendarId: string | undefined): string | undefined {
  return calendarId === undefined || calendarId === OWN_CALENDAR ? undefined : calendarId
}

// Calendar files: a calendar (or a range of it) as .ics, and an .ics file into a calendar
// through the write path of POST /api/event (docs/events.md, Calendar files).
const ics: FastifyPluginAsyncTypebox = async (fastify) => {
  // This plugin's routes read a calendar file as text; every other route keeps JSON only.
  fastify.addContentTypeParser(ICS_TYPE, { parseAs: 'string' }, (_request, body, done) => { done(null, body) })

  fastify.get('/export.ics', {
    schema: {
      description: 'The events of one calendar (default: the user\'s own) that reach into [start, end) as an iCalendar file, saved as an attachment: ' +
        'a VEVENT per event, a series with its RRULE and EXDATEs (cancelled occurrences too) and its edited occurrences as RECURRENCE-ID overrides, ' +
        'all-day events as dates, zoned times with TZID and their VTIMEZONE. At most 1830 days and 5000 stored events.',
      tags: ['event'],
      security: SECURITY.session,
      querystring: ExportQuery,
      response: {
        200: { description: 'The calendar file (Content-Disposition: attachment)', content: { [ICS_TYPE]: { schema: Type.String() } } },
        ...invalidInputResponse,
        ...sessionResponses
      }
    }
  }, async (request, reply) => {
    const range = exportRangeOf(request.query, new Date())
    const calendarId = calendarOf(request.query.calendarId)
    const text = await fastify.events.exportCalendar(request.userId, calendarId, range)
    return await reply
      .type(`${ICS_TYPE}; charset=utf-8`)
      .header('content-disposition', `attachment; filename="${exportFileName(calendarId ?? OWN_CALENDAR, range)}"`)
      .send(text)
  })

  fastify.post('/import', {
    bodyLimit: ICS_LIMITS.bodyBytes,
    schema: {
      description: 'Imports an iCalendar file (at most 2 MB and 5000 events) into one calendar (default: the user\'s own) through the write path of ' +
        'POST /api/event: a provider\'s calendar gets them through Sync. Each event\'s id comes from its UID, so importing the same file again ' +
        'stores nothing twice (`skipped`). A file that is not iCalendar is a 400 and stores nothing; an event that cannot be read is named in `errors`.',
      tags: ['event'],
      security: SECURITY.session,
      querystring: ImportQuery,
      body: { content: { [ICS_TYPE]: { schema: Type.String({ description: 'The iCalendar file (RFC 5545)' }) } } },
      response: {
        200: ImportResultView,
        ...invalidInputResponse,
        409: errorResponse('EVENT_ID_TAKEN: another request wrote one of these events at the same moment; import again'),
        410: errorResponse('CONNECTION_REVOKED: the calendar\'s provider connection lost its grant; `connectionId` names it'),
        413: errorResponse('The file is larger than 2 MB'),
        415: errorResponse('The body is not sent as text/calendar'),
        ...sessionResponses
      }
    }
  }, async (request) => {
    const body: unknown = request.body
    if (typeof body !== 'string') throw new TypedHttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send the file as text/calendar')
    return await fastify.events.importCalendar({ userId: request.userId, now: new Date() }, calendarOf(request.query.calendarId), body, request.log)
  })
}

export default ics
