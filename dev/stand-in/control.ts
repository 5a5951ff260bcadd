// The part of a stand-in's control surface (under /_control) that does not depend on the provider:
// `{ error }` refusals, client registration, seeding, armed faults and request counters.
import type { FastifyInstance, FastifyRequest } from 'fastify'

/** A control-surface refusal: `{ error: message }`. */
export class ControlError extends Error {
  constructor (readonly statusCode: number, message: string) {
    super(message)
  }
}

// A 10,000-event seed written out as JSON is a few megabytes.
const SEED_BODY_LIMIT = 64 * 1024 * 1024

/** The request's JSON object; an absent body reads as an empty one. */
export const objectBody = (request: FastifyRequest): Record<string, unknown> => {
  const body = request.body
  if (body === undefined || body === null) return {}
  if (typeof body !== 'object' || Array.isArray(body)) throw new ControlError(400, 'a JSON object is required')
  return body as Record<string, unknown>
}

export const param = (request: FastifyRequest, name: string): string => ((request.params ?? {}) as Record<string, string>)[name] ?? ''

export interface SeedInput<G> {
  events?: unknown[]
  generate?: G
}

/** What the common control routes need of a stand-in's state. */
export interface ControlledState<G> {
  registerClient (registration: { clientId: string, clientSecret: string, redirectUris: string[] }): unknown
  identity: { listClients (): unknown[] }
  seed (calendarId: string, input: SeedInput<G>): unknown
  armFault (body: unknown): unknown
  faults: { list (): unknown[], clear (): void }
  counts (): unknown
  resetCounts (): void
}

export const CONTROL = { config: { operation: 'control' } }

/** Clients, seeding, faults and counters: the same paths and bodies on every stand-in. */
export function commonControlRoutes<G> (app: FastifyInstance, state: ControlledState<G>): void {
  app.post('/clients', CONTROL, async (request) => {
    const { clientId, clientSecret, redirectUris } = objectBody(request)
    if (typeof clientId !== 'string' || typeof clientSecret !== 'string' || !Array.isArray(redirectUris)) {
      throw new ControlError(400, 'clientId, clientSecret and redirectUris are required')
    }
    return state.registerClient({ clientId, clientSecret, redirectUris: redirectUris as string[] })
  })
  app.get('/clients', CONTROL, async () => ({ clients: state.identity.listClients() }))

  app.post('/calendars/:calendarId/seed', { ...CONTROL, bodyLimit: SEED_BODY_LIMIT }, async (request) => {
    const body = objectBody(request)
    if (body['events'] !== undefined && !Array.isArray(body['events'])) throw new ControlError(400, 'events must be an array')
    if (body['generate'] !== undefined && (typeof body['generate'] !== 'object' || body['generate'] === null)) {
      throw new ControlError(400, 'generate must be an object')
    }
    return state.seed(param(request, 'calendarId'), {
      ...(body['events'] === undefined ? {} : { events: body['events'] as unknown[] }),
      ...(body['generate'] === undefined ? {} : { generate: body['generate'] as G })
    })
  })

  app.post('/faults', CONTROL, async (request, reply) => reply.code(201).send(state.armFault(request.body)))
  app.get('/faults', CONTROL, async () => ({ faults: state.faults.list() }))
  app.delete('/faults', CONTROL, async (_request, reply) => {
    state.faults.clear()
    return reply.code(204).send()
  })

  app.get('/counters', CONTROL, async () => state.counts())
  app.delete('/counters', CONTROL, async (_request, reply) => {
    state.resetCounts()
    return reply.code(204).send()
  })
}
