import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifySchemaValidationError } from 'fastify'
import { DeleteQuery, Event, EventChange, EventChangeBody, EventList, EventParams, EVENT_LIMITS, RangeQuery } from '../../schemas/event.js'
import { NoContentResponse, SECURITY, bodyResponses, errorResponse, invalidInputResponse, sessionResponses } from '../../schemas/responses.js'
import { invalidEvent } from '../../lib/events/errors.js'
import { serializeInSlices } from '../../lib/events/range.js'
import { FORMAT_MESSAGES } from '../../plugins/external/request-bodies.js'

/**
 * The body is one change or an array of them; ajv reports the mismatch of the other shape too
 * ("must be array" for an object). Only the errors of the shape the client sent are kept.
 */
function bodyErrorMessage (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const relevant = errors.filter((error) => !(error.instancePath === '' && (error.keyword === 'type' || error.keyword === 'anyOf')))
  const shown = relevant.length > 0 ? relevant : [{ instancePath: '', message: 'must be an event change or an array of them' }]
  return errorMessage(shown, dataVar)
}

type ReportedError = Pick<FastifySchemaValidationError, 'instancePath' | 'message'> & Partial<Pick<FastifySchemaValidationError, 'keyword' | 'params'>>

/** Fastify's own wording, with this project's formats named for what they are. */
function errorMessage (errors: ReportedError[], dataVar: string): Error {
  return new Error(errors.map((error) => {
    const format = error.keyword === 'format' ? (error.params as { format?: unknown } | undefined)?.format : undefined
    const message = (typeof format === 'string' ? FORMAT_MESSAGES[format] : undefined) ?? error.message ?? 'is invalid'
    return `${dataVar}${error.instancePath} ${message}`
  }).join(', '))
}

function isStatusOnly (payload: unknown): payload is { statusCode: number } {
  return typeof payload === 'object' && payload !== null && Object.keys(payload).length === 1 &&
    typeof (payload as { statusCode?: unknown }).statusCode === 'number'
}

const eventRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  // A handler returning `{ statusCode: 204 }` answers a true empty 204: no body, no content type.
  fastify.addHook('preSerialization', async (_request, reply, payload: unknown) => {
    if (isStatusOnly(payload)) reply.code(payload.statusCode)
    return payload
  })
  fastify.addHook('onSend', async (_request, reply, payload) => {
    if (reply.statusCode !== 204) return payload
    reply.removeHeader('content-type')
    reply.removeHeader('content-length')
    return null
  })

  const notFound = { 404: errorResponse('EVENT_NOT_FOUND: no such event of the user') }
  const refused = {
    409: errorResponse('EVENT_ID_TAKEN (another request created this id at the same moment), EVENT_CHANGED (changed meanwhile; reload and try again)'),
    410: errorResponse('CONNECTION_REVOKED: the event\'s provider connection lost its grant; `connectionId` names it')
  }
  // The handler's `{ statusCode: 204 }` never reaches the wire (see the hooks above).
  const empty = { 204: NoContentResponse }
  const security = SECURITY.session

  fastify.post('/', {
    schema: {
      description: 'Create or update one event, or many all-or-nothing',
      tags: ['event'],
      security,
      body: EventChangeBody,
      response: { ...empty, ...bodyResponses, ...sessionResponses, ...notFound, ...refused }
    },
    schemaErrorFormatter: bodyErrorMessage
  }, async (request) => {
    await fastify.events.upsert({ userId: request.userId, now: new Date() }, request.body, request.log)
    return { statusCode: 204 } as const
  })

  fastify.put('/:id', {
    schema: {
      description: 'Update one event, or edit one occurrence of a series (`<seriesId>_<originalStart>`)',
      tags: ['event'],
      security,
      params: EventParams,
      body: EventChange,
      response: { ...empty, ...bodyResponses, ...sessionResponses, ...notFound, ...refused }
    },
    schemaErrorFormatter: errorMessage
  }, async (request) => {
    await fastify.events.update({ userId: request.userId, now: new Date() }, request.params.id, request.body, request.log)
    return { statusCode: 204 } as const
  })

  fastify.delete('/:id', {
    schema: {
      description: 'Delete one event; for an occurrence of a series, `applyTo` says which occurrences go (default `this`)',
      tags: ['event'],
      params: EventParams,
      security,
      querystring: DeleteQuery,
      response: { ...empty, ...bodyResponses, ...sessionResponses, ...notFound, ...refused }
    }
  }, async (request) => {
    await fastify.events.remove({ userId: request.userId, now: new Date() }, request.params.id, request.query.applyTo ?? 'this', request.log)
    return { statusCode: 204 } as const
  })

  fastify.get('/:id', {
    schema: {
      description: 'One event, or one occurrence of a series',
      tags: ['event'],
      security,
      params: EventParams,
      response: { 200: Event, ...invalidInputResponse, ...sessionResponses, ...notFound }
    }
  }, async (request) => await fastify.events.get(request.userId, request.params.id))

  fastify.get('/', {
    schema: {
      description: 'Every event and occurrence overlapping [start, end)',
      tags: ['event'],
      security,
      querystring: RangeQuery,
      response: { 200: EventList, ...invalidInputResponse, ...sessionResponses }
    }
  }, async (request, reply) => {
    const from = new Date(request.query.start)
    const to = new Date(request.query.end)
    if (Number.isNaN(from.getTime())) throw invalidEvent('querystring/start', 'must be a real date')
    if (Number.isNaN(to.getTime())) throw invalidEvent('querystring/end', 'must be a real date')
    if (to <= from) throw invalidEvent('querystring/end', 'must be after start')
    if (to.getTime() - from.getTime() > EVENT_LIMITS.rangeDays * 86_400_000) {
      throw invalidEvent('querystring/end', `must be at most ${EVENT_LIMITS.rangeDays} days after start`)
    }
    const events = await fastify.events.range(request.userId, from, to)
    // Serialized item by item with the route's own serializer for an event (same fields, same
    // checks), so that a large answer does not hold the event loop in one piece.
    const serializeEvent = reply.compileSerializationSchema(Event, '200')
    const text = await serializeInSlices(events, (event) => serializeEvent(event as unknown as Record<string, unknown>))
    return await reply.type('application/json; charset=utf-8').serializer(() => text).send(events)
  })
}

export default eventRoutes
