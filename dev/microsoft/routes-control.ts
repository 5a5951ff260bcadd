// The control surface, under /_control: what tests, benchmarks and the local stack use to act as
// the person and their other devices. Not part of Microsoft; JSON in, JSON out, `{ error }` on refusal.
import type { FastifyInstance } from 'fastify'
import { CONTROL, commonControlRoutes, objectBody, param } from '../stand-in/control.js'
import type { CalendarInput } from './calendars.js'
import { ControlError } from './errors.js'
import type { AccountKind } from './identity.js'
import { overviewPage } from './pages.js'
import type { AccountSetup, MicrosoftState, SeedGenerator } from './state.js'

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
  commonControlRoutes<SeedGenerator>(app, state)

  app.get('/', CONTROL, async (_request, reply) =>
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

  app.post('/accounts', CONTROL, async (request, reply) => {
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
  app.get('/accounts', CONTROL, async () => ({ accounts: state.listAccounts() }))
  app.get('/accounts/:email', CONTROL, async (request) => state.accountView(state.account(param(request, 'email'))))

  app.post('/accounts/:email/calendars', CONTROL, async (request, reply) =>
    reply.code(201).send(state.addCalendar(param(request, 'email'), calendarInput(objectBody(request)))))

  app.post('/accounts/:email/revoke', CONTROL, async (request) => {
    const { clientId, reason } = objectBody(request)
    if (clientId !== undefined && typeof clientId !== 'string') throw new ControlError(400, 'clientId must be a string')
    if (reason !== undefined && reason !== 'sessions' && reason !== 'consent') throw new ControlError(400, 'reason must be sessions or consent')
    return state.revoke(param(request, 'email'), {
      ...(clientId === undefined ? {} : { clientId: clientId as string }),
      ...(reason === undefined ? {} : { reason: reason as 'sessions' | 'consent' })
    })
  })
  app.post('/accounts/:email/expire-access-tokens', CONTROL, async (request) => state.expireAccessTokens(param(request, 'email')))
  app.post('/accounts/:email/expire-refresh-tokens', CONTROL, async (request) => state.expireRefreshTokens(param(request, 'email')))
  app.post('/accounts/:email/expire-delta-tokens', CONTROL, async (request) => state.expireDeltaTokens({ email: param(request, 'email') }))

  app.delete('/calendars/:calendarId', CONTROL, async (request, reply) => {
    state.deleteCalendar(param(request, 'calendarId'))
    return reply.code(204).send()
  })
  app.post('/calendars/:calendarId/expire-delta-tokens', CONTROL, async (request) =>
    state.expireDeltaTokens({ calendarId: param(request, 'calendarId') }))

  app.get('/calendars/:calendarId/events', CONTROL, async (request) => ({ items: state.storedEvents(param(request, 'calendarId')) }))
  app.post('/calendars/:calendarId/events', CONTROL, async (request, reply) =>
    reply.code(201).send(state.insertEvent(param(request, 'calendarId'), request.body)))
  app.patch('/calendars/:calendarId/events/:eventId', CONTROL, async (request) =>
    state.patchEvent(param(request, 'calendarId'), param(request, 'eventId'), request.body))
  app.delete('/calendars/:calendarId/events/:eventId', CONTROL, async (request, reply) => {
    state.deleteEvent(param(request, 'calendarId'), param(request, 'eventId'))
    return reply.code(204).send()
  })

  app.get('/subscriptions', CONTROL, async () => ({ subscriptions: state.listSubscriptions() }))
  app.post('/subscriptions/:subscriptionId/lifecycle', CONTROL, async (request) =>
    state.sendLifecycle(param(request, 'subscriptionId'), objectBody(request)['lifecycleEvent']))
  // Waits until every queued notification is delivered or given up, so a caller can assert on
  // what its receiver got.
  app.post('/subscriptions/settle', CONTROL, async () => {
    await state.subscriptions.settled()
    return { subscriptions: state.listSubscriptions() }
  })
}
