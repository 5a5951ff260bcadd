// Graph v1.0 calendars and events as Microsoft documents them: the signed-in user, calendars,
// events with change keys and If-Match, time zones by Windows name, series masters with their
// occurrences and exceptions, and Graph's error answers.
import { test } from 'tap'
import type { Test } from 'tap'
import { CLIENT, connect, control, graph, startStandIn } from './harness.js'
import type { Json } from './harness.js'

const ALICE = 'alice@example.com'
const PACIFIC = 'Pacific Standard Time'
const BERLIN = 'W. Europe Standard Time'

interface CalendarEntry { id: string, name: string, isDefaultCalendar: boolean, canEdit: boolean }

async function setUp (t: Test, scope?: string): Promise<{ microsoft: Awaited<ReturnType<typeof startStandIn>>, token: string, calendars: CalendarEntry[] }> {
  const microsoft = await startStandIn(t, {
    accounts: [{ email: ALICE, name: 'Alice Example', timeZone: BERLIN, calendars: [{ name: 'Work' }, { name: 'Birthdays', canEdit: false }] }]
  })
  const { tokens } = await connect(microsoft, ALICE, scope === undefined ? {} : { scope })
  const calendars = (await graph(microsoft, tokens.access_token, 'GET', '/me/calendars')).body['value'] as CalendarEntry[] | undefined
  return { microsoft, token: tokens.access_token, calendars: calendars ?? [] }
}

const byName = (calendars: CalendarEntry[], name: string): string => calendars.find((calendar) => calendar.name === name)?.id ?? ''
const values = (answer: Json): Array<Record<string, unknown>> => answer.body['value'] as Array<Record<string, unknown>>

test('the user, calendars, paging, and Graph\'s answers to missing, bad and insufficient tokens', async (t) => {
  const { microsoft, token, calendars } = await setUp(t)
  const me = await graph(microsoft, token, 'GET', '/me', undefined, { 'client-request-id': 'my-request-1' })
  t.equal(me.status, 200)
  t.match(me.body, { displayName: 'Alice Example', givenName: 'Alice', surname: 'Example', mail: ALICE, userPrincipalName: ALICE, id: /^[0-9a-f]{16}$/ })
  t.match(me.headers.get('request-id'), /^[0-9a-f-]{36}$/)
  t.equal(me.headers.get('client-request-id'), 'my-request-1', 'the client\'s request id is echoed')

  t.same(calendars.map(({ name, isDefaultCalendar, canEdit }) => ({ name, isDefaultCalendar, canEdit })), [
    { name: 'Calendar', isDefaultCalendar: true, canEdit: true },
    { name: 'Work', isDefaultCalendar: false, canEdit: true },
    { name: 'Birthdays', isDefaultCalendar: false, canEdit: false }
  ])
  const first = await graph(microsoft, token, 'GET', '/me/calendars?$top=2')
  t.equal(values(first).length, 2)
  t.match(first.body['@odata.nextLink'], /\/v1\.0\/me\/calendars\?\$top=2&\$skip=2$/)
  const rest = await graph(microsoft, token, 'GET', String(first.body['@odata.nextLink']))
  t.same(values(rest).map((calendar) => calendar['name']), ['Birthdays'])
  t.notOk('@odata.nextLink' in rest.body)
  t.match((await graph(microsoft, token, 'GET', '/me/calendar')).body, { name: 'Calendar', isDefaultCalendar: true, changeKey: String, owner: { address: ALICE } })

  t.match(await graph(microsoft, token, 'GET', '/me/calendars/not-an-id'), { status: 400, body: { error: { code: 'ErrorInvalidIdMalformed' } } })
  t.match(await graph(microsoft, token, 'GET', '/me/calendars/AAMkAAAAAAAAAAAAAAAAAAAAAAA='), { status: 404, body: { error: { code: 'ErrorItemNotFound' } } })
  t.match(await graph(microsoft, token, 'GET', '/me/nothing-here'), { status: 400, body: { error: { code: 'BadRequest', message: "Resource not found for the segment 'nothing-here'." } } })

  const anonymous = await fetch(`${microsoft.graphUrl}/me`)
  t.equal(anonymous.status, 401)
  t.match(anonymous.headers.get('www-authenticate'), /^Bearer realm="", authorization_uri=/)
  t.match(await anonymous.json(), { error: { code: 'InvalidAuthenticationToken', message: 'Access token is empty.', innerError: { 'request-id': String, date: String } } })
  t.match(await graph(microsoft, 'EwB-forged', 'GET', '/me'), { status: 401, body: { error: { code: 'InvalidAuthenticationToken' } } })

  // Consent adds up: asking Alice for less still yields a token with everything she consented to.
  const narrower = await connect(microsoft, ALICE, { scope: 'openid offline_access Calendars.Read' })
  t.match(narrower.tokens.scope, /Calendars\.ReadWrite/)
  await control(microsoft, 'POST', '/accounts', { email: 'carol@example.com' })
  const readOnly = await connect(microsoft, 'carol@example.com', { scope: 'openid offline_access Calendars.Read' })
  t.equal((await graph(microsoft, readOnly.tokens.access_token, 'GET', '/me/calendar/events')).status, 200)
  t.match(await graph(microsoft, readOnly.tokens.access_token, 'POST', '/me/calendar/events', {}), { status: 403, body: { error: { code: 'ErrorAccessDenied' } } })
  t.match(await graph(microsoft, readOnly.tokens.access_token, 'GET', '/me'), { status: 403 }, '/me needs User.Read')
  t.match(await graph(microsoft, readOnly.tokens.access_token, 'GET', `/me/calendars/${byName(calendars, 'Work')}`), { status: 404 }, 'another account\'s calendar does not exist for Carol')
})

test('events: create, read in another zone, update and delete with change keys and If-Match', async (t) => {
  const { microsoft, token, calendars } = await setUp(t)
  const work = byName(calendars, 'Work')
  const created = await graph(microsoft, token, 'POST', `/me/calendars/${work}/events`, {
    subject: 'Planning',
    body: { contentType: 'HTML', content: '<p>Bring <b>notes</b></p>' },
    start: { dateTime: '2030-05-02T09:00:00', timeZone: PACIFIC },
    end: { dateTime: '2030-05-02T10:30:00', timeZone: PACIFIC },
    location: { displayName: 'Room 4' },
    categories: ['Blue category'],
    attendees: [{ emailAddress: { address: 'bob@example.com', name: 'Bob' }, type: 'required' }],
    transactionId: 'tx-1'
  })
  t.equal(created.status, 201)
  const event = created.body
  t.match(event, {
    '@odata.context': /\$metadata#users\('[0-9a-f]{16}'\)\/calendars\('AAMkA.*'\)\/events\/\$entity$/,
    id: /^AAMkA[A-Za-z0-9_-]+=$/,
    type: 'singleInstance',
    subject: 'Planning',
    bodyPreview: 'Bring notes',
    body: { contentType: 'html', content: '<p>Bring <b>notes</b></p>' },
    start: { dateTime: '2030-05-02T16:00:00.0000000', timeZone: 'UTC' },
    end: { dateTime: '2030-05-02T17:30:00.0000000', timeZone: 'UTC' },
    originalStartTimeZone: PACIFIC,
    originalEndTimeZone: PACIFIC,
    location: { displayName: 'Room 4' },
    categories: ['Blue category'],
    attendees: [{ emailAddress: { address: 'bob@example.com' } }],
    isAllDay: false,
    seriesMasterId: null,
    recurrence: null,
    transactionId: 'tx-1',
    iCalUId: /^040000008200E00074C5B7101A82E008/,
    organizer: { emailAddress: { name: 'Alice Example', address: ALICE } }
  })
  t.equal(event['@odata.etag'], `W/"${String(event['changeKey'])}"`)
  const again = await graph(microsoft, token, 'POST', `/me/calendars/${work}/events`, { subject: 'Planning', start: { dateTime: '2030-05-02T09:00:00', timeZone: PACIFIC }, end: { dateTime: '2030-05-02T10:30:00', timeZone: PACIFIC }, transactionId: 'tx-1' })
  t.equal(again.body['id'], event['id'], 'a retried create with the same transactionId makes no second event')

  const id = String(event['id'])
  const inBerlin = await graph(microsoft, token, 'GET', `/me/events/${id}`, undefined, { prefer: `outlook.timezone="${BERLIN}"` })
  t.match(inBerlin.body, { start: { dateTime: '2030-05-02T18:00:00.0000000', timeZone: BERLIN } })
  t.equal(inBerlin.headers.get('preference-applied'), `outlook.timezone="${BERLIN}"`)
  const inIana = await graph(microsoft, token, 'GET', `/me/calendars/${work}/events/${id}`, undefined, { prefer: 'outlook.timezone="Asia/Tokyo"' })
  t.match(inIana.body, { start: { dateTime: '2030-05-03T01:00:00.0000000', timeZone: 'Asia/Tokyo' } })

  const stale = `W/"${String(event['changeKey'])}"`
  const updated = await graph(microsoft, token, 'PATCH', `/me/events/${id}`, { subject: 'Planning (moved)', location: { displayName: 'Room 5' } }, { 'if-match': stale })
  t.equal(updated.status, 200)
  t.match(updated.body, { subject: 'Planning (moved)', location: { displayName: 'Room 5' }, start: { dateTime: '2030-05-02T16:00:00.0000000' } })
  t.not(updated.body['changeKey'], event['changeKey'], 'every change makes a new change key')
  t.match(await graph(microsoft, token, 'PATCH', `/me/events/${id}`, { subject: 'Lost update' }, { 'if-match': stale }), {
    status: 412,
    body: { error: { code: 'ErrorIrresolvableConflict', message: /change key passed in the request does not match the current change key/ } }
  })
  t.equal((await graph(microsoft, token, 'DELETE', `/me/events/${id}`, undefined, { 'if-match': stale })).status, 412)
  t.same(values(await graph(microsoft, token, 'GET', `/me/calendars/${work}/events`)).map((item) => item['subject']), ['Planning (moved)'])
  t.equal((await graph(microsoft, token, 'DELETE', `/me/events/${id}`, undefined, { 'if-match': String(updated.body['@odata.etag']) })).status, 204)
  t.match(await graph(microsoft, token, 'GET', `/me/events/${id}`), { status: 404, body: { error: { code: 'ErrorItemNotFound', message: 'The specified object was not found in the store.' } } })

  const stored = (await control<{ items: Array<Record<string, unknown>> }>(microsoft, 'GET', `/calendars/${work}/events`)).body.items
  t.match(stored, [{ id, deleted: true, createdBy: CLIENT.clientId, lastModifiedBy: CLIENT.clientId, subject: 'Planning (moved)' }], 'what the application wrote, deletions included')
})

test('event writes Graph refuses, all-day events, and read-only calendars', async (t) => {
  const { microsoft, token, calendars } = await setUp(t)
  const post = async (body: unknown, calendar = ''): Promise<Json> => await graph(microsoft, token, 'POST', calendar === '' ? '/me/events' : `/me/calendars/${calendar}/events`, body)
  const hour = { start: { dateTime: '2030-05-02T09:00:00', timeZone: 'UTC' }, end: { dateTime: '2030-05-02T10:00:00', timeZone: 'UTC' } }
  t.match(await post({ subject: 'x', colour: 'red', ...hour }), { status: 400, body: { error: { code: 'RequestBodyRead', message: /The property 'colour' does not exist/ } } })
  t.match(await post({ start: { dateTime: '2030-05-02T09:00:00', timeZone: 'Mars Standard Time' }, end: hour.end }), { status: 400, body: { error: { code: 'TimeZoneNotSupportedException' } } })
  t.match(await post({ start: hour.end, end: hour.start }), { status: 400, body: { error: { code: 'ErrorPropertyValidationFailure' } } })
  t.match(await post({ subject: 'no end', start: hour.start }), { status: 400 })
  t.match(await post('not json'), { status: 400, body: { error: { code: 'BadRequest' } } })
  t.match(await post({ isAllDay: true, ...hour }), { status: 400, body: { error: { code: 'ErrorPropertyValidationFailure', message: /midnight/ } } })
  t.match(await post(hour, byName(calendars, 'Birthdays')), { status: 403, body: { error: { code: 'ErrorAccessDenied' } } })

  const allDay = await post({ subject: 'Holiday', isAllDay: true, start: { dateTime: '2030-05-03T00:00:00', timeZone: BERLIN }, end: { dateTime: '2030-05-05T00:00:00', timeZone: BERLIN } })
  t.equal(allDay.status, 201)
  t.match(allDay.body, { isAllDay: true, start: { dateTime: '2030-05-03T00:00:00.0000000', timeZone: 'UTC' }, end: { dateTime: '2030-05-05T00:00:00.0000000', timeZone: 'UTC' } }, 'all-day events keep their dates in any zone')
  const inPacific = await graph(microsoft, token, 'GET', `/me/events/${String(allDay.body['id'])}`, undefined, { prefer: `outlook.timezone="${PACIFIC}"` })
  t.match(inPacific.body, { start: { dateTime: '2030-05-03T00:00:00.0000000', timeZone: PACIFIC } })
  const inDefault = values(await graph(microsoft, token, 'GET', '/me/calendar/events'))
  t.same(inDefault.map((item) => item['subject']), ['Holiday'], '/me/events writes to the default calendar')
})

test('series: the master\'s recurrence, occurrences across a daylight-saving change, exceptions and deleted occurrences', async (t) => {
  const { microsoft, token, calendars } = await setUp(t)
  const work = byName(calendars, 'Work')
  const created = await graph(microsoft, token, 'POST', `/me/calendars/${work}/events`, {
    subject: 'Weekly sync',
    start: { dateTime: '2030-03-04T09:00:00', timeZone: BERLIN },
    end: { dateTime: '2030-03-04T09:30:00', timeZone: BERLIN },
    recurrence: { pattern: { type: 'weekly', interval: 1, daysOfWeek: ['monday'] }, range: { type: 'numbered', startDate: '2030-03-04', numberOfOccurrences: 6 } }
  })
  t.equal(created.status, 201)
  const master = created.body
  const masterId = String(master['id'])
  t.match(master, {
    type: 'seriesMaster',
    seriesMasterId: null,
    recurrence: {
      pattern: { type: 'weekly', interval: 1, month: 0, dayOfMonth: 0, daysOfWeek: ['monday'], firstDayOfWeek: 'sunday', index: 'first' },
      range: { type: 'numbered', startDate: '2030-03-04', endDate: '0001-01-01', recurrenceTimeZone: BERLIN, numberOfOccurrences: 6 }
    }
  })
  const window = 'startDateTime=2030-01-01T00:00:00Z&endDateTime=2030-12-31T00:00:00Z'
  const instances = values(await graph(microsoft, token, 'GET', `/me/events/${masterId}/instances?${window}`))
  t.equal(instances.length, 6)
  t.same(instances.map((instance) => instance['originalStart']), [
    '2030-03-04T08:00:00Z', '2030-03-11T08:00:00Z', '2030-03-18T08:00:00Z', '2030-03-25T08:00:00Z',
    '2030-04-01T07:00:00Z', '2030-04-08T07:00:00Z'
  ], 'nine o\'clock in Berlin on both sides of the change to summer time')
  t.match(instances[0], { type: 'occurrence', seriesMasterId: masterId, subject: 'Weekly sync', recurrence: null, changeKey: master['changeKey'] })
  t.equal(new Set(instances.map((instance) => instance['id'])).size, 6, 'each occurrence has its own id')

  // An occurrence changed becomes an exception with the same id; one deleted disappears.
  const third = String(instances[2]?.['id'])
  const moved = await graph(microsoft, token, 'PATCH', `/me/events/${third}`, {
    subject: 'Weekly sync (moved)', start: { dateTime: '2030-03-19T14:00:00', timeZone: BERLIN }, end: { dateTime: '2030-03-19T14:30:00', timeZone: BERLIN }
  }, { 'if-match': String(instances[2]?.['@odata.etag']) })
  t.equal(moved.status, 200)
  t.match(moved.body, { id: third, type: 'exception', seriesMasterId: masterId, originalStart: '2030-03-18T08:00:00Z', start: { dateTime: '2030-03-19T13:00:00.0000000' } })
  t.match(await graph(microsoft, token, 'PATCH', `/me/events/${third}`, { recurrence: null }), { status: 400 }, 'an occurrence has no recurrence of its own')
  const fourth = String(instances[3]?.['id'])
  t.equal((await graph(microsoft, token, 'DELETE', `/me/events/${fourth}`)).status, 204)
  t.equal((await graph(microsoft, token, 'GET', `/me/events/${fourth}`)).status, 404)
  const after = values(await graph(microsoft, token, 'GET', `/me/events/${masterId}/instances?${window}`))
  t.same(after.map((instance) => [instance['type'], instance['subject']]), [
    ['occurrence', 'Weekly sync'], ['occurrence', 'Weekly sync'], ['exception', 'Weekly sync (moved)'], ['occurrence', 'Weekly sync'], ['occurrence', 'Weekly sync']
  ])

  // Lists: /events has the master only; a calendar view has occurrences and exceptions, by start.
  t.same(values(await graph(microsoft, token, 'GET', `/me/calendars/${work}/events`)).map((item) => item['type']), ['seriesMaster'])
  const view = values(await graph(microsoft, token, 'GET', `/me/calendars/${work}/calendarView?startDateTime=2030-03-10T00:00:00Z&endDateTime=2030-03-24T00:00:00Z`))
  t.same(view.map((item) => [item['type'], item['start']]), [
    ['occurrence', { dateTime: '2030-03-11T08:00:00.0000000', timeZone: 'UTC' }],
    ['exception', { dateTime: '2030-03-19T13:00:00.0000000', timeZone: 'UTC' }]
  ])

  // A change of the master reaches its occurrences; the exception keeps what it changed.
  await graph(microsoft, token, 'PATCH', `/me/events/${masterId}`, { subject: 'Team sync', location: { displayName: 'Lab' } })
  const renamed = values(await graph(microsoft, token, 'GET', `/me/events/${masterId}/instances?${window}`))
  t.same(renamed.map((instance) => [instance['subject'], (instance['location'] as { displayName: string }).displayName]), [
    ['Team sync', 'Lab'], ['Team sync', 'Lab'], ['Weekly sync (moved)', 'Lab'], ['Team sync', 'Lab'], ['Team sync', 'Lab']
  ])
  // A new pattern drops the exceptions, as Outlook does.
  await graph(microsoft, token, 'PATCH', `/me/events/${masterId}`, {
    recurrence: { pattern: { type: 'relativeMonthly', interval: 1, daysOfWeek: ['friday'], index: 'last' }, range: { type: 'numbered', startDate: '2030-01-01', numberOfOccurrences: 3 } }
  })
  const monthly = values(await graph(microsoft, token, 'GET', `/me/events/${masterId}/instances?${window}`))
  t.same(monthly.map((instance) => [instance['type'], String(instance['originalStart']).slice(0, 10)]), [
    ['occurrence', '2030-01-25'], ['occurrence', '2030-02-22'], ['occurrence', '2030-03-29']
  ], 'the last Friday of each month')
  t.match(await graph(microsoft, token, 'GET', `/me/events/${third}`), { status: 404 })
  t.match(await graph(microsoft, token, 'POST', `/me/calendars/${work}/events`, {
    subject: 'bad',
    start: { dateTime: '2030-03-04T09:00:00', timeZone: BERLIN },
    end: { dateTime: '2030-03-04T09:30:00', timeZone: BERLIN },
    recurrence: { pattern: { type: 'weekly', interval: 1 }, range: { type: 'numbered', startDate: '2030-03-04', numberOfOccurrences: 2 } }
  }), { status: 400, body: { error: { code: 'ErrorPropertyValidationFailure', message: /daysOfWeek/ } } })
})

test('mailbox settings: the mailbox\'s zone (Windows name by default) with MailboxSettings.Read, one setting alone, 403 without', async (t) => {
  const { microsoft, token } = await setUp(t, 'openid offline_access Calendars.ReadWrite MailboxSettings.Read')
  const settings = await graph(microsoft, token, 'GET', '/me/mailboxSettings')
  t.equal(settings.status, 200)
  t.match(settings.body, {
    '@odata.context': `${microsoft.url}/v1.0/$metadata#Me/mailboxSettings`,
    timeZone: BERLIN,
    language: { locale: String },
    workingHours: { daysOfWeek: Array, startTime: String, endTime: String, timeZone: { name: BERLIN } },
    automaticRepliesSetting: { status: 'disabled' },
    dateFormat: String,
    timeFormat: String
  })
  t.match(await graph(microsoft, token, 'GET', '/me/mailboxSettings/timeZone'), { status: 200, body: { '@odata.context': /\/mailboxSettings\/timeZone$/, value: BERLIN } })
  t.match(await graph(microsoft, token, 'GET', '/me/mailboxSettings/workingHours'), { status: 200, body: { startTime: String, timeZone: { name: BERLIN } } })
  t.match(await graph(microsoft, token, 'GET', '/me/mailboxSettings/nothing'), { status: 400, body: { error: { code: 'BadRequest' } } })

  // A mailbox set up with an IANA name is kept (and answered) by its Windows name, Outlook's default format.
  await control(microsoft, 'POST', '/accounts', { email: 'dora@example.com', timeZone: 'America/New_York' })
  const dora = await connect(microsoft, 'dora@example.com', { scope: 'openid offline_access Calendars.ReadWrite MailboxSettings.Read' })
  t.match(await graph(microsoft, dora.tokens.access_token, 'GET', '/me/mailboxSettings'), { status: 200, body: { timeZone: 'Eastern Standard Time' } })
  await control(microsoft, 'POST', '/accounts', { email: 'erin@example.com' })
  const erin = await connect(microsoft, 'erin@example.com', { scope: 'openid offline_access Calendars.ReadWrite' })
  t.match(await graph(microsoft, erin.tokens.access_token, 'GET', '/me/mailboxSettings'), { status: 403, body: { error: { code: 'ErrorAccessDenied' } } },
    'Calendars permissions do not reach the mailbox settings')
})

test('read-only calendars (canEdit false): reads work, every event write is 403 ErrorAccessDenied and stores nothing', async (t) => {
  const microsoft = await startStandIn(t)
  const created = await control<{ calendars: Array<{ id: string, name: string, canEdit: boolean }> }>(microsoft, 'POST', '/accounts', {
    email: ALICE, name: 'Alice Example', timeZone: BERLIN, calendars: [{ name: 'Team', canEdit: false }]
  })
  t.equal(created.status, 201)
  const added = await control<{ id: string, name: string, canEdit: boolean }>(microsoft, 'POST', `/accounts/${ALICE}/calendars`, { name: 'Holidays', canEdit: false })
  t.equal(added.status, 201)
  t.match(added.body, { name: 'Holidays', canEdit: false })
  t.same(created.body.calendars.map(({ name, canEdit }) => [name, canEdit]), [['Calendar', true], ['Team', false]])
  const team = created.body.calendars.find((entry) => entry.name === 'Team')?.id ?? ''
  const hour = { start: { dateTime: '2030-05-02T09:00:00', timeZone: 'UTC' }, end: { dateTime: '2030-05-02T10:00:00', timeZone: 'UTC' } }
  // The calendar's owner (another device) can still write to it; the account cannot.
  const planning = await control<Record<string, unknown>>(microsoft, 'POST', `/calendars/${team}/events`, { subject: 'Planning', ...hour })
  t.equal(planning.status, 201)
  const eventId = String(planning.body['id'])
  const series = await control<Record<string, unknown>>(microsoft, 'POST', `/calendars/${team}/events`, {
    subject: 'Weekly',
    start: { dateTime: '2030-03-04T09:00:00', timeZone: BERLIN },
    end: { dateTime: '2030-03-04T09:30:00', timeZone: BERLIN },
    recurrence: { pattern: { type: 'weekly', interval: 1, daysOfWeek: ['monday'] }, range: { type: 'numbered', startDate: '2030-03-04', numberOfOccurrences: 3 } }
  })
  const masterId = String(series.body['id'])

  const { tokens } = await connect(microsoft, ALICE)
  const token = tokens.access_token
  const calendar = await graph(microsoft, token, 'GET', `/me/calendars/${team}`)
  t.equal(calendar.status, 200)
  t.match(calendar.body, { name: 'Team', canEdit: false, canShare: false, isRemovable: true, isDefaultCalendar: false })
  t.match((await graph(microsoft, token, 'GET', '/me/calendar')).body, { canEdit: true, canShare: true, isRemovable: false })
  const listed = values(await graph(microsoft, token, 'GET', '/me/calendars'))
  t.same(listed.map((entry) => [entry['name'], entry['canEdit']]), [['Calendar', true], ['Team', false], ['Holidays', false]])

  const read = await graph(microsoft, token, 'GET', `/me/calendars/${team}/events/${eventId}`)
  t.match(read, { status: 200, body: { subject: 'Planning' } })
  const changeKey = String(read.body['changeKey'])
  const window = 'startDateTime=2030-01-01T00:00:00Z&endDateTime=2030-12-31T00:00:00Z'
  t.equal(values(await graph(microsoft, token, 'GET', `/me/calendars/${team}/calendarView?${window}`)).length, 4, 'a calendar view reads it')
  const delta = await graph(microsoft, token, 'GET', `/me/calendars/${team}/calendarView/delta?${window}`)
  t.equal(delta.status, 200)
  const deltaLink = String(delta.body['@odata.deltaLink'])
  const instance = String(values(await graph(microsoft, token, 'GET', `/me/events/${masterId}/instances?${window}`))[1]?.['id'])

  const denied = (answer: Json, what: string): void => {
    t.equal(answer.status, 403, what)
    t.match(answer.body, { error: { code: 'ErrorAccessDenied', message: 'Access is denied. Check credentials and try again.', innerError: { 'request-id': String } } }, what)
  }
  denied(await graph(microsoft, token, 'POST', `/me/calendars/${team}/events`, { subject: 'Mine', ...hour }), 'create')
  denied(await graph(microsoft, token, 'POST', `/me/calendars/${added.body.id}/events`, { subject: 'Mine', ...hour }), 'create in a calendar added later')
  denied(await graph(microsoft, token, 'PATCH', `/me/calendars/${team}/events/${eventId}`, { subject: 'Renamed' }), 'update by the calendar\'s path')
  denied(await graph(microsoft, token, 'PATCH', `/me/events/${eventId}`, { subject: 'Renamed' }, { 'if-match': `W/"${changeKey}"` }), 'update by /me/events')
  denied(await graph(microsoft, token, 'PATCH', `/me/events/${instance}`, { subject: 'Moved' }), 'update of an occurrence')
  denied(await graph(microsoft, token, 'DELETE', `/me/events/${eventId}`), 'delete')
  denied(await graph(microsoft, token, 'DELETE', `/me/calendars/${team}/events/${instance}`), 'delete of an occurrence')
  denied(await graph(microsoft, token, 'DELETE', `/me/events/${masterId}`), 'delete of a series')

  t.match(await graph(microsoft, token, 'GET', `/me/events/${eventId}`), { status: 200, body: { subject: 'Planning', changeKey } }, 'the event unchanged')
  t.same(values(await graph(microsoft, token, 'GET', `/me/calendars/${team}/events`)).map((item) => item['subject']), ['Planning', 'Weekly'], 'no event added')
  t.same(values(await graph(microsoft, token, 'GET', deltaLink)), [], 'no change for a delta round either')
  const stored = (await control<{ items: Array<Record<string, unknown>> }>(microsoft, 'GET', `/calendars/${team}/events`)).body.items
  t.match(stored, [
    { id: eventId, subject: 'Planning', deleted: false, lastModifiedBy: 'control' },
    { id: masterId, subject: 'Weekly', deleted: false, exceptions: [] }
  ])
  t.equal(stored.length, 2)
  t.same((await control<{ items: unknown[] }>(microsoft, 'GET', `/calendars/${added.body.id}/events`)).body.items, [])
  t.equal((await graph(microsoft, token, 'POST', '/me/events', { subject: 'Mine', ...hour })).status, 201, 'the default calendar takes writes')
})
