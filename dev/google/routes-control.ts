// The control surface, under /_control: what tests, benchmarks and the local stack use to act as
// the person and their other devices. Not part of Google; JSON in, JSON out, `{ error }` on refusal.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { CalendarInput } from './calendars.js'
import { ControlError } from './errors.js'
import type { ClientRegistration } from './identity.js'
import { accountsPage } from './pages.js'
import type { AccountSetup, GoogleState, SeedGenerator } from './state.js'

// A 10,000-event seed written out as JSON is a few megabytes.
const SEED_BODY_LIMIT = 64 * 1024 * 1024

const objectBody = (request: FastifyRequest): Record<string, unknown> => {
  const body = request.body
  if (body === undefined || body === null) return {}
  if (typeof body !== 'object' || Array.isArray(body)) throw new ControlError(400, 'a JSON object is required')
  return body as Record<string, unknown>
}

const param = (request: FastifyRequest, name: string): string => ((request.params ?? {}) as Record<string, string>)[name] ?? ''

function calendarInput (value: unknown): CalendarInput {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ControlError(400, 'a calendar is an object')
  const input = value as Record<string, unknown>
  for (const name of ['id', 'summary', 'description', 'timeZone', 'colorId', 'backgroundColor', 'foregroundColor']) {
    if (input[name] !== undefined && typeof input[name] !== 'string') throw new ControlError(400, `calendar ${name} must be a string`)
  }
  for (const name of ['hidden', 'selected']) {
    if (input[name] !== undefined && typeof input[name] !== 'boolean') throw new ControlError(400, `calendar ${name} must be a boolean`)
  }
  return input as CalendarInput
}

export async function controlRoutes (app: FastifyInstance, options: { state: GoogleState }): Promise<void> {
  const { state } = options
  const control = { config: { operation: 'control' } }

  app.get('/', control, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(accountsPage(state.listAccounts(), state.listChannels(), state.origin)))

  app.post('/clients', control, async (request) => {
    const body = objectBody(request)
    const { clientId, clientSecret, redirectUris } = body
    if (typeof clientId !== 'string' || typeof clientSecret !== 'string' || !Array.isArray(redirectUris)) {
      throw new ControlError(400, 'clientId, clientSecret and redirectUris are required')
    }
    return state.registerClient({ clientId, clientSecret, redirectUris } as ClientRegistration)
  })
  app.get('/clients', control, async () => ({ clients: state.identity.listClients() }))

  app.post('/accounts', control, async (request, reply) => {
    const body = objectBody(request)
    if (typeof body['email'] !== 'string') throw new ControlError(400, 'email is required')
    for (const name of ['name', 'picture', 'timeZone']) {
      if (body[name] !== undefined && typeof body[name] !== 'string') throw new ControlError(400, `${name} must be a string`)
    }
    // `email_verified` (the claim's name) is taken as well as `emailVerified`.
    const emailVerified = body['emailVerified'] ?? body['email_verified']
    if (emailVerified !== undefined && typeof emailVerified !== 'boolean') throw new ControlError(400, 'emailVerified must be a boolean')
    if (body['calendars'] !== undefined && !Array.isArray(body['calendars'])) throw new ControlError(400, 'calendars must be an array')
    const setup: AccountSetup = {
      email: body['email'],
      ...(typeof body['name'] === 'string' ? { name: body['name'] } : {}),
      ...(typeof body['picture'] === 'string' ? { picture: body['picture'] } : {}),
      ...(typeof body['timeZone'] === 'string' ? { timeZone: body['timeZone'] } : {}),
      ...(emailVerified === undefined ? {} : { emailVerified: emailVerified as boolean }),
      calendars: ((body['calendars'] ?? []) as unknown[]).map(calendarInput)
    }
    return reply.code(201).send(state.createAccount(setup))
  })
  app.get('/accounts', control, async () => ({ accounts: state.listAccounts() }))
  app.get('/accounts/:email', control, async (request) => state.accountView(state.account(param(request, 'email'))))

  app.post('/accounts/:email/calendars', control, async (request, reply) =>
    reply.code(201).send(state.addCalendar(param(request, 'email'), calendarInput(objectBody(request)))))

  app.post('/accounts/:email/revoke', control, async (request) => {
    const clientId = objectBody(request)['clientId']
    if (clientId !== undefined && typeof clientId !== 'string') throw new ControlError(400, 'clientId must be a string')
    return state.revoke(param(request, 'email'), clientId)
  })
  app.post('/accounts/:email/expire-access-tokens', control, async (request) => state.expireAccessTokens(param(request, 'email')))
  app.post('/accounts/:email/expire-sync-tokens', control, async (request) => state.expireSyncTokens({ email: param(request, 'email') }))

  app.delete('/calendars/:calendarId', control, async (request, reply) => {
    state.deleteCalendar(param(request, 'calendarId'))
    return reply.code(204).send()
  })
  app.post('/calendars/:calendarId/expire-sync-tokens', control, async (request) =>
    state.expireSyncTokens({ calendarId: param(request, 'calendarId') }))

  app.get('/calendars/:calendarId/events', control, async (request) => ({ items: state.storedEvents(param(request, 'calendarId')) }))
  app.post('/calendars/:calendarId/events', control, async (request, reply) =>
    reply.code(201).send(state.insertEvent(param(request, 'calendarId'), request.body)))
  app.patch('/calendars/:calendarId/events/:eventId', control, async (request) =>
    state.patchEvent(param(request, 'calendarId'), param(request, 'eventId'), request.body))
  app.delete('/calendars/:calendarId/events/:eventId', control, async (request) =>
    state.deleteEvent(param(request, 'calendarId'), param(request, 'eventId')))

  app.post('/calendars/:calendarId/seed', { ...control, bodyLimit: SEED_BODY_LIMIT }, async (request) => {
    const body = objectBody(request)
    if (body['events'] !== undefined && !Array.isArray(body['events'])) throw new ControlError(400, 'events must be an array')
    if (body['generate'] !== undefined && (typeof body['generate'] !== 'object' || body['generate'] === null)) {
      throw new ControlError(400, 'generate must be an object')
    }
    return state.seed(param(request, 'calendarId'), {
      ...(body['events'] === undefined ? {} : { events: body['events'] as unknown[] }),
      ...(body['generate'] === undefined ? {} : { generate: body['generate'] as SeedGenerator })
    })
  })

  app.post('/faults', control, async (request, reply) => reply.code(201).send(state.armFault(request.body)))
  app.get('/faults', control, async () => ({ faults: state.faults.list() }))
  app.delete('/faults', control, async (_request, reply) => {
    state.faults.clear()
    return reply.code(204).send()
  })

  app.get('/counters', control, async () => state.counts())
  app.delete('/counters', control, async (_request, reply) => {
    state.resetCounts()
    return reply.code(204).send()
  })

  app.get('/channels', control, async () => ({ channels: state.listChannels() }))
  // Waits until every queued push notification is delivered or given up, so a caller can assert
  // on what its receiver got.
  app.post('/channels/settle', control, async () => {
    await state.channels.settled()
    return { channels: state.listChannels() }
  })
}
