// What only the stand-in has: faults on demand, counters, its control surface, its start options,
// its CLI, its zone table, and logs without secrets.
import { Writable } from 'node:stream'
import { test } from 'tap'
import { IANAZone } from 'luxon'
import { startMicrosoft, windowsZones } from '../../../dev/microsoft/index.js'
import { freePort } from '../../ports.js'
import { startScript, waitFor } from '../../processes.js'
import { CLIENT, REDIRECT_URI, connect, control, defaultCalendarId, graph, startReceiver, startStandIn, tokenRequest } from './harness.js'

const ALICE = 'alice@example.com'
const HOUR = { start: { dateTime: '2030-05-02T09:00:00', timeZone: 'UTC' }, end: { dateTime: '2030-05-02T10:00:00', timeZone: 'UTC' } }

test('armed faults: 429 with Retry-After (and 503) on Graph and the token endpoint; counters count every call', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const { tokens } = await connect(microsoft, ALICE)
  const list = async (): Promise<Awaited<ReturnType<typeof graph>>> => await graph(microsoft, tokens.access_token, 'GET', '/me/calendar/events')
  t.equal((await control(microsoft, 'DELETE', '/counters')).status, 204)

  t.equal((await control(microsoft, 'POST', '/faults', { pathPrefix: '/v1.0/me/calendar/', method: 'GET', status: 429, count: 2, retryAfterSec: 7 })).status, 201)
  const limited = await list()
  t.equal(limited.status, 429)
  t.equal(limited.headers.get('retry-after'), '7')
  t.match(limited.body, { error: { code: 'TooManyRequests', message: String, innerError: { 'request-id': String, date: String } } })
  t.equal((await list()).status, 429)
  t.equal((await list()).status, 200, 'used up after count requests')
  await control(microsoft, 'POST', '/faults', { pathPrefix: '/v1.0/', status: 503, retryAfterSec: 2 })
  const unavailable = await list()
  t.match(unavailable, { status: 503, body: { error: { code: 'serviceNotAvailable' } } })
  t.equal(unavailable.headers.get('retry-after'), '2')
  await control(microsoft, 'POST', '/faults', { pathPrefix: '/common/oauth2/v2.0/token', status: 429, retryAfterSec: 1 })
  const token = await tokenRequest(microsoft, { grant_type: 'refresh_token', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, refresh_token: tokens.refresh_token })
  t.match(token, { status: 429, body: { error: 'temporarily_unavailable', error_codes: [90055] } })
  t.equal(token.headers.get('retry-after'), '1')

  t.same((await control(microsoft, 'GET', '/faults')).body, { faults: [] })
  t.equal((await control(microsoft, 'POST', '/faults', { pathPrefix: '/_control/counters', status: 500 })).status, 400, 'the control surface cannot be faulted')
  t.equal((await control(microsoft, 'POST', '/faults', { pathPrefix: '/v1.0/', status: 418 })).status, 400)
  const counts = (await control<{ operations: Record<string, { total: number, statuses: Record<string, number> }> }>(microsoft, 'GET', '/counters')).body.operations
  t.same(counts['event.list'], { total: 4, statuses: { 200: 1, 429: 2, 503: 1 } })
  t.same(counts['oauth2.token'], { total: 1, statuses: { 429: 1 } })
})

test('control: accounts of both kinds, calendars, events as another device, bulk seed, what is stored', async (t) => {
  const microsoft = await startStandIn(t)
  const personal = await control<{ id: string, oid: string, tenantId: string, kind: string, timeZone: string, calendars: Array<{ id: string, name: string }> }>(microsoft, 'POST', '/accounts', {
    email: 'Dora@Example.com', name: 'Dora D', timeZone: 'America/New_York', calendars: [{ name: 'Side', canEdit: false }]
  })
  t.equal(personal.status, 201)
  t.match(personal.body, { email: 'dora@example.com', kind: 'personal', tenantId: '9188040d-6c67-4c5b-b112-36a304b66dad', timeZone: 'Eastern Standard Time', calendars: [{ name: 'Calendar', isDefaultCalendar: true }, { name: 'Side', canEdit: false }] })
  const work = await control<{ tenantId: string, kind: string }>(microsoft, 'POST', '/accounts', { email: 'erin@contoso.example', kind: 'work' })
  const colleague = await control<{ tenantId: string }>(microsoft, 'POST', '/accounts', { email: 'finn@contoso.example', kind: 'work' })
  t.equal(work.body.tenantId, colleague.body.tenantId, 'one tenant per domain')
  t.equal((await control(microsoft, 'POST', '/accounts', { email: 'dora@example.com' })).status, 409)
  t.equal((await control(microsoft, 'POST', '/accounts', { email: 'x@example.com', timeZone: 'Mars Standard Time' })).status, 400)
  t.equal((await control(microsoft, 'POST', '/accounts/dora@example.com/calendars', { name: 'Side' })).status, 409)
  const calendarId = personal.body.calendars[0]?.id ?? ''

  const inserted = await control<{ id: string }>(microsoft, 'POST', `/calendars/${calendarId}/events`, { subject: 'Phone call', ...HOUR })
  t.equal(inserted.status, 201)
  t.match((await control(microsoft, 'POST', `/calendars/${calendarId}/events`, { subject: 'No end', start: HOUR.start })).body, { error: /ErrorPropertyValidationFailure/ })
  const series = await control<{ id: string }>(microsoft, 'POST', `/calendars/${calendarId}/events`, {
    subject: 'Daily', ...HOUR, recurrence: { pattern: { type: 'daily', interval: 1 }, range: { type: 'numbered', startDate: '2030-05-02', numberOfOccurrences: 3 } }
  })
  const { tokens } = await connect(microsoft, 'dora@example.com', { scope: 'openid Calendars.ReadWrite' })
  const occurrences = (await graph(microsoft, tokens.access_token, 'GET', `/me/events/${series.body.id}/instances?startDateTime=2030-05-01T00:00:00Z&endDateTime=2030-05-10T00:00:00Z`)).body['value'] as Array<{ id: string }>
  t.equal((await control(microsoft, 'PATCH', `/calendars/${calendarId}/events/${occurrences[1]?.id ?? ''}`, { subject: 'Daily (changed)' })).status, 200)
  t.equal((await control(microsoft, 'DELETE', `/calendars/${calendarId}/events/${occurrences[2]?.id ?? ''}`)).status, 204)
  t.equal((await control(microsoft, 'DELETE', `/calendars/${calendarId}/events/${inserted.body.id}`)).status, 204)
  t.equal((await control(microsoft, 'DELETE', `/calendars/${calendarId}/events/${inserted.body.id}`)).status, 404)
  const seeded = await control<{ inserted: number, singles: number, series: number, exceptions: number }>(microsoft, 'POST', `/calendars/${calendarId}/seed`, {
    events: [{ subject: 'Given', ...HOUR }], generate: { singles: 5, series: 2, exceptions: 3 }
  })
  t.match(seeded.body, { inserted: 8, singles: 5, series: 2, exceptions: 3 })

  const stored = (await control<{ items: Array<Record<string, unknown>> }>(microsoft, 'GET', `/calendars/${calendarId}/events`)).body.items
  t.equal(stored.length, 10)
  t.match(stored[0], { id: inserted.body.id, deleted: true, createdBy: 'control', subject: 'Phone call' })
  t.match(stored[1], {
    id: series.body.id,
    type: 'seriesMaster',
    deleted: false,
    exceptions: [
      { originalStart: '2030-05-03T09:00:00Z', cancelled: false, type: 'exception', subject: 'Daily (changed)', lastModifiedBy: 'control' },
      { originalStart: '2030-05-04T09:00:00Z', cancelled: true, id: occurrences[2]?.id }
    ]
  })
  t.match((await control(microsoft, 'GET', '/accounts/dora@example.com')).body, { calendars: [{ name: 'Calendar', items: 9 }, { name: 'Side', items: 0 }], grants: [{ clientId: CLIENT.clientId, refreshTokens: 0 }] })
  t.match(await (await fetch(`${microsoft.url}/_control/`)).text(), /dora@example.com/)
  t.equal((await control(microsoft, 'GET', '/accounts/nobody@example.com')).status, 404)
  t.equal((await control(microsoft, 'GET', '/nowhere')).status, 404)
  t.equal((await control(microsoft, 'POST', '/clients', { clientId: 'other', clientSecret: 's', redirectUris: ['http://127.0.0.1:1/cb'] })).status, 200)
  t.match((await control(microsoft, 'GET', '/clients')).body, { clients: [{ clientId: CLIENT.clientId }, { clientId: 'other' }] })

  // A deleted calendar takes its subscriptions with it (subscriptionRemoved).
  const side = personal.body.calendars[1]?.id ?? ''
  const receiver = await startReceiver(t)
  const subscription = await graph(microsoft, tokens.access_token, 'POST', '/subscriptions', {
    changeType: 'created', notificationUrl: receiver.url, lifecycleNotificationUrl: receiver.url, resource: `me/calendars/${side}/events`, expirationDateTime: new Date(Date.now() + 3_600_000).toISOString()
  })
  t.equal(subscription.status, 201)
  t.equal((await control(microsoft, 'DELETE', `/calendars/${side}`)).status, 204)
  await microsoft.notificationsSettled()
  t.match(receiver.items(), [{ lifecycleEvent: 'subscriptionRemoved', subscriptionId: subscription.body['id'] }])
  t.equal((await control(microsoft, 'DELETE', `/calendars/${calendarId}`)).status, 400, 'the default calendar stays')
})

test('every Windows zone of the table names a zone this machine knows', async (t) => {
  const zones = windowsZones()
  t.ok(zones.length > 130)
  const unknown = zones.filter(([, iana]) => !IANAZone.isValidZone(iana))
  t.same(unknown, [])
})

test('binds 127.0.0.1, takes its lifetimes from its options, keeps tokens and secrets out of logs', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'))
      done()
    }
  })
  const microsoft = await startMicrosoft({ clients: [CLIENT], accounts: [{ email: ALICE }], accessTokenLifetimeSec: 120, logger: { level: 'trace', stream } })
  t.teardown(() => microsoft.close())
  t.match(microsoft.url, /^http:\/\/127\.0\.0\.1:\d+$/)
  const { tokens, redirect } = await connect(microsoft, ALICE)
  t.equal(tokens.expires_in, 120)
  await graph(microsoft, tokens.access_token, 'GET', '/me')
  await fetch(`${microsoft.url}/common/oauth2/v2.0/token?refresh_token=${tokens.refresh_token}&client_secret=${CLIENT.clientSecret}`, { method: 'POST' })
  await tokenRequest(microsoft, { grant_type: 'authorization_code', code: 'x', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, redirect_uri: REDIRECT_URI })
  const logged = lines.join('')
  t.match(logged, /refresh_token=%5Bredacted%5D/, 'requests are logged, with secrets redacted')
  for (const secret of [tokens.access_token, tokens.refresh_token, tokens.id_token, CLIENT.clientSecret, redirect.location.searchParams.get('code')]) {
    t.notOk(logged.includes(String(secret)), 'no token, code or secret in the log')
  }
})

test('the CLI starts on the given port with clients and accounts, and prints where', async (t) => {
  const port = await freePort()
  const cli = startScript(t, 'dev/microsoft/cli.ts', ['--port', String(port), '--client', `${CLIENT.clientId}:${CLIENT.clientSecret}:${REDIRECT_URI}`, '--account', `${ALICE}:Alice Example`, '--work-account', 'bob@contoso.example'])
  t.ok(await waitFor(() => cli.stdout().includes('microsoft stand-in listening on'), 15000, () => cli.child.exitCode !== null), cli.output())
  t.match(cli.stdout(), `microsoft stand-in listening on http://127.0.0.1:${port}`)
  const accounts = await (await fetch(`http://127.0.0.1:${port}/_control/accounts`)).json() as { accounts: Array<{ email: string, name: string, kind: string }> }
  t.match(accounts.accounts, [{ email: ALICE, name: 'Alice Example', kind: 'personal' }, { email: 'bob@contoso.example', kind: 'work' }])
  const calendarId = (await (await fetch(`http://127.0.0.1:${port}/_control/accounts/${ALICE}`)).json() as { calendars: Array<{ id: string }> }).calendars[0]?.id
  t.match(calendarId, /^AAMkA/)
  cli.child.kill('SIGTERM')
  t.equal(await cli.exited, 0)

  const bad = startScript(t, 'dev/microsoft/cli.ts', ['--client', 'no-secret'])
  t.equal(await bad.exited, 1)
  t.match(bad.stderr(), /--client must be/)
})

test('a calendar\'s id is stable across the control surface and Graph', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const { tokens } = await connect(microsoft, ALICE)
  const viaGraph = (await graph(microsoft, tokens.access_token, 'GET', '/me/calendar')).body['id']
  t.equal(viaGraph, await defaultCalendarId(microsoft, ALICE))
})
