// The control surface, under /_control: what tests, benchmarks and the local stack use to act as
// the person and their other devices. Not part of Microsoft; JSON in, JSON out, `{ error }` on refusal.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { CalendarInput } from './calendars.js'
import { ControlError } from './errors.js'
import type { AccountKind } from './identity.js'
import { overviewPage } from './pages.js'
import type { AccountSetup, MicrosoftState, SeedGenerator } from './state.js'

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
  for (const name of ['name', 'color', 'hexColor']) {
    if (input[name] !== undefined && typeof input[name] !== 'string') throw new ControlError(400, `calendar ${name} must be a string`)
  }
  if (input['canEdit'] !== undefined && typeof input['canEdit'] !== 'boolean') throw new ControlError(400, 'calendar canEdit must be a boolean')
  return {
    ...(typeof input['name'] === 'string' ? { name: input['name'] } : {}),
    ...(typeof input['color'] === 'string' ? { color: input['color'] } : {}),
    ...(typeof input['hexColor'] === 'string' ? { hexColor: input['hexColor'] } : {}),
    ...(typeof input['canEdit'] === 'boolean' ? { canEdit: input['canEdit'] } : {})
  }
}

export async function controlRoutes (app: FastifyInstance, options: { state: MicrosoftState }): Promise<void> {
  const { state } = options
  const control = { config: { operation: 'control' } }

  app.get('/', control, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(overviewPage({
      origin: state.origin,
      accounts: state.listAccounts().map((account) => ({
        email: account.email,
        name: account.name,
        kind: account.kind,
        calendars: account.calendars.map((calendar) => ({ name: calendar.name, events: calendar.items })),
        grants: account.grants
      })),
      subscriptions: state.listSubscriptions()
    })))

  app.post('/clients', control, async (request) => {
    const { clientId, clientSecret, redirectUris } = objectBody(request)
    if (typeof clientId !== 'string' || typeof clientSecret !== 'string' || !Array.isArray(redirectUris)) {
      throw new ControlError(400, 'clientId, clientSecret and redirectUris are required')
    }
    return state.registerClient({ clientId, clientSecret, redirectUris: redirectUris as string[] })
  })
  app.get('/clients', control, async () => ({ clients: state.identity.listClients() }))

  app.post('/accounts', control, async (request, reply) => {
    const body = objectBody(request)
    if (typeof body['email'] !== 'string') throw new ControlError(400, 'email is required')
    for (const name of ['name', 'kind', 'tenantId', 'timeZone']) {
      if (body[name] !== undefined && typeof body[name] !== 'string') throw new ControlError(400, `${name} must be a string`)
    }
    if (body['calendars'] !== undefined && !Array.isArray(body['calendars'])) throw new ControlError(400, 'calendars must be an array')
    const setup: AccountSetup = {
      email: body['email'],
      ...(typeof body['name'] === 'string' ? { name: body['name'] } : {}),
      ...(typeof body['kind'] === 'string' ? { kind: body['kind'] as AccountKind } : {}),
      ...(typeof body['tenantId'] === 'string' ? { tenantId: body['tenantId'] } : {}),
      ...(typeof body['timeZone'] === 'string' ? { timeZone: body['timeZone'] } : {}),
      calendars: ((body['calendars'] ?? []) as unknown[]).map(calendarInput)
    }
    return reply.code(201).send(state.createAccount(setup))
  })
  app.get('/accounts', control, async () => ({ accounts: state.listAccounts() }))
  app.get('/accounts/:email', control, async (request) => state.accountView(state.account(param(request, 'email'))))

  app.post('/accounts/:email/calendars', control, async (request, reply) =>
    reply.code(201).send(state.addCalendar(param(request, 'email'), calendarInput(objectBody(request)))))

  app.post('/accounts/:email/revoke', control, async (request) => {
    const { clientId, reason } = objectBody(request)
    if (clientId !== undefined && typeof clientId !== 'string') throw new ControlError(400, 'clientId must be a string')
    if (reason !== undefined && reason !== 'sessions' && reason !== 'consent') throw new ControlError(400, 'reason must be sessions or consent')
    return state.revoke(param(request, 'email'), {
      ...(clientId === undefined ? {} : { clientId: clientId as string }),
      ...(reason === undefined ? {} : { reason: reason as 'sessions' | 'consent' })
    })
  })
  app.post('/accounts/:email/expire-access-tokens', control, async (request) => state.expireAccessTokens(param(request, 'email')))
  app.post('/accounts/:email/expire-refresh-tokens', control, async (request) => state.expireRefreshTokens(param(request, 'email')))
  app.post('/accounts/:email/expire-delta-tokens', control, async (request) => state.expireDeltaTokens({ email: param(request, 'email') }))

  app.delete('/calendars/:calendarId', control, async (request, reply) => {
    state.deleteCalendar(param(request, 'calendarId'))
    return reply.code(204).send()
  })
  app.post('/calendars/:calendarId/expire-delta-tokens', control, async (request) =>
    state.expireDeltaTokens({ calendarId: param(request, 'calendarId') }))

  app.get('/calendars/:calendarId/events', control, async (request) => ({ items: state.storedEvents(param(request, 'calendarId')) }))
  app.post('/calendars/:calendarId/events', control, async (request, reply) =>
    reply.code(201).send(state.insertEvent(param(request, 'calendarId'), request.body)))
  app.patch('/calendars/:calendarId/events/:eventId', control, async (request) =>
    state.patchEvent(param(request, 'calendarId'), param(request, 'eventId'), request.body))
  app.delete('/calendars/:calendarId/events/:eventId', control, async (request, reply) => {
    state.deleteEvent(param(request, 'calendarId'), param(request, 'eventId'))
    return reply.code(204).send()
  })

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

  app.get('/subscriptions', control, async () => ({ subscriptions: state.listSubscriptions() }))
  app.post('/subscriptions/:subscriptionId/lifecycle', control, async (request) =>
    state.sendLifecycle(param(request, 'subscriptionId'), objectBody(request)['lifecycleEvent']))
  // Waits until every queued notification is delivered or given up, so a caller can assert on
  // what its receiver got.
  app.post('/subscriptions/settle', control, async () => {
    await state.subscriptions.settled()
    return { subscriptions: state.listSubscriptions() }
  })
}
