// The control surface, under /_control: what tests, benchmarks and the local stack use to act as
// the person and their other devices. Not part of Google; JSON in, JSON out, `{ error }` on refusal.
import type { FastifyInstance } from 'fastify'
import { accountAndEventRoutes, accountStrings, calendarFields, CONTROL, commonControlRoutes, deliveryRoutes, objectBody, param } from '../stand-in/control.js'
import type { CalendarInput } from './calendars.js'
import { ControlError } from './errors.js'
import { accountsPage } from './pages.js'
import type { AccountSetup, GoogleState, SeedGenerator } from './state.js'

function calendarInput (value: unknown): CalendarInput {
  return calendarFields(value, {
    strings: ['id', 'summary', 'description', 'timeZone', 'colorId', 'backgroundColor', 'foregroundColor', 'accessRole'],
    booleans: ['hidden', 'selected']
  }) as CalendarInput
}

export async function controlRoutes (app: FastifyInstance, options: { state: GoogleState }): Promise<void> {
  const { state } = options
  commonControlRoutes<SeedGenerator>(app, state)
  accountAndEventRoutes(app, state, calendarInput)
  deliveryRoutes(app, 'channels', { list: () => state.listChannels(), settled: async () => await state.channels.settled() })

  app.get('/', CONTROL, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(accountsPage(state.listAccounts(), state.listChannels(), state.origin)))

  app.post('/accounts', CONTROL, async (request, reply) => {
    const body = objectBody(request)
    const { email, strings } = accountStrings(body, ['name', 'picture', 'timeZone'])
    // `email_verified` (the claim's name) is taken as well as `emailVerified`.
    const emailVerified = body['emailVerified'] ?? body['email_verified']
    if (emailVerified !== undefined && typeof emailVerified !== 'boolean') throw new ControlError(400, 'emailVerified must be a boolean')
    if (body['calendars'] !== undefined && !Array.isArray(body['calendars'])) throw new ControlError(400, 'calendars must be an array')
    const setup: AccountSetup = {
      email,
      ...strings,
      ...(emailVerified === undefined ? {} : { emailVerified: emailVerified as boolean }),
      calendars: ((body['calendars'] ?? []) as unknown[]).map(calendarInput)
    }
    return reply.code(201).send(state.createAccount(setup))
  })

  app.post('/accounts/:email/revoke', CONTROL, async (request) => {
    const clientId = objectBody(request)['clientId']
    if (clientId !== undefined && typeof clientId !== 'string') throw new ControlError(400, 'clientId must be a string')
    return state.revoke(param(request, 'email'), clientId)
  })
  app.post('/accounts/:email/expire-sync-tokens', CONTROL, async (request) => state.expireSyncTokens({ email: param(request, 'email') }))

  app.put('/calendars/:calendarId/default-reminders', CONTROL, async (request) =>
    state.setDefaultReminders(param(request, 'calendarId'), objectBody(request)['defaultReminders']))

  app.post('/calendars/:calendarId/expire-sync-tokens', CONTROL, async (request) =>
    state.expireSyncTokens({ calendarId: param(request, 'calendarId') }))
}
