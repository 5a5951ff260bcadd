// The Calendar API v3 subset through Google's own Node client (@googleapis/calendar) pointed at the
// stand-in with `rootUrl`: what an application calling Google would see.
import { test } from 'tap'
import { calendar } from '@googleapis/calendar'
import type { calendar_v3 as CalendarV3 } from '@googleapis/calendar'
import { CALENDAR_READONLY_SCOPE, CALENDAR_SCOPE, connect, control, startStandIn } from './harness.js'
import type { GoogleStandIn } from '../../../dev/google/index.js'

const ALICE = 'alice@example.com'
const BERLIN = 'Europe/Berlin'

interface ApiFailure { status: number | undefined, error: { code?: number, message?: string, errors?: Array<{ domain: string, reason: string, message: string }> } | undefined }

/** The HTTP status and Google error body of a failed client call. */
async function failure (promise: Promise<unknown>): Promise<ApiFailure> {
  try {
    await promise
  } catch (err) {
    const response = (err as { response?: { status?: number, data?: { error?: ApiFailure['error'] } } }).response
    if (response === undefined) throw err
    return { status: response.status, error: response.data?.error }
  }
  throw new Error('the call succeeded')
}

async function calendarClient (google: GoogleStandIn, email: string, scopes = [CALENDAR_SCOPE]): Promise<CalendarV3.Calendar> {
  const { client } = await connect(google, email, scopes)
  return calendar({ version: 'v3', rootUrl: google.rootUrl, auth: client })
}

/** Every page of a list, as a sync loop reads it. */
async function listAll (api: CalendarV3.Calendar, params: CalendarV3.Params$Resource$Events$List): Promise<{ items: CalendarV3.Schema$Event[], pages: CalendarV3.Schema$Events[] }> {
  const pages: CalendarV3.Schema$Events[] = []
  let pageToken: string | undefined
  do {
    const { data } = await api.events.list({ ...params, ...(pageToken === undefined ? {} : { pageToken }) })
    pages.push(data)
    pageToken = data.nextPageToken ?? undefined
  } while (pageToken !== undefined)
  return { items: pages.flatMap((page) => page.items ?? []), pages }
}

test('calendarList: the primary calendar and the visible ones; hidden ones with showHidden', async (t) => {
  const google = await startStandIn(t, {
    accounts: [{ email: ALICE, timeZone: BERLIN, calendars: [{ summary: 'Work' }, { summary: 'Holidays', hidden: true }] }]
  })
  const api = await calendarClient(google, ALICE, [CALENDAR_READONLY_SCOPE])
  const { data } = await api.calendarList.list()
  t.equal(data.kind, 'calendar#calendarList')
  t.same(data.items?.map((item) => item.summary), [ALICE, 'Work'])
  t.match(data.items?.[0], { id: ALICE, primary: true, accessRole: 'owner', selected: true, timeZone: BERLIN, backgroundColor: /^#[0-9a-f]{6}$/ })
  t.notOk(data.items?.[1]?.primary, 'only the primary calendar says primary')
  const withHidden = await api.calendarList.list({ showHidden: true })
  t.match(withHidden.data.items?.[2], { summary: 'Holidays', hidden: true })
  const primary = await api.calendars.get({ calendarId: 'primary' })
  t.match(primary.data, { id: ALICE, timeZone: BERLIN })

  const syncToken = data.nextSyncToken ?? ''
  t.ok(syncToken, 'the last page carries a sync token')
  t.same((await api.calendarList.list({ syncToken })).data.items, [], 'nothing changed')
  const added = (await control<{ id: string }>(google, 'POST', `/accounts/${ALICE}/calendars`, { summary: 'Secret', hidden: true })).body
  const work = data.items?.[1]?.id ?? ''
  await control(google, 'DELETE', `/calendars/${work}`)
  const changes = await api.calendarList.list({ syncToken })
  t.match(changes.data.items, [{ id: added.id, summary: 'Secret', hidden: true }, { id: work, deleted: true }], 'new hidden and deleted entries come incrementally')
  t.equal((await failure(api.calendarList.list({ syncToken, showHidden: false }))).status, 400)
  t.equal((await failure(api.calendarList.list({ syncToken: 'bogus' }))).status, 410)
})

test('a calendar\'s default reminders: in its calendarList entry and with its events; the control surface checks them', async (t) => {
  const reminders = [{ method: 'popup' as const, minutes: 10 }, { method: 'email' as const, minutes: 1440 }]
  const google = await startStandIn(t, {
    accounts: [{ email: ALICE, timeZone: BERLIN, calendars: [{ summary: 'Work', defaultReminders: reminders }] }]
  })
  const api = await calendarClient(google, ALICE)
  const { data } = await api.calendarList.list()
  t.same(data.items?.map((item) => [item.summary, item.defaultReminders]), [[ALICE, []], ['Work', reminders]], 'a calendar given none has none')
  const work = data.items?.[1]?.id ?? ''
  t.same((await api.calendarList.get({ calendarId: work })).data.defaultReminders, reminders)
  t.same((await api.events.list({ calendarId: work })).data.defaultReminders, reminders, 'events.list answers the calendar\'s defaults beside its events')

  for (const [defaultReminders, why] of [
    [[{ method: 'sms', minutes: 10 }], 'a method Google no longer offers'],
    [[{ method: 'popup', minutes: 40_321 }], 'more than four weeks'],
    [[{ method: 'popup', minutes: 1.5 }], 'a fraction of a minute'],
    [Array.from({ length: 6 }, (_, minutes) => ({ method: 'popup', minutes })), 'six of them'],
    ['popup', 'not a list']
  ] as const) {
    const refused = await control<{ error: string }>(google, 'POST', `/accounts/${ALICE}/calendars`, { summary: 'Refused', defaultReminders })
    t.equal(refused.status, 400, why)
  }
  t.same((await api.calendarList.list()).data.items?.map((item) => item.summary), [ALICE, 'Work'], 'no refused calendar was added')

  const { nextSyncToken } = (await api.calendarList.list()).data
  const changed = await control(google, 'PUT', `/calendars/${ALICE}/default-reminders`, { defaultReminders: [{ method: 'popup', minutes: 30 }] })
  t.equal(changed.status, 200)
  t.same((await api.calendarList.get({ calendarId: 'primary' })).data.defaultReminders, [{ method: 'popup', minutes: 30 }], 'the person changed the primary calendar\'s default')
  t.same((await api.calendarList.list({ syncToken: nextSyncToken ?? '' })).data.items?.map((item) => item.id), [ALICE], 'an incremental list of the calendar list names the changed entry')
  t.equal((await control(google, 'PUT', `/calendars/${ALICE}/default-reminders`, {})).status, 400, 'a change without reminders is refused')
  t.equal((await control(google, 'PUT', `/calendars/${ALICE}/default-reminders`, { defaultReminders: [{ method: 'popup', minutes: -1 }] })).status, 400)
  t.same((await api.calendarList.get({ calendarId: 'primary' })).data.defaultReminders, [{ method: 'popup', minutes: 30 }], 'refused changes changed nothing')
})

test('a 10,000-event calendar seeds and lists in pages: 250 by default, at most 2500', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE, timeZone: BERLIN }] })
  const seeded = await control<{ inserted: number, tookMs: number }>(google, 'POST', `/calendars/${ALICE}/seed`, { generate: { singles: 9300, series: 200, exceptions: 500 } })
  t.equal(seeded.body.inserted, 10000)
  t.type(seeded.body.tookMs, 'number', 'the control route reports how long seeding took (bench/google-transport.ts measures it)')
  const api = await calendarClient(google, ALICE)

  // How fast is bench/google-transport.ts's to say (it reads the same 10,000 events): a loaded
  // machine stretches any wall-clock bound here.
  const { items, pages } = await listAll(api, { calendarId: 'primary', showDeleted: true })
  t.equal(items.length, 10000)
  t.equal(new Set(items.map((item) => item.id)).size, 10000, 'no event twice')
  t.equal(pages.length, 40)
  t.ok(pages.slice(0, -1).every((page) => page.nextPageToken && !page.nextSyncToken), 'nextPageToken on every page but the last')
  t.ok(pages.at(-1)?.nextSyncToken && !pages.at(-1)?.nextPageToken, 'nextSyncToken on the last')
  t.ok(pages.slice(0, -1).every((page) => page.items?.length === 250))

  const series = items.filter((item) => item.recurrence !== undefined && item.recurrence !== null)
  t.equal(series.length, 200)
  t.match(series[0], { recurrence: [/^RRULE:FREQ=/], start: { dateTime: String, timeZone: BERLIN } })
  const exceptions = items.filter((item) => item.recurringEventId)
  t.equal(exceptions.length, 500)
  const cancelled = exceptions.filter((item) => item.status === 'cancelled')
  t.ok(cancelled.length > 0)
  t.same(Object.keys(cancelled[0] ?? {}).sort(), ['etag', 'id', 'kind', 'originalStartTime', 'recurringEventId', 'status'],
    'a cancelled instance carries only what Google guarantees')
  t.match(exceptions.find((item) => item.status === 'confirmed'), { recurringEventId: String, originalStartTime: { dateTime: String }, start: { dateTime: String } })

  const big = await api.events.list({ calendarId: 'primary', maxResults: 3000 })
  t.equal(big.data.items?.length, 2500, 'maxResults above 2500 gives 2500')
  t.ok(big.data.nextPageToken)
})

test('sync tokens: an incremental list brings changed, cancelled-instance and deleted items; 410 once expired', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE, timeZone: BERLIN }] })
  const api = await calendarClient(google, ALICE)
  const standup = await api.events.insert({
    calendarId: 'primary',
    requestBody: {
      summary: 'Standup',
      start: { dateTime: '2030-03-04T09:00:00', timeZone: BERLIN },
      end: { dateTime: '2030-03-04T09:15:00', timeZone: BERLIN },
      recurrence: ['RRULE:FREQ=DAILY;COUNT=10']
    }
  })
  const lunch = await api.events.insert({ calendarId: 'primary', requestBody: { summary: 'Lunch', start: { dateTime: '2030-03-05T12:00:00+01:00' }, end: { dateTime: '2030-03-05T13:00:00+01:00' } } })
  const review = await api.events.insert({ calendarId: 'primary', requestBody: { summary: 'Review', start: { date: '2030-03-06' }, end: { date: '2030-03-07' } } })

  const full = await listAll(api, { calendarId: 'primary' })
  t.equal(full.items.length, 3)
  const syncToken = full.pages.at(-1)?.nextSyncToken ?? ''
  t.ok(syncToken)

  const empty = await api.events.list({ calendarId: 'primary', syncToken })
  t.same(empty.data.items, [], 'nothing changed yet')

  // Another device: a changed event, a cancelled occurrence of the series, a deleted event.
  await control(google, 'PATCH', `/calendars/${ALICE}/events/${lunch.data.id ?? ''}`, { summary: 'Long lunch' })
  const instanceId = `${standup.data.id ?? ''}_20300306T080000Z`
  t.equal((await control(google, 'DELETE', `/calendars/${ALICE}/events/${instanceId}`)).status, 200)
  await control(google, 'DELETE', `/calendars/${ALICE}/events/${review.data.id ?? ''}`)

  const changes = await listAll(api, { calendarId: 'primary', syncToken })
  const byId = new Map(changes.items.map((item) => [item.id, item]))
  t.equal(changes.items.length, 3)
  t.match(byId.get(lunch.data.id), { status: 'confirmed', summary: 'Long lunch' })
  t.same(byId.get(instanceId), {
    kind: 'calendar#event',
    etag: byId.get(instanceId)?.etag,
    id: instanceId,
    status: 'cancelled',
    recurringEventId: standup.data.id,
    originalStartTime: { dateTime: '2030-03-06T09:00:00+01:00', timeZone: BERLIN }
  }, 'the cancelled instance: id, recurringEventId, originalStartTime')
  t.same(Object.keys(byId.get(review.data.id) ?? {}).sort(), ['etag', 'id', 'kind', 'status'], 'the deleted event: little else than its id')
  t.equal(byId.get(review.data.id)?.status, 'cancelled')

  const nextToken = changes.pages.at(-1)?.nextSyncToken ?? ''
  t.not(nextToken, syncToken)
  t.same((await api.events.list({ calendarId: 'primary', syncToken: nextToken })).data.items, [])

  const restricted = await failure(api.events.list({ calendarId: 'primary', syncToken: nextToken, timeMin: '2030-01-01T00:00:00Z' }))
  t.equal(restricted.status, 400, 'timeMin with syncToken')
  t.equal((await failure(api.events.list({ calendarId: 'primary', syncToken: nextToken, showDeleted: false }))).status, 400, 'showDeleted=false with syncToken')

  await control(google, 'POST', `/accounts/${ALICE}/expire-sync-tokens`)
  const gone = await failure(api.events.list({ calendarId: 'primary', syncToken: nextToken }))
  t.same(gone, {
    status: 410,
    error: {
      code: 410,
      message: 'Sync token is no longer valid, a full sync is required.',
      errors: [{ domain: 'calendar', reason: 'fullSyncRequired', message: 'Sync token is no longer valid, a full sync is required.' }]
    }
  })
  const afresh = await listAll(api, { calendarId: 'primary' })
  t.ok(afresh.pages.at(-1)?.nextSyncToken, 'a full sync gets a new token')
  t.same((await api.events.list({ calendarId: 'primary', syncToken: afresh.pages.at(-1)?.nextSyncToken ?? '' })).data.items, [])
  t.equal((await failure(api.events.list({ calendarId: 'primary', syncToken: 'garbage' }))).status, 410, 'an unknown token is a full-sync-required too')
})

test('incremental lists page too; a change made while a full sync pages arrives with the next incremental list', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }] })
  await control(google, 'POST', `/calendars/${ALICE}/seed`, { generate: { singles: 300 } })
  const api = await calendarClient(google, ALICE)
  const firstPage = await api.events.list({ calendarId: 'primary', maxResults: 200 })
  const late = await control<{ id: string }>(google, 'POST', `/calendars/${ALICE}/events`, { summary: 'During the full sync', start: { date: '2030-01-01' }, end: { date: '2030-01-02' } })
  const rest = await listAll(api, { calendarId: 'primary', maxResults: 200, pageToken: firstPage.data.nextPageToken ?? '' })
  const syncToken = rest.pages.at(-1)?.nextSyncToken ?? ''
  t.equal((firstPage.data.items?.length ?? 0) + rest.items.length, 301, 'the new event is appended to the pass')

  await control(google, 'POST', `/calendars/${ALICE}/seed`, { generate: { singles: 450 } })
  const changes = await listAll(api, { calendarId: 'primary', syncToken, maxResults: 200 })
  t.same(changes.pages.map((page) => page.items?.length), [200, 200, 51])
  t.ok(changes.pages.slice(0, -1).every((page) => page.nextPageToken && !page.nextSyncToken))
  t.ok(changes.items.some((item) => item.id === late.body.id), 'the change made during the full pass comes again')
  t.equal((await failure(api.events.list({ calendarId: 'primary', pageToken: changes.pages[0]?.nextPageToken ?? '' }))).status, 400,
    'an incremental page token without its sync token')
})

test('full lists: showDeleted, timeMin/timeMax against series, updatedMin', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE, timeZone: BERLIN }] })
  const api = await calendarClient(google, ALICE)
  const weekly = await api.events.insert({
    calendarId: 'primary',
    requestBody: { summary: 'Weekly', start: { dateTime: '2030-01-07T10:00:00', timeZone: BERLIN }, end: { dateTime: '2030-01-07T11:00:00', timeZone: BERLIN }, recurrence: ['RRULE:FREQ=WEEKLY;UNTIL=20300401T000000Z'] }
  })
  await api.events.insert({ calendarId: 'primary', requestBody: { summary: 'June', start: { dateTime: '2030-06-01T10:00:00Z' }, end: { dateTime: '2030-06-01T11:00:00Z' } } })
  const gone = await api.events.insert({ calendarId: 'primary', requestBody: { summary: 'Gone', start: { dateTime: '2030-02-01T10:00:00Z' }, end: { dateTime: '2030-02-01T11:00:00Z' } } })
  await api.events.delete({ calendarId: 'primary', eventId: gone.data.id ?? '' })

  const summaries = async (params: Partial<CalendarV3.Params$Resource$Events$List>): Promise<string[]> =>
    ((await api.events.list({ calendarId: 'primary', ...params })).data.items ?? []).map((item) => item.summary ?? `(${item.status ?? ''})`).sort()
  t.same(await summaries({}), ['June', 'Weekly'], 'deleted events hidden by default')
  t.same(await summaries({ showDeleted: true }), ['Gone', 'June', 'Weekly'], 'on the organizer\'s calendar a deleted event keeps its details')
  t.same(await summaries({ timeMin: '2030-03-01T00:00:00Z', timeMax: '2030-04-01T00:00:00Z' }), ['Weekly'], 'a series overlapping the window')
  t.same(await summaries({ timeMin: '2030-04-02T00:00:00Z' }), ['June'], 'a series that ended before the window')
  t.equal((await failure(api.events.list({ calendarId: 'primary', timeMin: '2030-04-02T00:00:00Z', timeMax: '2030-04-01T00:00:00Z' }))).error?.errors?.[0]?.reason, 'timeRangeEmpty')

  const instance = await api.events.get({ calendarId: 'primary', eventId: `${weekly.data.id ?? ''}_20300114T090000Z` })
  t.match(instance.data, { recurringEventId: weekly.data.id, originalStartTime: { dateTime: '2030-01-14T10:00:00+01:00' }, summary: 'Weekly' }, 'an occurrence by its instance id')
  t.equal((await failure(api.events.get({ calendarId: 'primary', eventId: `${weekly.data.id ?? ''}_20300115T090000Z` }))).status, 404, 'not an occurrence')

  const mark = new Date(Date.now() + 1).toISOString()
  await new Promise((resolve) => setTimeout(resolve, 5))
  await api.events.patch({ calendarId: 'primary', eventId: weekly.data.id ?? '', requestBody: { location: 'Room 1' } })
  t.same(await summaries({ updatedMin: mark }), ['Weekly'], 'only what changed since updatedMin')
})

test('insert, get, patch, update, delete with etags: If-Match mismatch is 412', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE, timeZone: BERLIN }] })
  const api = await calendarClient(google, ALICE)
  const inserted = await api.events.insert({
    calendarId: 'primary',
    requestBody: {
      summary: 'Dentist',
      description: 'Bring the card',
      location: 'Main Street 1',
      start: { dateTime: '2030-05-02T08:00:00Z' },
      end: { dateTime: '2030-05-02T09:00:00Z' },
      extendedProperties: { private: { origin: 'calendar-service' } }
    }
  })
  const event = inserted.data
  t.match(event, {
    kind: 'calendar#event',
    id: /^[a-v0-9]{26}$/,
    status: 'confirmed',
    etag: /^"\d+"$/,
    iCalUID: `${event.id ?? ''}@google.com`,
    sequence: 0,
    created: String,
    updated: String,
    start: { dateTime: '2030-05-02T10:00:00+02:00' },
    end: { dateTime: '2030-05-02T11:00:00+02:00' },
    organizer: { email: ALICE, self: true },
    extendedProperties: { private: { origin: 'calendar-service' } }
  }, 'dateTime written in the calendar\'s zone')
  const eventId = event.id ?? ''

  const stale = await failure(api.events.patch({ calendarId: 'primary', eventId, requestBody: { summary: 'X' } }, { headers: { 'If-Match': '"1"' } }))
  t.same(stale, {
    status: 412,
    error: { code: 412, message: 'Precondition Failed', errors: [{ domain: 'global', reason: 'conditionNotMet', message: 'Precondition Failed', locationType: 'header', location: 'If-Match' }] }
  })
  const patched = await api.events.patch({ calendarId: 'primary', eventId, requestBody: { summary: 'Dentist (moved)', start: { dateTime: '2030-05-02T09:00:00Z' }, end: { dateTime: '2030-05-02T10:00:00Z' } } }, { headers: { 'If-Match': event.etag ?? '' } })
  t.match(patched.data, { summary: 'Dentist (moved)', description: 'Bring the card', sequence: 1 }, 'patch keeps what it does not name; a new time raises the sequence')
  t.not(patched.data.etag, event.etag)
  t.ok(Date.parse(patched.data.updated ?? '') >= Date.parse(event.updated ?? ''))

  const replaced = await api.events.update({ calendarId: 'primary', eventId, requestBody: { summary: 'Dentist', start: { dateTime: '2030-05-02T09:00:00Z' }, end: { dateTime: '2030-05-02T10:00:00Z' } } }, { headers: { 'If-Match': patched.data.etag ?? '' } })
  t.notOk(replaced.data.description, 'update replaces the whole event')
  t.equal(replaced.data.sequence, 1, 'same time: same sequence')

  const got = await api.events.get({ calendarId: 'primary', eventId })
  t.equal(got.data.etag, replaced.data.etag)
  t.equal((await failure(api.events.delete({ calendarId: 'primary', eventId }, { headers: { 'If-Match': event.etag ?? '' } }))).status, 412)
  const deleted = await api.events.delete({ calendarId: 'primary', eventId }, { headers: { 'If-Match': replaced.data.etag ?? '' } })
  t.equal(deleted.status, 204)
  t.equal((await api.events.get({ calendarId: 'primary', eventId })).data.status, 'cancelled', 'a deleted event is still readable, cancelled')
  t.match(await failure(api.events.delete({ calendarId: 'primary', eventId })), { status: 410, error: { errors: [{ reason: 'deleted' }] } })

  const duplicate = await failure(api.events.insert({ calendarId: 'primary', requestBody: { id: eventId, start: { date: '2030-01-01' }, end: { date: '2030-01-02' } } }))
  t.match(duplicate, { status: 409, error: { errors: [{ reason: 'duplicate' }] } })

  const allDay = await api.events.insert({ calendarId: 'primary', requestBody: { summary: 'Holiday', start: { date: '2030-12-24' }, end: { date: '2030-12-26' } } })
  t.same([allDay.data.start, allDay.data.end], [{ date: '2030-12-24' }, { date: '2030-12-26' }], 'all-day: dates, end exclusive')
  t.match(await failure(api.events.insert({ calendarId: 'primary', requestBody: { start: { date: '2030-12-24' }, end: { date: '2030-12-24' } } })),
    { status: 400, error: { errors: [{ reason: 'timeRangeEmpty' }] } })
  t.match(await failure(api.events.insert({ calendarId: 'primary', requestBody: { start: { dateTime: '2030-12-24T10:00:00Z' } } })),
    { status: 400, error: { message: 'Missing end time.' } })
  t.match(await failure(api.events.insert({ calendarId: 'primary', requestBody: { start: { dateTime: '2030-12-24T10:00:00Z' }, end: { dateTime: '2030-12-24T11:00:00Z' }, recurrence: ['RRULE:FREQ=DAILY'] } })),
    { status: 400, error: { message: 'Missing time zone definition for start time.' } }, 'a series needs its time zone')

  const series = await api.events.insert({
    calendarId: 'primary',
    requestBody: { summary: 'Yoga', start: { dateTime: '2030-01-07T18:00:00', timeZone: BERLIN }, end: { dateTime: '2030-01-07T19:00:00', timeZone: BERLIN }, recurrence: ['RRULE:FREQ=WEEKLY;COUNT=5'] }
  })
  const moved = await api.events.patch({ calendarId: 'primary', eventId: `${series.data.id ?? ''}_20300114T170000Z`, requestBody: { start: { dateTime: '2030-01-14T19:00:00', timeZone: BERLIN }, end: { dateTime: '2030-01-14T20:00:00', timeZone: BERLIN } } })
  t.match(moved.data, { id: `${series.data.id ?? ''}_20300114T170000Z`, recurringEventId: series.data.id, summary: 'Yoga', iCalUID: series.data.iCalUID, originalStartTime: { dateTime: '2030-01-14T18:00:00+01:00' } },
    'patching an occurrence makes an exception')
})

test('authorization: 401 without or with a dead token, 403 without the scope, 404 for another account\'s calendar', async (t) => {
  const google = await startStandIn(t, { accounts: [{ email: ALICE }, { email: 'bob@example.com' }] })
  const noToken = await fetch(`${google.url}/calendar/v3/calendars/primary/events`)
  t.equal(noToken.status, 401)
  t.match(await noToken.json(), { error: { code: 401, errors: [{ domain: 'global', reason: 'required', location: 'Authorization' }] } })
  const badToken = await fetch(`${google.url}/calendar/v3/calendars/primary/events`, { headers: { authorization: 'Bearer ya29.nope' } })
  t.same(await badToken.json(), {
    error: { code: 401, message: 'Invalid Credentials', errors: [{ domain: 'global', reason: 'authError', message: 'Invalid Credentials', locationType: 'header', location: 'Authorization' }] }
  })

  const readonly = await calendarClient(google, ALICE, [CALENDAR_READONLY_SCOPE])
  t.equal((await readonly.events.list({ calendarId: 'primary' })).status, 200)
  t.match(await failure(readonly.events.insert({ calendarId: 'primary', requestBody: { start: { date: '2030-01-01' }, end: { date: '2030-01-02' } } })),
    { status: 403, error: { message: 'Request had insufficient authentication scopes.', errors: [{ reason: 'insufficientPermissions' }] } })
  t.equal((await failure(readonly.events.list({ calendarId: 'bob@example.com' }))).status, 404)

  const { client } = await connect(google, 'bob@example.com', [CALENDAR_SCOPE])
  const bob = calendar({ version: 'v3', rootUrl: google.rootUrl, auth: client })
  t.equal((await bob.events.list({ calendarId: 'primary' })).status, 200)
  await control(google, 'POST', '/accounts/bob@example.com/expire-access-tokens')
  t.equal((await failure(bob.events.list({ calendarId: 'primary' }))).status, 401, 'an access token ended early')
  await client.refreshAccessToken()
  t.equal((await bob.events.list({ calendarId: 'primary' })).status, 200, 'a refreshed one works')
  await control(google, 'POST', '/accounts/bob@example.com/revoke')
  const revoked = await failure(bob.events.list({ calendarId: 'primary' }))
  t.ok(revoked.status === 400 || revoked.status === 401, 'after revocation neither the access token nor a refresh works')
})

test('read-only calendars (accessRole reader, freeBusyReader): reads work, every event write is 403 requiredAccessLevel and stores nothing', async (t) => {
  const google = await startStandIn(t)
  const created = await control<{ calendars: Array<{ id: string, summary: string, accessRole: string }> }>(google, 'POST', '/accounts', {
    email: ALICE,
    timeZone: BERLIN,
    calendars: [{ summary: 'Team', accessRole: 'reader' }, { summary: 'Busy', accessRole: 'freeBusyReader' }, { summary: 'Shared', accessRole: 'writer' }]
  })
  t.equal(created.status, 201)
  t.same(created.body.calendars.map(({ summary, accessRole }) => [summary, accessRole]), [[ALICE, 'owner'], ['Team', 'reader'], ['Busy', 'freeBusyReader'], ['Shared', 'writer']])
  const idOf = (summary: string): string => created.body.calendars.find((entry) => entry.summary === summary)?.id ?? ''
  const team = idOf('Team')
  const busy = idOf('Busy')
  // The calendar's owner (another device) can still write to it; the account cannot.
  const planning = await control<{ id: string, etag: string }>(google, 'POST', `/calendars/${team}/events`, { summary: 'Planning', start: { dateTime: '2030-05-02T09:00:00Z' }, end: { dateTime: '2030-05-02T10:00:00Z' } })
  t.equal(planning.status, 201)
  const eventId = planning.body.id

  const api = await calendarClient(google, ALICE)
  const list = await api.calendarList.list()
  t.same(list.data.items?.map((item) => [item.summary, item.accessRole]), [[ALICE, 'owner'], ['Team', 'reader'], ['Busy', 'freeBusyReader'], ['Shared', 'writer']])
  t.equal((await api.calendarList.get({ calendarId: team })).data.accessRole, 'reader')
  t.same((await api.calendarList.list({ minAccessRole: 'writer' })).data.items?.map((item) => item.summary), [ALICE, 'Shared'], 'minAccessRole=writer leaves out what the account can only read')
  t.same((await api.calendarList.list({ minAccessRole: 'reader' })).data.items?.map((item) => item.summary), [ALICE, 'Team', 'Shared'])
  t.match(await failure(api.calendarList.list({ minAccessRole: 'admin' })), { status: 400, error: { errors: [{ reason: 'invalid', location: 'minAccessRole' }] } })

  const before = await api.events.list({ calendarId: team })
  t.equal(before.data.accessRole, 'reader', 'the events list says the role too')
  t.match(before.data.items, [{ id: eventId, summary: 'Planning', etag: planning.body.etag }])
  t.equal((await api.events.list({ calendarId: busy })).data.accessRole, 'freeBusyReader')
  t.equal((await api.events.get({ calendarId: team, eventId })).data.summary, 'Planning')
  const syncToken = before.data.nextSyncToken ?? ''

  const refused = {
    status: 403,
    error: {
      code: 403,
      message: 'You need to have writer access to this calendar.',
      errors: [{ domain: 'calendar', reason: 'requiredAccessLevel', message: 'You need to have writer access to this calendar.' }]
    }
  }
  const hour = { start: { dateTime: '2030-05-03T09:00:00Z' }, end: { dateTime: '2030-05-03T10:00:00Z' } }
  t.same(await failure(api.events.insert({ calendarId: team, requestBody: { summary: 'Mine', ...hour } })), refused, 'insert')
  t.same(await failure(api.events.insert({ calendarId: busy, requestBody: { summary: 'Mine', ...hour } })), refused, 'insert into a free/busy calendar')
  t.same(await failure(api.events.patch({ calendarId: team, eventId, requestBody: { summary: 'Renamed' } })), refused, 'patch')
  t.same(await failure(api.events.update({ calendarId: team, eventId, requestBody: { summary: 'Replaced', ...hour } })), refused, 'update')
  t.same(await failure(api.events.delete({ calendarId: team, eventId })), refused, 'delete')
  t.same(await failure(api.events.patch({ calendarId: team, eventId: 'nosuchevent', requestBody: { summary: 'x' } })), refused, 'the calendar is refused before its event is looked up')
  t.same(await failure(api.events.insert({ calendarId: team, requestBody: { summary: 'no end', start: hour.start } })), refused, 'and before the body is read')

  const after = await api.events.list({ calendarId: team, showDeleted: true })
  t.same(after.data.items?.map((item) => [item.id, item.summary, item.status, item.etag]), [[eventId, 'Planning', 'confirmed', planning.body.etag]], 'nothing stored, nothing changed')
  t.same((await api.events.list({ calendarId: team, syncToken })).data.items, [], 'no change for an incremental list either')
  t.same((await api.events.list({ calendarId: busy })).data.items, [])
  const stored = (await control<{ items: Array<Record<string, unknown>> }>(google, 'GET', `/calendars/${team}/events`)).body.items
  t.match(stored, [{ id: eventId, summary: 'Planning', status: 'confirmed' }])
  t.equal(stored.length, 1)

  const shared = await api.events.insert({ calendarId: idOf('Shared'), requestBody: { summary: 'Mine', ...hour } })
  t.equal(shared.status, 200, 'a writer calendar takes writes')
  t.equal((await api.events.insert({ calendarId: 'primary', requestBody: { summary: 'Mine', ...hour } })).status, 200)
})
