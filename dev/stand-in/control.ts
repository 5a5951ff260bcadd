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

interface SeedInput<G> {
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

/**
 * A new account's body: `email` and the provider's optional string fields, checked in that order;
 * answers the strings given. Other fields (and `calendars`) are the provider's to read.
 */
export function accountStrings (body: Record<string, unknown>, optional: readonly string[]): { email: string, strings: Record<string, string> } {
  const email = body['email']
  if (typeof email !== 'string') throw new ControlError(400, 'email is required')
  const strings: Record<string, string> = {}
  for (const name of optional) {
    const value = body[name]
    if (value === undefined) continue
    if (typeof value !== 'string') throw new ControlError(400, `${name} must be a string`)
    strings[name] = value
  }
  return { email, strings }
}

/** What the account, calendar and event routes need of a stand-in's state. */
export interface AccountsAndEventsState<Account, CalendarInput> {
  listAccounts (): unknown[]
  account (email: string): Account
  accountView (account: Account): unknown
  addCalendar (email: string, input: CalendarInput): unknown
  expireAccessTokens (email: string): unknown
  deleteCalendar (calendarId: string): void
  storedEvents (calendarId: string): unknown[]
  insertEvent (calendarId: string, body: unknown): unknown
  patchEvent (calendarId: string, eventId: string, body: unknown): unknown
  /** Google answers the cancelled event; Graph answers nothing (204). */
  deleteEvent (calendarId: string, eventId: string): unknown
}

/** Accounts, their calendars and other devices' event writes: the same paths on every stand-in. */
export function accountAndEventRoutes<Account, CalendarInput> (
  app: FastifyInstance,
  state: AccountsAndEventsState<Account, CalendarInput>,
  readCalendarInput: (value: unknown) => CalendarInput
): void {
  app.get('/accounts', CONTROL, async () => ({ accounts: state.listAccounts() }))
  app.get('/accounts/:email', CONTROL, async (request) => state.accountView(state.account(param(request, 'email'))))
  app.post('/accounts/:email/calendars', CONTROL, async (request, reply) =>
    reply.code(201).send(state.addCalendar(param(request, 'email'), readCalendarInput(objectBody(request)))))
  app.post('/accounts/:email/expire-access-tokens', CONTROL, async (request) => state.expireAccessTokens(param(request, 'email')))

  app.delete('/calendars/:calendarId', CONTROL, async (request, reply) => {
    state.deleteCalendar(param(request, 'calendarId'))
    return reply.code(204).send()
  })
  app.get('/calendars/:calendarId/events', CONTROL, async (request) => ({ items: state.storedEvents(param(request, 'calendarId')) }))
  app.post('/calendars/:calendarId/events', CONTROL, async (request, reply) =>
    reply.code(201).send(state.insertEvent(param(request, 'calendarId'), request.body)))
  app.patch('/calendars/:calendarId/events/:eventId', CONTROL, async (request) =>
    state.patchEvent(param(request, 'calendarId'), param(request, 'eventId'), request.body))
  app.delete('/calendars/:calendarId/events/:eventId', CONTROL, async (request, reply) => {
    const deleted = state.deleteEvent(param(request, 'calendarId'), param(request, 'eventId'))
    return deleted === undefined ? reply.code(204).send() : deleted
  })
}

/**
 * The notification deliveries (`channels` at Google, `subscriptions` at Microsoft) and a wait until
 * every queued one is delivered or given up, so a caller can assert on what its receiver got.
 */
export function deliveryRoutes (app: FastifyInstance, name: string, delivery: { list: () => unknown[], settled: () => Promise<void> }): void {
  app.get(`/${name}`, CONTROL, async () => ({ [name]: delivery.list() }))
  app.post(`/${name}/settle`, CONTROL, async () => {
    await delivery.settled()
    return { [name]: delivery.list() }
  })
}

/**
 * A calendar to add, as a JSON object whose optional fields, where given, have the types named
 * (strings first, then booleans); which fields there are is the provider's.
 */
export function calendarFields (value: unknown, types: { strings: readonly string[], booleans: readonly string[] }): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ControlError(400, 'a calendar is an object')
  const input = value as Record<string, unknown>
  for (const name of types.strings) {
    if (input[name] !== undefined && typeof input[name] !== 'string') throw new ControlError(400, `calendar ${name} must be a string`)
  }
  for (const name of types.booleans) {
    if (input[name] !== undefined && typeof input[name] !== 'boolean') throw new ControlError(400, `calendar ${name} must be a boolean`)
  }
  return input
}
