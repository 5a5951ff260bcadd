import { TypedHttpError } from '../../lib/error-bodies.js'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifySchemaValidationError } from 'fastify'
import { Type } from '@sinclair/typebox'
import {
  DeleteQuery, Event, EventChange, EventChangeBody, EventList, EventParams, EVENT_LIMITS, RangeQuery,
  type EventApplyTo, type EventChangeBodyInput, type EventChangeInput
} from '../../schemas/event.js'
import { ErrorResponse } from '../../schemas/errors.js'
import { SyncRequestError, SyncUnavailableError } from '../../lib/sync-client.js'
import { mintEventId, normalizeEventId, parseEventAddress } from '../../lib/events/ids.js'
import { toEventRecord, validateEventChange, type EventRecord } from '../../lib/events/record.js'
import { categoryOf, planTransition, type PersistencePlan, type TransitionResult } from '../../lib/events/transition.js'
import { planOccurrenceDelete } from '../../lib/events/apply-to.js'
import { occurrenceAt } from '../../lib/events/range.js'
import { outboxRecordsFor } from '../../lib/events/outbox.js'
import { eventInstant } from '../../lib/events/time.js'
import { compileSeries, hasOccurrenceAt } from '../../lib/events/recurrence.js'

/** A refusal; the app's error handler answers it with the status, code and message. */
class EventRequestError extends TypedHttpError {}

function invalid (path: string, message: string): EventRequestError {
  return new EventRequestError(400, 'EVENT_INVALID', `${path} ${message}`)
}

function notFound (): EventRequestError {
  return new EventRequestError(404, 'EVENT_NOT_FOUND', 'Event not found')
}

function planned (result: TransitionResult): PersistencePlan {
  if (!result.ok) throw new EventRequestError(400, 'EVENT_CHANGE_NOT_ALLOWED', `This change is not allowed: ${result.reason}`)
  return result.plan
}

/**
 * The body is one change or an array of them; ajv reports the mismatch of the other shape too
 * ("must be array" for an object). Only the errors of the shape the client sent are kept.
 */
function bodyErrorMessage (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const relevant = errors.filter((error) => !(error.instancePath === '' && (error.keyword === 'type' || error.keyword === 'anyOf')))
  const shown = relevant.length > 0 ? relevant : [{ instancePath: '', message: 'must be an event change or an array of them' }]
  return new Error(shown.map((error) => `${dataVar}${error.instancePath} ${error.message ?? 'is invalid'}`).join(', '))
}

function isStatusOnly (payload: unknown): payload is { statusCode: number } {
  return typeof payload === 'object' && payload !== null && Object.keys(payload).length === 1 &&
    typeof (payload as { statusCode?: unknown }).statusCode === 'number'
}

export interface Owner { userId: string, now: Date }

/** The stored series an occurrence belongs to, or null when the user has no such series. */
async function findSeries (fastify: FastifyInstance, userId: string, seriesId: string): Promise<EventRecord | null> {
  const series = await fastify.eventStore.findById(userId, seriesId)
  return series !== null && categoryOf(series) === 'base' ? series : null
}

/** What an occurrence id points at: its series, the occurrence as expanded, and its stored edit. */
async function resolveOccurrence (fastify: FastifyInstance, userId: string, seriesId: string, key: string) {
  const series = await findSeries(fastify, userId, seriesId)
  const expanded = series === null ? null : occurrenceAt(series, key)
  if (series === null || expanded === null || expanded.originalStartDate === undefined) return null
  const originalStart = eventInstant(expanded.originalStartDate, series.isAllDay, series.timeZone)
  const edit = await fastify.eventStore.findOccurrenceEdit(userId, seriesId, originalStart)
  return { series, expanded, edit }
}

/**
 * Plans a create-or-update of one change (POST). An occurrence must belong to one of the user's
 * series, at a start the series has; an occurrence that already has a stored edit is that edit.
 */
async function planUpsert (fastify: FastifyInstance, owner: Owner, change: EventChangeInput, path: string, validate: boolean): Promise<{ plan: PersistencePlan, after: EventRecord, before: EventRecord | null }> {
  const issue = validate ? validateEventChange(change) : null
  if (issue !== null) throw invalid(`${path}${issue.path}`, issue.message)
  let after = toEventRecord(change, owner)
  let before = await fastify.eventStore.findById(owner.userId, after._id)
  const seriesId = after.recurrence?.eventId
  if (seriesId !== undefined && after.originalStartDate !== undefined) {
    const series = await findSeries(fastify, owner.userId, seriesId)
    if (series === null) throw invalid(`${path}/recurrence/eventId`, 'must name one of your recurring series')
    const originalStart = eventInstant(after.originalStartDate, after.isAllDay, after.timeZone)
    if (series.isAllDay !== after.isAllDay || !hasOccurrenceAt(compileSeries({ ...series, rule: series.recurrence?.rule ?? [] }), originalStart)) {
      throw invalid(`${path}/originalStartDate`, 'must be the start of an occurrence of the series')
    }
    if (before === null) {
      const edit = await fastify.eventStore.findOccurrenceEdit(owner.userId, seriesId, originalStart)
      if (edit !== null) {
        before = edit
        after = { ...after, _id: edit._id, originalStartDate: edit.originalStartDate }
      }
    }
  }
  return { plan: planned(planTransition(before, after, owner.now)), after, before }
}

/**
 * Decides, before anything is written, whether the provider side refuses the change.
 * - No provider refresh token on the user (`MissingGoogleRefreshToken`): there is no provider
 *   effect to refuse, so the write goes ahead without asking Sync, and an info line says so.
 * - A change to an event of a provider calendar (calendarId set): Sync's metadata says whether
 *   cloud edits are in maintenance (503) or the user's grant is revoked (410).
 * - Sync cannot be asked: the write goes ahead and its report waits in the outbox; a refusal
 *   Sync gives when the report arrives is logged there.
 */
async function checkProviderSide (fastify: FastifyInstance, log: FastifyBaseLogger, userId: string, touched: EventRecord[]): Promise<void> {
  const user = await fastify.users.findById(userId)
  if (user?.google?.gRefreshToken === undefined) {
    log.info({ userId, reason: 'MissingGoogleRefreshToken', events: touched.length }, 'provider effect skipped: the user has no provider refresh token')
    return
  }
  if (!touched.some((event) => event.calendarId !== undefined)) return
  let metadata
  try {
    metadata = await fastify.syncClient.metadata(userId)
  } catch (error) {
    if (error instanceof SyncUnavailableError) {
      log.warn({ userId, reason: error.message }, 'Sync unreachable before a provider calendar write; its report waits in the outbox')
      return
    }
    if (error instanceof SyncRequestError && error.code === 'MAINTENANCE') {
      throw new EventRequestError(503, 'MAINTENANCE', 'Provider calendars are in maintenance; try again later')
    }
    throw error
  }
  if (metadata.cloudMutationMode === 'maintenance') {
    throw new EventRequestError(503, 'MAINTENANCE', 'Provider calendars are in maintenance; try again later')
  }
  const google = metadata.connections.filter((connection) => connection.provider === 'google')
  const revoked = google.find((connection) => connection.reason === 'authorizationRevoked')
  const live = google.some((connection) => connection.state !== 'actionRequired' && connection.state !== 'disconnected')
  if (revoked !== undefined && !live) {
    throw new EventRequestError(410, 'CONNECTION_REVOKED', 'The provider connection was revoked; reconnect it to change this event', { connectionId: revoked.connectionId })
  }
}

/** Checks the provider side, writes own data with the reports, then hands them to the sender. */
async function commit (fastify: FastifyInstance, reply: FastifyReply, owner: Owner, steps: Array<{ plan: PersistencePlan, touched: Array<EventRecord | null> }>): Promise<void> {
  const touched = steps.flatMap((step) => step.touched).filter((event): event is EventRecord => event !== null)
  await checkProviderSide(fastify, reply.log, owner.userId, touched)
  const plans = steps.map((step) => step.plan)
  await fastify.eventStore.apply(owner.userId, plans, outboxRecordsFor(owner.userId, plans, owner.now))
  // The write is complete once its reports are stored; delivery runs on without the client.
  fastify.outbox.kick(owner.userId)
}

/**
 * The whole write of POST /api/event after the session and the body schema: plan every change,
 * check the provider side, write, report.
 * `validate: false` skips the checks beyond the schema too; only bench/event-write.ts uses it,
 * to measure what authentication and validation cost on the same path.
 */
export async function writeChanges (fastify: FastifyInstance, reply: FastifyReply, owner: Owner, body: EventChangeBodyInput, options: { validate: boolean } = { validate: true }): Promise<void> {
  const changes = Array.isArray(body) ? body : [body]
  const prefix = (index: number) => Array.isArray(body) ? `body/${index}` : 'body'
  const seen = new Set<string>()
  const steps = []
  for (const [index, change] of changes.entries()) {
    const step = await planUpsert(fastify, owner, change, prefix(index), options.validate)
    if (seen.has(step.after._id)) throw invalid(`${prefix(index)}/_id`, 'appears twice in one request')
    seen.add(step.after._id)
    steps.push({ plan: step.plan, touched: [step.before, step.after] })
  }
  await commit(fastify, reply, owner, steps)
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

  // 401 is the session library's own answer, in its own shape, so it is not declared here.
  const errors = { 400: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse, 410: ErrorResponse, 503: ErrorResponse }
  // The handler's `{ statusCode: 204 }` never reaches the wire (see the hooks above).
  const empty = { 204: Type.Unsafe<{ statusCode: 204 }>({ description: 'Written: no body and no content type' }) }

  fastify.post('/', {
    schema: {
      description: 'Create or update one event, or many all-or-nothing',
      tags: ['event'],
      body: EventChangeBody,
      response: { ...empty, ...errors }
    },
    schemaErrorFormatter: bodyErrorMessage
  }, async (request, reply) => {
    await writeChanges(fastify, reply, { userId: request.userId, now: new Date() }, request.body)
    return { statusCode: 204 } as const
  })

  fastify.put('/:id', {
    schema: {
      description: 'Update one event, or edit one occurrence of a series (`<seriesId>_<originalStart>`)',
      tags: ['event'],
      params: EventParams,
      body: EventChange,
      response: { ...empty, ...errors }
    }
  }, async (request, reply) => {
    const owner = { userId: request.userId, now: new Date() }
    const { id } = request.params
    const { _id: bodyId, ...fields } = request.body
    if (bodyId !== undefined && bodyId.replace(/^optimistic-/, '') !== id) throw invalid('body/_id', 'must match the id in the path')
    const address = parseEventAddress(id)
    if (address === null) throw notFound()
    let before: EventRecord | null
    let change: EventChangeInput
    if (address.kind === 'stored') {
      change = { ...fields, _id: address.eventId }
      // Bad input is refused as such, whether or not the event exists.
      const issue = validateEventChange(change)
      if (issue !== null) throw invalid(`body${issue.path}`, issue.message)
      before = await fastify.eventStore.findById(owner.userId, address.eventId)
    } else {
      const occurrence = await resolveOccurrence(fastify, owner.userId, address.seriesId, address.occurrenceKey)
      if (occurrence === null) throw notFound()
      const namedSeries = fields.recurrence?.eventId
      if (fields.recurrence?.rule !== undefined || (namedSeries !== undefined && normalizeEventId(namedSeries) !== address.seriesId)) {
        throw invalid('body/recurrence', 'must be the series of the occurrence in the path')
      }
      const { series } = occurrence
      if (fields.originalStartDate !== undefined && fields.originalStartDate !== occurrence.expanded.originalStartDate &&
        eventInstant(fields.originalStartDate, series.isAllDay, series.timeZone).getTime() !==
        eventInstant(occurrence.expanded.originalStartDate as string, series.isAllDay, series.timeZone).getTime()) {
        throw invalid('body/originalStartDate', 'must be the original start of the occurrence in the path')
      }
      before = occurrence.edit
      change = {
        ...fields,
        recurrence: { eventId: address.seriesId },
        originalStartDate: occurrence.edit?.originalStartDate ?? occurrence.expanded.originalStartDate,
        _id: occurrence.edit?._id ?? mintEventId()
      }
    }
    if (before === null ? address.kind === 'stored' : before.status === 'cancelled') throw notFound()
    const issue = validateEventChange(change)
    if (issue !== null) throw invalid(`body${issue.path}`, issue.message)
    const after = toEventRecord(change, owner)
    const plan = planned(planTransition(before, after, owner.now))
    await commit(fastify, reply, owner, [{ plan, touched: [before, after] }])
    return { statusCode: 204 } as const
  })

  fastify.delete('/:id', {
    schema: {
      description: 'Delete one event; for an occurrence of a series, `applyTo` says which occurrences go (default `this`)',
      tags: ['event'],
      params: EventParams,
      querystring: DeleteQuery,
      response: { ...empty, ...errors }
    }
  }, async (request, reply) => {
    const owner = { userId: request.userId, now: new Date() }
    const applyTo: EventApplyTo = request.query.applyTo ?? 'this'
    const address = parseEventAddress(request.params.id)
    if (address === null) throw notFound()
    let result: TransitionResult
    let touched: Array<EventRecord | null>
    if (address.kind === 'stored') {
      const stored = await fastify.eventStore.findById(owner.userId, address.eventId)
      if (stored === null || stored.status === 'cancelled') throw notFound()
      const seriesId = stored.recurrence?.eventId
      const series = seriesId === undefined ? null : await findSeries(fastify, owner.userId, seriesId)
      result = series === null
        ? planTransition(stored, null, owner.now)
        : planOccurrenceDelete(series, { stored, expanded: stored }, applyTo, owner.now)
      touched = [stored, series]
    } else {
      const occurrence = await resolveOccurrence(fastify, owner.userId, address.seriesId, address.occurrenceKey)
      if (occurrence === null || occurrence.edit?.status === 'cancelled') throw notFound()
      const expanded = { ...occurrence.expanded, _id: mintEventId(), lastUpdated: owner.now.toISOString() }
      result = planOccurrenceDelete(occurrence.series, { stored: occurrence.edit, expanded }, applyTo, owner.now)
      touched = [occurrence.series, occurrence.edit]
    }
    await commit(fastify, reply, owner, [{ plan: planned(result), touched }])
    return { statusCode: 204 } as const
  })

  fastify.get('/:id', {
    schema: {
      description: 'One event, or one occurrence of a series',
      tags: ['event'],
      params: EventParams,
      response: { 200: Event, ...errors }
    }
  }, async (request) => {
    const address = parseEventAddress(request.params.id)
    if (address === null) throw notFound()
    if (address.kind === 'stored') {
      const stored = await fastify.eventStore.findById(request.userId, address.eventId)
      if (stored === null || stored.status === 'cancelled') throw notFound()
      return stored
    }
    const occurrence = await resolveOccurrence(fastify, request.userId, address.seriesId, address.occurrenceKey)
    if (occurrence === null || occurrence.edit?.status === 'cancelled') throw notFound()
    return occurrence.edit ?? occurrence.expanded
  })

  fastify.get('/', {
    schema: {
      description: 'Every event and occurrence overlapping [start, end)',
      tags: ['event'],
      querystring: RangeQuery,
      response: { 200: EventList, ...errors }
    }
  }, async (request) => {
    const from = new Date(request.query.start)
    const to = new Date(request.query.end)
    if (Number.isNaN(from.getTime())) throw invalid('querystring/start', 'must be a real date')
    if (Number.isNaN(to.getTime())) throw invalid('querystring/end', 'must be a real date')
    if (to <= from) throw invalid('querystring/end', 'must be after start')
    if (to.getTime() - from.getTime() > EVENT_LIMITS.rangeDays * 86_400_000) {
      throw invalid('querystring/end', `must be at most ${EVENT_LIMITS.rangeDays} days after start`)
    }
    return await fastify.eventStore.findRange(request.userId, from, to)
  })
}

export default eventRoutes
