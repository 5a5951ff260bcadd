// What only the stand-in has: its control surface (faults, counters, stored data), its start
// options, its CLI, the production refusal, and logs without secrets.
import { Writable } from 'node:stream'
import { test } from 'tap'
import { calendar } from '@googleapis/calendar'
import { startGoogle } from '../../../dev/google/index.js'
import { freePort } from '../../ports.js'
import { startScript, waitFor } from '../../processes.js'
import { CALENDAR_SCOPE, CLIENT, REDIRECT_URI, connect, control, startReceiver, startStandIn } from './harness.js'

const ALICE = 'alice@example.com'
const EVENT = { start: { dateTime: '2030-05-02T08:00:00Z' }, end: { dateTime: '2030-05-02T09:00:00Z' } }

test('armed faults: the next N matching requests answer 429 or 403 rate limits, 500 or 503; counters count every call', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const { tokens, client } = await connect(google, ALICE, [CALENDAR_SCOPE])
  const list = async (): Promise<Response> =>
    await fetch(`${google.url}/calendar/v3/calendars/primary/events`, { headers: { authorization: `Bearer ${tokens.access_token ?? ''}` } })
  t.equal((await control(google, 'DELETE', '/counters')).status, 204)

  t.equal((await control(google, 'POST', '/faults', { pathPrefix: '/calendar/v3/calendars/', method: 'GET', status: 429, count: 2, retryAfterSec: 1 })).status, 201)
  const limited = await list()
  t.equal(limited.status, 429)
  t.equal(limited.headers.get('retry-after'), '1')
  t.same(await limited.json(), {
    error: { code: 429, message: 'Rate Limit Exceeded', errors: [{ domain: 'usageLimits', reason: 'rateLimitExceeded', message: 'Rate Limit Exceeded' }] }
  })
  t.equal((await list()).status, 429)
  t.equal((await list()).status, 200, 'used up after count requests')

  await control(google, 'POST', '/faults', { pathPrefix: '/calendar/v3/', status: 403, reason: 'userRateLimitExceeded' })
  t.match(await (await list()).json(), { error: { code: 403, errors: [{ domain: 'usageLimits', reason: 'userRateLimitExceeded', message: 'User Rate Limit Exceeded' }] } })
  await control(google, 'POST', '/faults', { pathPrefix: '/calendar/v3/', status: 403 })
  t.match(await (await list()).json(), { error: { code: 403, errors: [{ reason: 'rateLimitExceeded' }] } })
  await control(google, 'POST', '/faults', { pathPrefix: '/calendar/v3/', status: 503 })
  t.match(await (await list()).json(), { error: { code: 503, errors: [{ reason: 'backendError' }] } })
  await control(google, 'POST', '/faults', { pathPrefix: '/token', status: 500 })
  const token = await fetch(`${google.url}/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token' }) })
  t.equal(token.status, 500)

  // Google's client retries a 429 by itself: one call, two requests.
  await control(google, 'POST', '/faults', { pathPrefix: '/calendar/v3/calendars/', status: 429 })
  const api = calendar({ version: 'v3', rootUrl: google.rootUrl, auth: client })
  t.equal((await api.events.list({ calendarId: 'primary' })).status, 200)

  t.same((await control(google, 'GET', '/faults')).body, { faults: [] })
  t.equal((await control(google, 'POST', '/faults', { pathPrefix: '/_control/counters', status: 500 })).status, 400, 'the control surface cannot be faulted')
  const counts = (await control<{ operations: Record<string, { total: number, statuses: Record<string, number> }> }>(google, 'GET', '/counters')).body.operations
  t.same(counts['calendar.events.list'], { total: 8, statuses: { 200: 2, 403: 2, 429: 3, 503: 1 } })
  t.match(counts['oauth2.token'], { total: 1, statuses: { 500: 1 } })
})

test('counters show how many list calls a burst of changes caused', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const receiver = await startReceiver(t)
  const { client } = await connect(google, ALICE, [CALENDAR_SCOPE])
  const api = calendar({ version: 'v3', rootUrl: google.rootUrl, auth: client })
  const first = await api.events.list({ calendarId: 'primary' })
  let syncToken = first.data.nextSyncToken ?? ''
  await api.events.watch({ calendarId: 'primary', requestBody: { id: 'burst', type: 'web_hook', address: receiver.url } })
  await receiver.waitForMessages(1)
  await control(google, 'DELETE', '/counters')
  for (let i = 0; i < 5; i++) await control(google, 'POST', `/calendars/${ALICE}/events`, { summary: `Burst ${i}`, ...EVENT })
  await google.notificationsSettled()
  // A naive receiver: one incremental list per notification.
  let seen = 0
  for (const message of receiver.messages.filter((m) => m.headers['x-goog-resource-state'] === 'exists')) {
    t.ok(message)
    const { data } = await api.events.list({ calendarId: 'primary', syncToken })
    seen += data.items?.length ?? 0
    syncToken = data.nextSyncToken ?? syncToken
  }
  t.equal(seen, 5)
  const counts = (await control<{ operations: Record<string, { total: number }>, notifications: Record<string, number> }>(google, 'GET', '/counters')).body
  t.equal(counts.operations['calendar.events.list']?.total, 5)
  t.equal(counts.notifications['exists'], 5)
})

test('control: accounts with calendars, events as another device, bulk seed, stored data with deletions', async (t) => {
  const google = await startStandIn(t)
  const created = await control<{ sub: string, calendars: Array<{ id: string, primary: boolean, hidden: boolean }> }>(google, 'POST', '/accounts', {
    email: 'Dora@Example.com', name: 'Dora D', email_verified: false, timeZone: 'America/New_York', calendars: [{ summary: 'Side', hidden: true }]
  })
  t.equal(created.status, 201)
  t.match(created.body, { email: 'dora@example.com', emailVerified: false, calendars: [{ id: 'dora@example.com', primary: true }, { primary: false, hidden: true }] })
  t.equal((await control(google, 'POST', '/accounts', { email: 'dora@example.com' })).status, 409)
  t.equal((await control(google, 'POST', '/accounts', { email: 'x@example.com', timeZone: 'Mars/Olympus' })).status, 400)
  const calendarId = 'dora@example.com'

  const inserted = await control<{ id: string }>(google, 'POST', `/calendars/${calendarId}/events`, { summary: 'Phone call', ...EVENT })
  t.equal(inserted.status, 201)
  t.equal((await control(google, 'POST', `/calendars/${calendarId}/events`, { summary: 'No end', start: EVENT.start })).status, 400)
  const seeded = await control<{ inserted: number }>(google, 'POST', `/calendars/${calendarId}/seed`, {
    events: [{ id: 'seededone', summary: 'One', ...EVENT }, { summary: 'Two', start: { date: '2030-01-01' }, end: { date: '2030-01-02' } }]
  })
  t.same(seeded.body.inserted, 2)
  t.equal((await control(google, 'POST', `/calendars/${calendarId}/seed`, { events: [{ id: 'seededone', ...EVENT }] })).status, 409)
  await control(google, 'DELETE', `/calendars/${calendarId}/events/${inserted.body.id}`)
  await control(google, 'PATCH', `/calendars/${calendarId}/events/seededone`, { location: 'Lab' })

  const stored = (await control<{ items: Array<Record<string, unknown>> }>(google, 'GET', `/calendars/${calendarId}/events`)).body.items
  t.match(stored, [
    { id: inserted.body.id, status: 'cancelled', summary: 'Phone call' },
    { id: 'seededone', status: 'confirmed', location: 'Lab', start: { dateTime: '2030-05-02T04:00:00-04:00' } },
    { summary: 'Two', start: { date: '2030-01-01' } }
  ], 'deleted events stay, with their content')

  const page = await fetch(`${google.url}/_control/`)
  t.match(await page.text(), /dora@example.com/)
  t.equal((await control(google, 'GET', '/accounts/nobody@example.com')).status, 404)
  t.equal((await control(google, 'GET', '/nowhere')).status, 404)

  t.equal((await control(google, 'POST', '/clients', { clientId: 'other', clientSecret: 's', redirectUris: ['http://127.0.0.1:1/cb'] })).status, 200)
  t.match((await control(google, 'GET', '/clients')).body, { clients: [{ clientId: CLIENT.clientId }, { clientId: 'other' }] })
})

test('binds 127.0.0.1, counts lifetimes from its options, keeps tokens and secrets out of logs', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'))
      done()
    }
  })
  const google = await startGoogle({ clients: [CLIENT], accounts: [{ email: ALICE }], accessTokenLifetimeSec: 120, logger: { level: 'trace', stream } })
  t.teardown(() => google.close())
  t.match(google.url, /^http:\/\/127\.0\.0\.1:\d+$/)
  const { tokens, redirect } = await connect(google, ALICE, ['openid', CALENDAR_SCOPE])
  t.ok(Math.abs((tokens.expiry_date ?? 0) - (Date.now() + 120_000)) < 5000, 'access token lifetime')
  await fetch(`${google.url}/calendar/v3/calendars/primary/events?access_token=${tokens.access_token ?? ''}`)
  await fetch(`${google.url}/revoke?token=${tokens.refresh_token ?? ''}`, { method: 'POST' })
  await fetch(`${google.url}/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, redirect_uri: REDIRECT_URI }) })

  const logged = lines.join('')
  t.match(logged, /\/revoke\?token=%5Bredacted%5D/, 'requests are logged, with secrets redacted')
  for (const secret of [tokens.access_token, tokens.refresh_token, tokens.id_token, CLIENT.clientSecret, redirect.location.searchParams.get('code')]) {
    t.notOk(logged.includes(String(secret)), 'no token, code or secret in the log')
  }
})

test('the CLI starts on the given port with clients and accounts, and prints where', async (t) => {
  const port = await freePort()
  const cli = startScript(t, 'dev/google/cli.ts', ['--port', String(port), '--client', `${CLIENT.clientId}:${CLIENT.clientSecret}:${REDIRECT_URI}`, '--account', `${ALICE}:Alice Example`])
  t.ok(await waitFor(() => cli.stdout().includes('google stand-in listening on'), 15000, () => cli.child.exitCode !== null), cli.output())
  t.match(cli.stdout(), `google stand-in listening on http://127.0.0.1:${port}`)
  const accounts = await (await fetch(`http://127.0.0.1:${port}/_control/accounts`)).json() as { accounts: Array<{ email: string, name: string }> }
  t.match(accounts.accounts, [{ email: ALICE, name: 'Alice Example' }])
  cli.child.kill('SIGTERM')
  t.equal(await cli.exited, 0)

  const bad = startScript(t, 'dev/google/cli.ts', ['--client', 'no-secret'])
  t.equal(await bad.exited, 1)
  t.match(bad.stderr(), /--client must be/)
})

test('control: a calendar\'s accessRole is owner by default, one of Google\'s four roles, and shown with the account', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }] })
  const added = await control<{ id: string, accessRole: string }>(google, 'POST', `/accounts/${ALICE}/calendars`, { summary: 'Holidays', accessRole: 'reader' })
  t.equal(added.status, 201)
  t.equal(added.body.accessRole, 'reader')
  t.match((await control(google, 'POST', `/accounts/${ALICE}/calendars`, { summary: 'Plain' })).body, { accessRole: 'owner' })
  t.same(await control(google, 'POST', `/accounts/${ALICE}/calendars`, { summary: 'Bad', accessRole: 'admin' }),
    { status: 400, body: { error: 'calendar accessRole must be one of owner, writer, reader, freeBusyReader' } })
  t.same(await control(google, 'POST', '/accounts', { email: 'erin@example.com', calendars: [{ summary: 'Bad', accessRole: 7 }] }),
    { status: 400, body: { error: 'calendar accessRole must be a string' } })
  t.equal((await control(google, 'POST', '/accounts', { email: 'erin@example.com', calendars: [{ summary: 'Bad', accessRole: 'admin' }] })).status, 400)
  t.equal((await control(google, 'GET', '/accounts/erin@example.com')).status, 404, 'a refused calendar leaves no account behind')
  const account = await control<{ calendars: Array<{ summary: string, accessRole: string }> }>(google, 'GET', `/accounts/${ALICE}`)
  t.same(account.body.calendars.map(({ summary, accessRole }) => [summary, accessRole]), [[ALICE, 'owner'], ['Holidays', 'reader'], ['Plain', 'owner']])
  t.match(await (await fetch(`${google.url}/_control/`)).text(), /Holidays \(reader\)/)
})
