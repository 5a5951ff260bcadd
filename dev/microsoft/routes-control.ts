// The control surface, under /_control: what tests, benchmarks and the local stack use to act as
// the person and their other devices. Not part of Microsoft; JSON in, JSON out, `{ error }` on refusal.
import type { FastifyInstance } from 'fastify'
import { accountAndEventRoutes, accountStrings, calendarFields, CONTROL, commonControlRoutes, deliveryRoutes, objectBody, param } from '../stand-in/control.js'
import type { CalendarInput } from './calendars.js'
import { ControlError } from './errors.js'
import type { AccountKind } from './identity.js'
import { overviewPage } from './pages.js'
import type { AccountSetup, MicrosoftState, SeedGenerator } from './state.js'

function calendarInput (value: unknown): CalendarInput {
  const input = calendarFields(value, { strings: ['name', 'color', 'hexColor'], booleans: ['canEdit'] })
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
  accountAndEventRoutes(app, state, calendarInput)
  deliveryRoutes(app, 'subscriptions', { list: () => state.listSubscriptions(), settled: async () => await state.subscriptions.settled() })

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
    const { email, strings } = accountStrings(body, ['name', 'kind', 'tenantId', 'timeZone'])
    if (body['calendars'] !== undefined && !Array.isArray(body['calendars'])) throw new ControlError(400, 'calendars must be an array')
    const setup: AccountSetup = {
      email,
      ...strings,
      // Any other kind is refused when the account is created.
      ...(strings['kind'] === undefined ? {} : { kind: strings['kind'] as AccountKind }),
      calendars: ((body['calendars'] ?? []) as unknown[]).map(calendarInput)
    }
    return reply.code(201).send(state.createAccount(setup))
  })

  app.post('/accounts/:email/revoke', CONTROL, async (request) => {
    const { clientId, reason } = objectBody(request)
    if (clientId !== undefined && typeof clientId !== 'string') throw new ControlError(400, 'clientId must be a string')
    if (reason !== undefined && reason !== 'sessions' && reason !== 'consent') throw new ControlError(400, 'reason must be sessions or consent')
    return state.revoke(param(request, 'email'), {
      ...(clientId === undefined ? {} : { clientId: clientId as string }),
      ...(reason === undefined ? {} : { reason: reason as 'sessions' | 'consent' })
    })
  })
  app.post('/accounts/:email/expire-refresh-tokens', CONTROL, async (request) => state.expireRefreshTokens(param(request, 'email')))
  app.post('/accounts/:email/expire-delta-tokens', CONTROL, async (request) => state.expireDeltaTokens({ email: param(request, 'email') }))

  app.post('/calendars/:calendarId/expire-delta-tokens', CONTROL, async (request) =>
    state.expireDeltaTokens({ calendarId: param(request, 'calendarId') }))

  app.post('/subscriptions/:subscriptionId/lifecycle', CONTROL, async (request) =>
    state.sendLifecycle(param(request, 'subscriptionId'), objectBody(request)['lifecycleEvent']))
}
