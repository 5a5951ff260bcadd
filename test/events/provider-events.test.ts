import { randomBytes } from 'node:crypto'
import { test, type Test } from 'tap'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import type { ProviderEvent, ProviderEventBatch, ProviderEventBatchResult } from '../../schemas/sync/index.js'
import { BACKEND_INTERNAL_PATHS } from '../../schemas/sync/index.js'

// The internal endpoint through which the Sync service hands the backend a provider calendar's
// events, as Sync calls it: over HTTP, with the service token, page by page.

const CONNECTION = 'c'.repeat(24)
const CALENDAR = 'primary'

function item (providerEventId: string, fields: Partial<ProviderEvent> = {}): ProviderEvent {
  return {
    providerEventId,
    updated: '2026-05-01T10:00:00.000Z',
    status: 'confirmed',
    content: { title: providerEventId, startDate: '2026-05-04T09:00:00+02:00', endDate: '2026-05-04T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' },
    ...fields
  }
}

/**
 * A backend and a new user of it: Sync's page sent as Sync sends it, and the user's May as "<start> <title>".
 * `replicaSet: false`: a standalone server, whose writes of one change are not one transaction.
 */
async function newUserWithPages (t: Test, label: string, { replicaSet = true } = {}) {
  const deps = await startDependencies(t, { replicaSet })
  const { app, config } = await buildApp(t, deps)
  const user = await signUp(app, { email: uniqueEmail(label), password: `pw-for-${label}-1` })
  const send = async (events: ProviderEvent[], provider: ProviderEventBatch['provider'] = 'google') => (await app.inject({
    method: 'POST',
    url: BACKEND_INTERNAL_PATHS.providerEvents,
    headers: { authorization: `Bearer ${config.backend.serviceToken}` },
    payload: { userId: user.userId, connectionId: CONNECTION, provider, calendarId: CALENDAR, events }
  })).json<ProviderEventBatchResult>()
  const titles = async () => ((await app.inject({ method: 'GET', url: '/api/event?start=2026-05-01T00:00:00Z&end=2026-06-01T00:00:00Z', headers: user.headers })).json() as Array<{ title: string, startDate: string }>)
    .map((event) => `${event.startDate} ${event.title}`)
  /**
   * A weekly series made here (three Mondays of May, 09:00 Berlin) and its copy at the provider
   * under `providerId`, linked as Sync's answer to our insert links it.
   */
  const syncedSeries = async (t: Test, seriesId: string, providerId: string) => {
    const rule = ['RRULE:FREQ=WEEKLY;COUNT=3']
    const shape = { startDate: '2026-05-04T09:00:00+02:00', endDate: '2026-05-04T10:00:00+02:00', timeZone: 'Europe/Berlin' }
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: seriesId, title: 'Weekly', ...shape, recurrence: { rule } } })).statusCode, 204)
    t.same((await send([item(providerId, { eventId: seriesId, content: { title: 'Weekly', ...shape, isAllDay: false, recurrence: rule } })])).unchanged, 1)
    return { rule, shape }
  }
  return { app, config, user, send, titles, syncedSeries }
}

test('provider pages reach the user\'s calendar', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const { app, config, log } = await buildApp(t, deps)
  const user = await signUp(app, { email: uniqueEmail('imported'), password: 'pw-for-imported-1' })
  const token = config.backend.serviceToken
  const send = async (batch: Partial<ProviderEventBatch>, authorization = `Bearer ${token}`) => await app.inject({
    method: 'POST',
    url: BACKEND_INTERNAL_PATHS.providerEvents,
    headers: { authorization },
    payload: { userId: user.userId, connectionId: CONNECTION, provider: 'google', calendarId: CALENDAR, events: [], ...batch }
  })
  const range = async () => (await app.inject({
    method: 'GET', url: '/api/event?start=2026-05-01T00:00:00Z&end=2026-06-01T00:00:00Z', headers: user.headers
  })).json() as Array<{ _id: string, title: string, startDate: string, status: string, origin: string, calendarId?: string, providerEventId?: string, recurrence?: { eventId?: string }, syncIssue?: unknown }>

  await t.test('only the Sync service, with the service token', async (t) => {
    for (const authorization of ['', 'Bearer wrong-token', `Basic ${token}`, user.headers.authorization ?? '']) {
      const answer = await send({ events: [item('sneaky')] }, authorization)
      t.equal(answer.statusCode, 401, `refused: ${authorization.split(' ')[0] ?? 'none'}`)
      t.equal(answer.json().code, 'SERVICE_TOKEN_REQUIRED')
    }
    t.same(await range(), [], 'nothing was written')
  })

  await t.test('a malformed page is refused with the schema\'s message and changes nothing', async (t) => {
    const answer = await send({ events: [{ ...item('x'), status: 'maybe' as never }] })
    t.equal(answer.statusCode, 400)
    t.match(answer.json().message, /status/)
    t.same(await range(), [])
  })

  const generation1 = randomBytes(4).toString('hex')
  await t.test('an import page: singles, all-day, a series, its exceptions (one before its master)', async (t) => {
    // The cancelled exception comes on an earlier page than its master.
    const early = await send({
      generation: generation1,
      events: [item('weekly_20260511T070000Z', { status: 'cancelled', recurringEventId: 'weekly', originalStartDate: '2026-05-11T09:00:00+02:00', content: undefined })]
    })
    t.same(early.json(), { created: 0, updated: 0, deleted: 0, unchanged: 0, waiting: 1, superseded: 0, rejected: 0 })
    t.same(await range(), [], 'a waiting exception is not shown')

    const page = await send({
      generation: generation1,
      events: [
        item('lunch', { iCalUID: 'lunch@example.com', etag: '"1"' }),
        item('holiday', { content: { title: 'Holiday', startDate: '2026-05-14', endDate: '2026-05-15', isAllDay: true, timeZone: 'Europe/Berlin' } }),
        item('weekly_20260518T070000Z', { recurringEventId: 'weekly', originalStartDate: '2026-05-18T09:00:00+02:00', content: { title: 'Weekly (moved)', startDate: '2026-05-19T09:00:00+02:00', endDate: '2026-05-19T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } }),
        item('weekly', { content: { title: 'Weekly', startDate: '2026-05-04T09:00:00+02:00', endDate: '2026-05-04T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin', recurrence: ['RRULE:FREQ=WEEKLY;COUNT=4'] } })
      ]
    })
    t.equal(page.statusCode, 200)
    t.same(page.json(), { created: 4, updated: 1, deleted: 0, unchanged: 0, waiting: 0, superseded: 0, rejected: 0 }, 'the waiting exception was linked (updated)')
    const events = await range()
    t.same(events.map((event) => [event.title, event.startDate]), [
      ['lunch', '2026-05-04T09:00:00+02:00'],
      ['Weekly', '2026-05-04T09:00:00+02:00'],
      ['Holiday', '2026-05-14'],
      ['Weekly (moved)', '2026-05-19T09:00:00+02:00'],
      ['Weekly', '2026-05-25T09:00:00+02:00']
    ], 'the cancelled occurrence of 11 May is gone and the moved one shows')
    t.ok(events.every((event) => event.origin === 'providerImport' && event.calendarId === CALENDAR), 'imported, in its calendar')
    t.equal(await app.outbox.pending(user.userId), 0, 'nothing is reported back to Sync')

    const replay = await send({ generation: generation1, events: [item('lunch', { iCalUID: 'lunch@example.com', etag: '"1"' })] })
    t.same(replay.json(), { created: 0, updated: 0, deleted: 0, unchanged: 1, waiting: 0, superseded: 0, rejected: 0 }, 'a replayed page changes nothing')
  })

  await t.test('incremental changes: a change, a cancellation, the provider echoing the same content', async (t) => {
    const answer = await send({
      events: [
        item('lunch', { updated: '2026-05-02T10:00:00.000Z', content: { title: 'Lunch with Ana', startDate: '2026-05-04T12:00:00+02:00', endDate: '2026-05-04T13:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } }),
        item('holiday', { updated: '2026-05-02T10:00:00.000Z', status: 'cancelled', content: undefined }),
        item('weekly', { updated: '2026-05-02T10:00:00.000Z', etag: '"2"', content: { title: 'Weekly', startDate: '2026-05-04T09:00:00+02:00', endDate: '2026-05-04T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin', recurrence: ['RRULE:FREQ=WEEKLY;COUNT=4'] } })
      ]
    })
    t.same(answer.json(), { created: 0, updated: 1, deleted: 1, unchanged: 1, waiting: 0, superseded: 0, rejected: 0 })
    const titles = (await range()).map((event) => event.title)
    t.ok(titles.includes('Lunch with Ana') && !titles.includes('Holiday'))
  })

  await t.test('the user\'s own later change wins over an older provider item', async (t) => {
    const lunch = (await range()).find((event) => event.title === 'Lunch with Ana')
    if (lunch === undefined) throw new Error('no lunch')
    const edit = await app.inject({
      method: 'PUT',
      url: `/api/event/${lunch._id}`,
      headers: user.headers,
      payload: { title: 'Lunch (moved here)', startDate: '2026-05-04T12:30:00+02:00', endDate: '2026-05-04T13:30:00+02:00', timeZone: 'Europe/Berlin', calendarId: CALENDAR, providerEventId: 'lunch', origin: 'providerImport' }
    })
    t.equal(edit.statusCode, 204)
    const stale = await send({ events: [item('lunch', { updated: '2026-05-03T10:00:00.000Z', content: { title: 'Stale lunch', startDate: '2026-05-04T12:00:00+02:00', endDate: '2026-05-04T13:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } })] })
    t.same(stale.json().superseded, 1)
    t.ok((await range()).some((event) => event.title === 'Lunch (moved here)'), 'the user\'s edit stays')
  })

  await t.test('a re-import switches to the new data at once, with no empty calendar between', async (t) => {
    const generation2 = randomBytes(4).toString('hex')
    const first = await send({ generation: generation2, events: [item('weekly', { updated: '2026-05-05T10:00:00.000Z', content: { title: 'Weekly', startDate: '2026-05-04T09:00:00+02:00', endDate: '2026-05-04T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin', recurrence: ['RRULE:FREQ=WEEKLY;COUNT=4'] } })] })
    t.equal(first.statusCode, 200)
    t.ok((await range()).length >= 4, 'the old data is still there while the import runs')
    const last = await send({ generation: generation2, complete: true, events: [item('dentist', { updated: '2026-05-05T10:00:00.000Z' })] })
    t.equal(last.json().created, 1)
    const titles = (await range()).map((event) => event.title)
    t.notOk(titles.includes('Lunch (moved here)'), 'what the new import did not bring is gone')
    t.ok(titles.includes('dentist') && titles.includes('Weekly'))
    t.notOk(titles.includes('Weekly (moved)'), 'exceptions the new import did not bring are gone too')
  })

  await t.test('the user\'s own event written to the provider gains its identity', async (t) => {
    const own = 'e'.repeat(24)
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: own, title: 'Mine', startDate: '2026-05-20T08:00:00Z', endDate: '2026-05-20T09:00:00Z' } })).statusCode, 204)
    const link = await send({ events: [item('google-mine', { eventId: own, updated: '2099-01-01T00:00:00.000Z', content: { title: 'Mine', startDate: '2026-05-20T08:00:00Z', endDate: '2026-05-20T09:00:00Z', isAllDay: false, timeZone: 'UTC' } })] })
    t.same(link.json().unchanged, 1)
    const mine = (await app.inject({ method: 'GET', url: `/api/event/${own}`, headers: user.headers })).json()
    t.equal(mine.providerEventId, 'google-mine')
    t.equal(mine.calendarId, CALENDAR)
    t.equal(mine.origin, 'compass', 'still the user\'s own event')
  })

  await t.test('an event whose change its provider refused is marked until Sync says the change is there; its later edits keep the mark', async (t) => {
    const own = 'e'.repeat(24)
    const issue = { provider: 'google', reason: 'readOnly', message: 'Google Calendar lets this account only read this calendar: the change is kept here only.', retrying: false, at: '2026-05-20T07:00:00.000Z' }
    const mark = async (body: Record<string, unknown>, authorization = `Bearer ${token}`) => await app.inject({
      method: 'POST', url: BACKEND_INTERNAL_PATHS.providerWriteState, headers: { authorization }, payload: { userId: user.userId, connectionId: CONNECTION, eventId: own, ...body }
    })
    const read = async () => (await app.inject({ method: 'GET', url: `/api/event/${own}`, headers: user.headers })).json()
    t.equal((await mark({ issue }, user.headers.authorization ?? '')).statusCode, 401, 'a person\'s session cannot mark an event')
    t.equal((await mark({ issue: { ...issue, reason: 'because' } })).statusCode, 400, 'an unknown reason is refused')
    t.notOk('syncIssue' in await read(), 'and nothing was marked')

    const marked = await mark({ issue })
    t.equal(marked.statusCode, 200, marked.body)
    t.same(marked.json(), { updated: true })
    t.same((await read()).syncIssue, issue, 'the event as read carries the issue')
    t.same((await range()).find((event) => event._id === own)?.syncIssue, issue, 'and so does a range read')

    // A client that sends back what it read (the issue included) is not refused; the mark is the server's.
    const event = await read()
    const edit = await app.inject({ method: 'PUT', url: `/api/event/${own}`, headers: user.headers, payload: { ...event, location: 'Room 2', syncIssue: { reason: 'forged' } } })
    t.equal(edit.statusCode, 204, edit.body)
    const edited = await read()
    t.equal(edited.location, 'Room 2')
    t.same(edited.syncIssue, issue, 'a later edit keeps the mark until Sync writes it')

    t.same((await mark({ issue: null })).json(), { updated: true })
    t.notOk('syncIssue' in await read(), 'cleared when the change reached the provider')
    t.same((await mark({ eventId: 'f'.repeat(24), issue })).json(), { updated: false }, 'an event not stored is not made up')
    t.same((await mark({ issue })).json(), { updated: true }, 'marked again: removing the connection takes the mark too')
  })

  await t.test('a provider series with a rule refused here is kept as one event, and the page still applies', async (t) => {
    const answer = await send({
      events: [
        item('every-minute', { content: { title: 'Every minute', startDate: '2026-05-06T09:00:00Z', endDate: '2026-05-06T09:01:00Z', isAllDay: false, timeZone: 'UTC', recurrence: ['RRULE:FREQ=MINUTELY'] } }),
        item('never', { content: { title: 'Never', startDate: '2026-05-07T09:00:00Z', endDate: '2026-05-07T10:00:00Z', isAllDay: false, timeZone: 'UTC', recurrence: ['RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30'] } }),
        item('beside', { content: { title: 'Beside', startDate: '2026-05-08T09:00:00Z', endDate: '2026-05-08T10:00:00Z', isAllDay: false, timeZone: 'UTC' } })
      ]
    })
    t.equal(answer.statusCode, 200)
    t.match(answer.json(), { created: 3, rejected: 0 })
    const shown = (await range()).filter((event) => ['Every minute', 'Never', 'Beside'].includes(event.title))
    t.same(shown.map((event) => [event.title, event.startDate]), [
      ['Every minute', '2026-05-06T09:00:00Z'], ['Never', '2026-05-07T09:00:00Z'], ['Beside', '2026-05-08T09:00:00Z']
    ], 'each series once, at its own start')
    const series = shown[0] as { _id: string }
    t.equal((await app.inject({ method: 'GET', url: `/api/event/${series._id}_20260506T090100Z`, headers: user.headers })).statusCode, 404, 'no occurrence of it is made')
    const notes = log.lines().filter((line) => line.msg === 'provider series kept without its occurrences')
    t.same(notes.map((line) => line.providerEventId), ['every-minute', 'never'])
    t.match(notes[0], { reason: /FREQ=MINUTELY is not allowed/ })
    const removed = await send({ events: ['every-minute', 'never', 'beside'].map((id) => item(id, { status: 'cancelled', content: undefined })) })
    t.equal(removed.json().deleted, 3)
  })

  await t.test('removing the connection removes imported events and keeps the user\'s own', async (t) => {
    const connected = async () => (await app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })).json().providerConnected
    t.equal(await connected(), true, 'the pages named the connection: the profile says connected')
    const answer = await app.inject({
      method: 'POST',
      url: BACKEND_INTERNAL_PATHS.providerCalendarRemoval,
      headers: { authorization: `Bearer ${token}` },
      payload: { userId: user.userId, connectionId: CONNECTION }
    })
    t.equal(answer.statusCode, 200)
    t.ok(answer.json().deleted >= 2)
    const left = await range()
    t.same(left.map((event) => event.title), ['Mine'])
    t.notOk(left[0]?.providerEventId, 'without its provider identity')
    t.notOk(left[0]?.syncIssue, 'and without a mark of a provider it no longer has')
    t.equal(await connected(), false, 'and the connection is forgotten')
  })
})

test('an exception of a series made here is applied as an exception of the series, never onto it', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const { app, config } = await buildApp(t, deps)
  const user = await signUp(app, { email: uniqueEmail('exceptions'), password: 'pw-for-exceptions-1' })
  const send = async (events: ProviderEvent[]) => (await app.inject({
    method: 'POST',
    url: BACKEND_INTERNAL_PATHS.providerEvents,
    headers: { authorization: `Bearer ${config.backend.serviceToken}` },
    payload: { userId: user.userId, connectionId: CONNECTION, provider: 'google', calendarId: CALENDAR, events }
  })).json()
  const range = async () => ((await app.inject({ method: 'GET', url: '/api/event?start=2026-05-01T00:00:00Z&end=2026-06-01T00:00:00Z', headers: user.headers })).json() as Array<{ _id: string, title: string, startDate: string }>)
    .map((event) => `${event.startDate} ${event.title}`)
  const get = async (id: string) => (await app.inject({ method: 'GET', url: `/api/event/${id}`, headers: user.headers })).json()
  const series = 'd'.repeat(24)
  const rule = ['RRULE:FREQ=WEEKLY;COUNT=4']
  const shape = { startDate: '2026-05-04T09:00:00+02:00', endDate: '2026-05-04T10:00:00+02:00', timeZone: 'Europe/Berlin' }
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: series, title: 'Weekly', ...shape, recurrence: { rule } } })).statusCode, 204)
  t.same((await send([item('gweekly', { eventId: series, content: { title: 'Weekly', ...shape, isAllDay: false, recurrence: rule } })])).unchanged, 1, 'the series written to the provider is linked')
  // The user moves the second occurrence here; the provider has not heard of it yet.
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${series}_20260511T070000Z`, headers: user.headers, payload: { title: 'Weekly', startDate: '2026-05-11T11:00:00+02:00', endDate: '2026-05-11T12:00:00+02:00', timeZone: 'Europe/Berlin' } })).statusCode, 204)
  const editHere = await get(`${series}_20260511T070000Z`)

  await t.test('an exception carrying the series\' own id (a provider copies the master\'s properties onto it) moves its occurrence, and the series stays whole', async (t) => {
    const answer = await send([item('gweekly_20260518T070000Z', {
      eventId: series,
      updated: '2026-05-02T10:00:00.000Z',
      recurringEventId: 'gweekly',
      originalStartDate: '2026-05-18T09:00:00+02:00',
      content: { title: 'Weekly', startDate: '2026-05-18T12:00:00+02:00', endDate: '2026-05-18T13:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' }
    })])
    t.match(answer, { created: 1, updated: 0 })
    t.match(await get(series), { providerEventId: 'gweekly', recurrence: { rule } }, 'the series keeps its provider id and rule')
    t.same(await range(), [
      '2026-05-04T09:00:00+02:00 Weekly',
      '2026-05-11T11:00:00+02:00 Weekly',
      '2026-05-18T12:00:00+02:00 Weekly',
      '2026-05-25T09:00:00+02:00 Weekly'
    ])
  })

  await t.test('an older exception of an occurrence edited here is superseded by the edit', async (t) => {
    const answer = await send([item('gweekly_20260511T070000Z', {
      updated: '2000-01-01T00:00:00.000Z', recurringEventId: 'gweekly', originalStartDate: '2026-05-11T09:00:00+02:00', content: { title: 'Stale', ...shape, startDate: '2026-05-11T09:00:00+02:00', endDate: '2026-05-11T10:00:00+02:00', isAllDay: false }
    })])
    t.match(answer, { superseded: 1, created: 0 })
    t.ok((await range()).includes('2026-05-11T11:00:00+02:00 Weekly'))
  })

  await t.test('the provider\'s newer exception of that occurrence updates the edit made here: one occurrence, found by series and original start', async (t) => {
    const answer = await send([item('gweekly_20260511T070000Z', {
      updated: '2099-01-01T00:00:00.000Z', recurringEventId: 'gweekly', originalStartDate: '2026-05-11T07:00:00Z', content: { title: 'Weekly (there)', startDate: '2026-05-11T15:00:00+02:00', endDate: '2026-05-11T16:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' }
    })])
    t.match(answer, { updated: 1, created: 0 })
    t.same((await range()).filter((line) => line.startsWith('2026-05-11')), ['2026-05-11T15:00:00+02:00 Weekly (there)'])
    t.match(await get(`${series}_20260511T070000Z`), { _id: editHere._id, providerEventId: 'gweekly_20260511T070000Z' }, 'the same stored edit, now linked')
  })

  await t.test('an exception written back for an edit made here links to that edit, never to the series', async (t) => {
    t.equal((await app.inject({ method: 'PUT', url: `/api/event/${series}_20260525T070000Z`, headers: user.headers, payload: { title: 'Last one', startDate: '2026-05-25T09:00:00+02:00', endDate: '2026-05-25T10:00:00+02:00', timeZone: 'Europe/Berlin' } })).statusCode, 204)
    const edit = await get(`${series}_20260525T070000Z`)
    const answer = await send([item('gweekly_20260525T070000Z', {
      eventId: edit._id, updated: '2099-01-01T00:00:00.000Z', recurringEventId: 'gweekly', originalStartDate: '2026-05-25T09:00:00+02:00', content: { title: 'Last one (there)', startDate: '2026-05-25T09:00:00+02:00', endDate: '2026-05-25T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' }
    })])
    t.match(answer, { updated: 1 })
    t.match(await get(`${series}_20260525T070000Z`), { _id: edit._id, title: 'Last one (there)', providerEventId: 'gweekly_20260525T070000Z' })
    const stale = await send([item('gweekly_20260525T070000Z', { eventId: edit._id, updated: '2000-01-01T00:00:00.000Z', recurringEventId: 'gweekly', originalStartDate: '2026-05-25T09:00:00+02:00' })])
    t.match(stale, { superseded: 1 })
    t.match(await get(series), { providerEventId: 'gweekly', recurrence: { rule } })
  })
})

test('an all-day event keeps its own zone when the provider\'s copy comes back in the calendar\'s', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const { app, config } = await buildApp(t, deps)
  const user = await signUp(app, { email: uniqueEmail('all-day'), password: 'pw-for-all-day-1' })
  const send = async (events: ProviderEvent[]) => (await app.inject({
    method: 'POST',
    url: BACKEND_INTERNAL_PATHS.providerEvents,
    headers: { authorization: `Bearer ${config.backend.serviceToken}` },
    payload: { userId: user.userId, connectionId: CONNECTION, provider: 'google', calendarId: CALENDAR, events }
  })).json()
  const get = async (id: string) => (await app.inject({ method: 'GET', url: `/api/event/${id}`, headers: user.headers })).json()
  const own = '9'.repeat(24)
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: own, title: 'Offsite', startDate: '2026-05-10', endDate: '2026-05-12', isAllDay: true, timeZone: 'America/Los_Angeles' } })).statusCode, 204)
  const berlin = (title: string, fields: Partial<ProviderEvent['content'] & object> = {}) => ({ title, startDate: '2026-05-10', endDate: '2026-05-12', isAllDay: true, timeZone: 'Europe/Berlin', ...fields })
  await send([item('offsite', { eventId: own, content: berlin('Offsite') })])
  t.match(await send([item('offsite', { updated: '2099-01-01T00:00:00.000Z', content: berlin('Offsite') })]), { unchanged: 1 }, 'the echo in the calendar\'s zone changes nothing')
  t.match(await send([item('offsite', { updated: '2099-01-02T00:00:00.000Z', content: berlin('Offsite (moved)', { startDate: '2026-05-11' }) })]), { updated: 1 })
  t.match(await get(own), { title: 'Offsite (moved)', startDate: '2026-05-11', timeZone: 'America/Los_Angeles' })
  t.match(await send([item('offsite', { updated: '2099-01-03T00:00:00.000Z', content: { title: 'Offsite call', startDate: '2026-05-11T09:00:00+02:00', endDate: '2026-05-11T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } })]), { updated: 1 })
  t.match(await get(own), { isAllDay: false, timeZone: 'Europe/Berlin' }, 'a timed event takes the provider\'s zone')
})

test('an occurrence edited here, then cut off by "this and following": the provider\'s copy of the edit, read before the cut reached it, stays out', async (t) => {
  const { app, user, send, titles, syncedSeries } = await newUserWithPages(t, 'cut-edit')
  const series = 'e'.repeat(24)
  const { shape } = await syncedSeries(t, series, 'gcut')
  // The third occurrence renamed here ("this event"), then the series cut from it ("this and following").
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${series}_20260518T070000Z`, headers: user.headers, payload: { title: 'Renamed', ...shape, startDate: '2026-05-18T09:00:00+02:00', endDate: '2026-05-18T10:00:00+02:00' } })).statusCode, 204)
  const edit = (await app.inject({ method: 'GET', url: `/api/event/${series}_20260518T070000Z`, headers: user.headers })).json<{ _id: string }>()
  const readBefore = new Date().toISOString()
  t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${series}_20260518T070000Z?applyTo=thisAndFollowing`, headers: user.headers })).statusCode, 204)
  t.same(await titles(), ['2026-05-04T09:00:00+02:00 Weekly', '2026-05-11T09:00:00+02:00 Weekly'])
  // Sync hears the edit is gone too, so a write of it still on its way does not reach the provider after the cut.
  const reports = (await app.mongo.db.collection('syncOutbox').find({ user: user.userId }).sort({ createdAt: 1, seq: 1 }).toArray())
    .map((record) => (record['entry'] as { report?: { eventId: string, operation: string } }).report)
  t.match(reports.at(-1), { eventId: edit._id, operation: 'delete' }, 'the cut-off edit is reported deleted after the series\' update')
  t.match(reports.at(-2), { eventId: series, operation: 'update' })

  // Google's copy of the renamed occurrence (our write of the edit names it by our id), read before the cut arrived.
  const stale = await send([item('gcut_20260518T070000Z', {
    eventId: edit._id,
    updated: readBefore,
    recurringEventId: 'gcut',
    originalStartDate: '2026-05-18T09:00:00+02:00',
    content: { title: 'Renamed', startDate: '2026-05-18T09:00:00+02:00', endDate: '2026-05-18T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' }
  })])
  t.match(stale, { created: 0, superseded: 1 })
  t.same(await titles(), ['2026-05-04T09:00:00+02:00 Weekly', '2026-05-11T09:00:00+02:00 Weekly'], 'the cut-off occurrence does not come back')
})

test('an occurrence edited here while the provider\'s exception of it is imported, neither seeing the other: one event, with the provider\'s identity', async (t) => {
  const { app, user, send, titles, syncedSeries } = await newUserWithPages(t, 'fold')
  const series = 'd'.repeat(24)
  const { shape } = await syncedSeries(t, series, 'gfold')
  const moved = (week: string, updated: string) => item(`gfold_202605${week}T070000Z`, {
    updated, recurringEventId: 'gfold', originalStartDate: `2026-05-${week}T09:00:00+02:00`, content: { title: 'Weekly', startDate: `2026-05-${week}T11:00:00+02:00`, endDate: `2026-05-${week}T12:00:00+02:00`, isAllDay: false, timeZone: 'Europe/Berlin' }
  })
  const rename = async (week: string, title: string) => await app.inject({ method: 'PUT', url: `/api/event/${series}_202605${week}T070000Z`, headers: user.headers, payload: { title, ...shape, startDate: `2026-05-${week}T09:00:00+02:00`, endDate: `2026-05-${week}T10:00:00+02:00` } })
  const store = app.eventStore
  const stored = async (week: string) => await app.mongo.db.collection('events').find({ user: user.userId, 'recurrence.eventId': series, originalStartDate: `2026-05-${week}T09:00:00+02:00` }).toArray()

  // The page reads the stored edits, then the person's rename is stored, then the page writes.
  const findEditsOf = store.findEditsOf.bind(store)
  store.findEditsOf = async (...args) => {
    const seen = await findEditsOf(...args)
    t.equal((await rename('11', 'Renamed here')).statusCode, 204)
    return seen
  }
  await send([moved('11', '2026-05-01T10:00:00.000Z')])
  store.findEditsOf = findEditsOf
  t.same(await titles(), ['2026-05-04T09:00:00+02:00 Weekly', '2026-05-11T09:00:00+02:00 Renamed here', '2026-05-18T09:00:00+02:00 Weekly'], 'one occurrence on 11 May: the rename, newer than the move it did not see')
  t.match(await stored('11'), [{ title: 'Renamed here', providerEventId: 'gfold_20260511T070000Z', providerBase: { startDate: '2026-05-11T11:00:00+02:00' } }], 'one record, linked, its write merged against the provider\'s move')

  // The rename looks for an edit of the occurrence, then the page is stored, then the rename.
  const findOccurrenceEdit = store.findOccurrenceEdit.bind(store)
  store.findOccurrenceEdit = async (...args) => {
    const seen = await findOccurrenceEdit(...args)
    store.findOccurrenceEdit = findOccurrenceEdit
    await send([moved('18', new Date(Date.now() + 60_000).toISOString())])
    return seen
  }
  t.equal((await rename('18', 'Renamed too')).statusCode, 204)
  t.same(await titles(), ['2026-05-04T09:00:00+02:00 Weekly', '2026-05-11T09:00:00+02:00 Renamed here', '2026-05-18T11:00:00+02:00 Weekly'], 'one occurrence on 18 May: the provider\'s move, the newer one')
  const [kept] = await stored('18')
  t.equal((await stored('18')).length, 1)
  t.match(kept, { providerEventId: 'gfold_20260518T070000Z', origin: 'compass' }, 'the edit made here, which its report to the provider names, holds it')
})

test('pages that cross a change made here: an echo of our own write, a page read before our deletion, a deletion without a time', async (t) => {
  const { app, user, send, titles } = await newUserWithPages(t, 'crossing')
  const series = 'f'.repeat(24)
  const rule = ['RRULE:FREQ=WEEKLY;COUNT=2']
  const shape = { startDate: '2026-05-04T09:00:00+02:00', endDate: '2026-05-04T10:00:00+02:00', timeZone: 'Europe/Berlin' }
  const copy = (title: string, fields: Partial<ProviderEvent>) => item('gseries', { eventId: series, etag: '"1"', content: { title, ...shape, isAllDay: false, recurrence: rule }, ...fields })

  // Made here and renamed at once; Google's copy of the insert (the first title) is stamped later than the rename.
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: series, title: 'First', ...shape, recurrence: { rule } } })).statusCode, 204)
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${series}`, headers: user.headers, payload: { title: 'Renamed', ...shape, recurrence: { rule } } })).statusCode, 204)
  const later = new Date(Date.now() + 60_000).toISOString()
  t.same((await send([copy('First', { updated: later })])).unchanged, 1, 'the insert\'s answer links the series')

  await t.test('a page read before our deletion reached Google does not bring the series back', async (t) => {
    const before = new Date().toISOString()
    t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${series}`, headers: user.headers })).statusCode, 204)
    const stale = await send([
      copy('Renamed', { updated: before, etag: '"2"' }),
      item('gseries_20260511T070000Z', { status: 'cancelled', updated: new Date(0).toISOString(), recurringEventId: 'gseries', originalStartDate: '2026-05-11T09:00:00+02:00', content: undefined })
    ])
    t.same(stale, { created: 0, updated: 0, deleted: 0, unchanged: 0, waiting: 0, superseded: 2, rejected: 0 })
    // Our own insert's answer arriving only now names the series by our id.
    t.same((await send([item('gother', { eventId: series, updated: before })])).superseded, 1)
    t.same(await titles(), [])
    t.equal((await app.inject({ method: 'GET', url: `/api/event/${series}`, headers: user.headers })).statusCode, 404)
  })

  await t.test('our own write echoed after our deletion stays out, however late the provider stamped it; the same id made again here takes it', async (t) => {
    const single = '9'.repeat(24)
    // In June: outside the month the other checks read.
    const body = { title: 'Made and gone', startDate: '2026-06-10T09:00:00+02:00', endDate: '2026-06-10T10:00:00+02:00', timeZone: 'Europe/Berlin' }
    const echo = (fields: Partial<ProviderEvent>) => item('gechoed', { eventId: single, etag: '"7"', updated: new Date(Date.now() + 180_000).toISOString(), content: { ...body, isAllDay: false }, ...fields })
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: single, ...body } })).statusCode, 204)
    t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${single}`, headers: user.headers })).statusCode, 204)
    t.same((await send([echo({ ownWrite: true })])).superseded, 1, 'the insert our Sync made, read back after the deletion')
    t.equal((await app.inject({ method: 'GET', url: `/api/event/${single}`, headers: user.headers })).statusCode, 404)

    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: single, ...body, title: 'Made again' } })).statusCode, 204, 'an undo makes it again under its id')
    const relinked = await send([echo({ ownWrite: true, content: { ...body, title: 'Made again', isAllDay: false } })])
    t.equal(relinked.superseded, 0, 'the live event takes its provider copy')
    t.equal((await app.inject({ method: 'GET', url: `/api/event/${single}`, headers: user.headers })).json().providerEventId, 'gechoed')
  })

  await t.test('our insert read back before it named our event, imported as a new one, gives way when the insert\'s answer names it', async (t) => {
    const own = '8'.repeat(24)
    const body = { title: 'Made here', startDate: '2026-06-12T09:00:00+02:00', endDate: '2026-06-12T10:00:00+02:00', timeZone: 'Europe/Berlin' }
    const june = async () => ((await app.inject({ method: 'GET', url: '/api/event?start=2026-06-12T00:00:00Z&end=2026-06-13T00:00:00Z', headers: user.headers })).json() as Array<{ _id: string, title: string }>)
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: own, ...body } })).statusCode, 204)
    const read = (fields: Partial<ProviderEvent>) => item('gracing', { etag: '"1"', updated: new Date(Date.now() + 240_000).toISOString(), content: { ...body, isAllDay: false }, ...fields })
    t.same((await send([read({})])).created, 1, 'a pull between the insert and its record: no event id yet')
    t.equal((await june()).length, 2, 'two events for a moment')
    const answered = await send([read({ eventId: own, ownWrite: true })])
    t.equal(answered.deleted, 1, 'the imported copy goes')
    t.same((await june()).map((event) => event._id), [own], 'one event, ours')
    t.equal((await app.inject({ method: 'GET', url: `/api/event/${own}`, headers: user.headers })).json().providerEventId, 'gracing', 'linked to the provider event')
    t.same((await send([read({ eventId: own, ownWrite: true })])).deleted, 0, 'a repeat changes nothing')
    t.equal((await june()).length, 1)
  })

  await t.test('a change at the provider after our deletion is the newer version, and comes back', async (t) => {
    t.same((await send([copy('Changed at Google', { updated: new Date(Date.now() + 120_000).toISOString(), etag: '"3"' })])).created, 1)
    t.same(await titles(), ['2026-05-04T09:00:00+02:00 Changed at Google', '2026-05-11T09:00:00+02:00 Changed at Google'])
  })

  await t.test('a deletion at the provider without a time applies, unless the event was changed here since the provider\'s version', async (t) => {
    const imported = (at: string) => item('gsingle', { updated: at, content: { title: 'Single', startDate: '2026-05-20T09:00:00+02:00', endDate: '2026-05-20T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } })
    const gone = (id: string) => item(id, { status: 'cancelled', updated: new Date(0).toISOString(), content: undefined })
    t.same((await send([gone('gseries')])).deleted, 1, 'the series is deleted at the provider')
    t.same((await send([imported('2026-05-02T10:00:00.000Z')])).created, 1)
    const single = ((await app.inject({ method: 'GET', url: '/api/event?start=2026-05-20T00:00:00Z&end=2026-05-21T00:00:00Z', headers: user.headers })).json() as Array<{ _id: string }>)[0]?._id
    t.equal((await app.inject({ method: 'PUT', url: `/api/event/${single ?? ''}`, headers: user.headers, payload: { title: 'Single, edited here', startDate: '2026-05-20T09:00:00+02:00', endDate: '2026-05-20T10:00:00+02:00', timeZone: 'Europe/Berlin' } })).statusCode, 204)
    t.same((await send([gone('gsingle')])).superseded, 1, 'the edit made here goes to the provider, which decides with its own times')
    t.same(await titles(), ['2026-05-20T09:00:00+02:00 Single, edited here'])
  })
})

test('occurrences changed at the provider, their series renamed here, then deleted there without a time: they go here too', async (t) => {
  const { app, user, send, titles, syncedSeries } = await newUserWithPages(t, 'renamed-then-gone')
  const seriesId = 'e'.repeat(24)
  const { rule, shape } = await syncedSeries(t, seriesId, 'gweekly')
  const second = { recurringEventId: 'gweekly', originalStartDate: '2026-05-11T09:00:00+02:00' }
  const renamedThere = item('gweekly_20260511T070000Z', { ...second, updated: new Date().toISOString(), content: { title: 'Renamed there', startDate: '2026-05-11T09:00:00+02:00', endDate: '2026-05-11T10:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } })
  const third = { recurringEventId: 'gweekly', originalStartDate: '2026-05-18T09:00:00+02:00' }
  const movedThere = item('gweekly_20260518T070000Z', { ...third, updated: new Date().toISOString(), content: { title: 'Weekly', startDate: '2026-05-18T11:00:00+02:00', endDate: '2026-05-18T12:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } })
  t.same((await send([renamedThere, movedThere])).created, 2)
  // The series' new title does not reach the occurrence that has its own, and reaches the moved one: neither is a change of the occurrence's own.
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${seriesId}`, headers: user.headers, payload: { title: 'Renamed here', ...shape, recurrence: { rule } } })).statusCode, 204)
  t.same(await titles(), ['2026-05-04T09:00:00+02:00 Renamed here', '2026-05-11T09:00:00+02:00 Renamed there', '2026-05-18T11:00:00+02:00 Renamed here'])
  const cancelled = (id: string, occurrence: typeof second) => item(id, { ...occurrence, status: 'cancelled', updated: new Date(0).toISOString(), content: undefined })
  const gone = await send([cancelled('gweekly_20260511T070000Z', second), cancelled('gweekly_20260518T070000Z', third)])
  t.equal(gone.superseded, 0, 'neither is counted older than the rename of its series')
  t.same(await titles(), ['2026-05-04T09:00:00+02:00 Renamed here'])
})

test('a series cancelled at the provider, renamed here between the page\'s read and its write: the series and its edited occurrence stay', async (t) => {
  const { app, user, send, titles, syncedSeries } = await newUserWithPages(t, 'cancel-rename')
  const series = 'b'.repeat(24)
  const { shape, rule } = await syncedSeries(t, series, 'gcancel')
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${series}_20260511T070000Z`, headers: user.headers, payload: { title: 'Moved here', ...shape, startDate: '2026-05-11T11:00:00+02:00', endDate: '2026-05-11T12:00:00+02:00' } })).statusCode, 204)
  const cancelledAt = new Date().toISOString()
  const store = app.eventStore
  const findByProviderIds = store.findByProviderIds.bind(store)
  store.findByProviderIds = async (...args) => {
    const seen = await findByProviderIds(...args)
    store.findByProviderIds = findByProviderIds
    t.equal((await app.inject({ method: 'PUT', url: `/api/event/${series}`, headers: user.headers, payload: { title: 'Weekly (kept)', ...shape, recurrence: { rule } } })).statusCode, 204)
    return seen
  }
  t.match(await send([item('gcancel', { status: 'cancelled', updated: cancelledAt, content: undefined })]), { superseded: 1, deleted: 0 }, 'planned again, the rename is newer than the cancellation')
  t.same(await titles(), ['2026-05-04T09:00:00+02:00 Weekly (kept)', '2026-05-11T11:00:00+02:00 Moved here', '2026-05-18T09:00:00+02:00 Weekly (kept)'], 'the series and its moved occurrence')
})

test('a person\'s edit planned before a re-import\'s page reached the event keeps the page\'s generation: the event stays when the re-import completes', async (t) => {
  const { app, config, user, titles } = await newUserWithPages(t, 'reimport-edit')
  const page = async (generation: string, events: ProviderEvent[], complete = false) => (await app.inject({
    method: 'POST',
    url: BACKEND_INTERNAL_PATHS.providerEvents,
    headers: { authorization: `Bearer ${config.backend.serviceToken}` },
    payload: { userId: user.userId, connectionId: CONNECTION, provider: 'google', calendarId: CALENDAR, generation, ...(complete ? { complete } : {}), events }
  })).json<ProviderEventBatchResult>()
  t.match(await page('first', [item('dentist'), item('lunch', { content: { title: 'lunch', startDate: '2026-05-05T12:00:00+02:00', endDate: '2026-05-05T13:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } })], true), { created: 2 })
  const dentist = (await app.mongo.db.collection('events').findOne({ user: user.userId, providerEventId: 'dentist' }))?.['eventId'] as string
  const store = app.eventStore
  const findById = store.findById.bind(store)
  // Google's sync token expired: a re-import reads the calendar again. Its page with the dentist
  // arrives after the person's rename read the event, before the rename is written.
  store.findById = async (...args) => {
    const seen = await findById(...args)
    store.findById = findById
    t.match(await page('second', [item('dentist')]), { unchanged: 1 }, 'the re-import\'s page files the event under its generation')
    return seen
  }
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${dentist}`, headers: user.headers, payload: { title: 'Dentist (moved here)', startDate: '2026-05-04T09:00:00+02:00', endDate: '2026-05-04T10:00:00+02:00', timeZone: 'Europe/Berlin' } })).statusCode, 204)
  t.match(await page('second', [item('lunch', { content: { title: 'lunch', startDate: '2026-05-05T12:00:00+02:00', endDate: '2026-05-05T13:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } })], true), { deleted: 0 }, 'the re-import completes and removes nothing it read')
  t.same(await titles(), ['2026-05-04T09:00:00+02:00 Dentist (moved here)', '2026-05-05T12:00:00+02:00 lunch'], 'the renamed event stays')
  t.match(await app.mongo.db.collection('events').findOne({ user: user.userId, providerEventId: 'dentist' }), { generation: 'second', providerEventId: 'dentist', calendarId: CALENDAR })
})

test('a person\'s rename that comes while a page folds the occurrence\'s two records is kept', async (t) => {
  const { app, user, send, titles, syncedSeries } = await newUserWithPages(t, 'fold-rename')
  const series = 'c'.repeat(24)
  const { shape } = await syncedSeries(t, series, 'gfold2')
  const rename = async (title: string) => await app.inject({ method: 'PUT', url: `/api/event/${series}_20260511T070000Z`, headers: user.headers, payload: { title, ...shape, startDate: '2026-05-11T09:00:00+02:00', endDate: '2026-05-11T10:00:00+02:00' } })
  const store = app.eventStore
  // The page reads the stored edits, then the person's first rename is stored; the page writes the
  // provider's exception and folds the two records, and the second rename comes in the middle of it.
  const findEditsOf = store.findEditsOf.bind(store)
  const replaceOne = store.events.replaceOne.bind(store.events)
  store.findEditsOf = async (...args) => {
    const seen = await findEditsOf(...args)
    store.findEditsOf = findEditsOf
    t.equal((await rename('Renamed here')).statusCode, 204)
    store.events.replaceOne = (async (...replaceArgs: Parameters<typeof replaceOne>) => {
      store.events.replaceOne = replaceOne
      t.equal((await rename('Renamed again')).statusCode, 204, 'the second rename, between the fold\'s read and its write')
      return await replaceOne(...replaceArgs)
    }) as typeof replaceOne
    return seen
  }
  await send([item('gfold2_20260511T070000Z', {
    updated: '2026-05-01T10:00:00.000Z', recurringEventId: 'gfold2', originalStartDate: '2026-05-11T09:00:00+02:00', content: { title: 'Weekly', startDate: '2026-05-11T11:00:00+02:00', endDate: '2026-05-11T12:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' }
  })])
  t.equal(store.events.replaceOne, replaceOne, 'the fold wrote its record')
  t.same(await titles(), ['2026-05-04T09:00:00+02:00 Weekly', '2026-05-11T09:00:00+02:00 Renamed again', '2026-05-18T09:00:00+02:00 Weekly'], 'one occurrence on 11 May: the newest rename')
  t.match(await app.mongo.db.collection('events').find({ user: user.userId, 'recurrence.eventId': series }).toArray(), [{ title: 'Renamed again', providerEventId: 'gfold2_20260511T070000Z' }], 'one record, with the provider\'s identity')
})

test('a page that read an event before the person changed it, and writes after: planned again, the change made here stays', async (t) => {
  const { app, config, user, send } = await newUserWithPages(t, 'stale-page')
  const review = 'f'.repeat(24)
  const times = { startDate: '2026-05-06T10:00:00Z', endDate: '2026-05-06T11:00:00Z', timeZone: 'Europe/Berlin' }
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: review, title: 'Review', ...times, color: 'basil' } })).statusCode, 204)
  const graphCopy = (title: string, updated: string) => item('outlook-review', { eventId: review, updated, content: { title, ...times, isAllDay: false } })
  t.same((await send([graphCopy('Review', new Date().toISOString())], 'microsoft')).unchanged, 1, 'Sync\'s write of it links it')
  const shown = async () => (await app.inject({ method: 'GET', url: `/api/event/${review}`, headers: user.headers })).json<{ title: string, color?: string }>()
  const store = app.eventStore
  const findByProviderIds = store.findByProviderIds.bind(store)
  const meanwhile = (change: () => Promise<void>) => {
    store.findByProviderIds = async (...args) => {
      const seen = await findByProviderIds(...args)
      store.findByProviderIds = findByProviderIds
      await change()
      return seen
    }
  }

  // Renamed at Outlook, then read by a pull; the person picks a colour here before the pull's page is written.
  const renamedThere = new Date().toISOString()
  meanwhile(async () => {
    t.equal((await app.inject({ method: 'PUT', url: `/api/event/${review}`, headers: user.headers, payload: { title: 'Review', ...times, color: 'tomato' } })).statusCode, 204, 'the person\'s edit')
  })
  const newThere = item('outlook-new', { content: { title: 'New at Outlook', ...times, isAllDay: false } })
  const answer = await send([graphCopy('Review (renamed there)', renamedThere), newThere], 'microsoft')
  t.match(answer, { superseded: 1, updated: 0 }, 'the page, planned again, finds the newer change made here')
  t.equal(answer.created, 1, 'and still tells Sync of the event its first plan wrote (the second finds it stored)')
  t.match(await shown(), { title: 'Review', color: 'tomato' }, 'the colour chosen here stays (Graph has none to give it back), and the title is the newer change\'s')

  // Two pages of the provider's versions, the older one read first and written last.
  const [older, newer] = [60_000, 120_000].map((ahead) => new Date(Date.now() + ahead).toISOString()) as [string, string]
  meanwhile(async () => {
    t.match(await send([graphCopy('Review (newer)', newer)], 'microsoft'), { updated: 1 }, 'the newer version is written first')
  })
  t.match(await send([graphCopy('Review (older)', older)], 'microsoft'), { superseded: 1, updated: 0 }, 'the older page, planned again, gives way')
  t.match(await shown(), { title: 'Review (newer)', color: 'tomato' }, 'the newer version stays')

  // Sync clears the event's mark (its change reached Outlook) while a page read with the mark is on its way.
  const mark = async (issue: unknown) => (await app.inject({
    method: 'POST', url: BACKEND_INTERNAL_PATHS.providerWriteState, headers: { authorization: `Bearer ${config.backend.serviceToken}` }, payload: { userId: user.userId, connectionId: CONNECTION, eventId: review, issue }
  })).json()
  t.same(await mark({ provider: 'microsoft', reason: 'failing', message: 'Outlook did not answer; the change is tried again.', retrying: true, at: new Date().toISOString() }), { updated: true })
  meanwhile(async () => { t.same(await mark(null), { updated: true }, 'the change is at Outlook') })
  t.match(await send([graphCopy('Review (renamed again)', new Date(Date.now() + 180_000).toISOString())], 'microsoft'), { updated: 1 })
  const after = await shown()
  t.equal(after.title, 'Review (renamed again)', 'the page, planned again, is written')
  t.notOk('syncIssue' in after, 'without the mark Sync cleared meanwhile')

  // A page that brings one event twice (two versions read in one pass), the person's edit between the page's read and its write.
  const standup = 'e'.repeat(24)
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: standup, title: 'Standup', ...times } })).statusCode, 204)
  const standupCopy = (title: string, updated: string) => item('outlook-standup', { eventId: standup, updated, content: { title, ...times, isAllDay: false } })
  t.same((await send([standupCopy('Standup', new Date().toISOString())], 'microsoft')).unchanged, 1)
  const [first, second] = [new Date().toISOString(), new Date().toISOString()]
  meanwhile(async () => {
    t.equal((await app.inject({ method: 'PUT', url: `/api/event/${standup}`, headers: user.headers, payload: { title: 'Standup (mine)', ...times } })).statusCode, 204)
  })
  t.match(await send([standupCopy('Standup (first)', first), standupCopy('Standup (second)', second)], 'microsoft'), { superseded: 2 }, 'neither version lands on the edit')
  t.equal((await app.inject({ method: 'GET', url: `/api/event/${standup}`, headers: user.headers })).json<{ title: string }>().title, 'Standup (mine)')
})

test('pages that bring the same new event at once (an import beside a pull, two Sync processes): each is taken, the event is stored once', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const { app, config } = await buildApp(t, deps)
  const user = await signUp(app, { email: uniqueEmail('same-page'), password: 'pw-for-same-page-1' })
  const send = async (events: ProviderEvent[]) => await app.inject({
    method: 'POST',
    url: BACKEND_INTERNAL_PATHS.providerEvents,
    headers: { authorization: `Bearer ${config.backend.serviceToken}` },
    payload: { userId: user.userId, connectionId: CONNECTION, provider: 'google', calendarId: CALENDAR, events }
  })
  const stored = async () => ((await app.inject({ method: 'GET', url: '/api/event?start=2026-05-01T00:00:00Z&end=2026-06-01T00:00:00Z', headers: user.headers })).json() as Array<{ title: string }>)
    .map((event) => event.title).sort()
  for (const round of [1, 2, 3]) {
    const page = [item(`dinner-${round}`), item(`lunch-${round}`, { content: { title: `lunch-${round}`, startDate: '2026-05-05T12:00:00+02:00', endDate: '2026-05-05T13:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' } })]
    const answers = await Promise.all([send(page), send(page), send(page)])
    t.same(answers.map((answer) => answer.statusCode), [200, 200, 200], `round ${round}: every page is taken`)
  }
  t.same(await stored(), ['dinner-1', 'dinner-2', 'dinner-3', 'lunch-1', 'lunch-2', 'lunch-3'], 'each event once')
})

test('an own event linked while a re-import runs stays when its link carries the import\'s generation', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const { app, config } = await buildApp(t, deps)
  const user = await signUp(app, { email: uniqueEmail('linked-mid-import'), password: 'pw-for-linked-mid-import-1' })
  const send = async (batch: Partial<ProviderEventBatch>) => await app.inject({
    method: 'POST',
    url: BACKEND_INTERNAL_PATHS.providerEvents,
    headers: { authorization: `Bearer ${config.backend.serviceToken}` },
    payload: { userId: user.userId, connectionId: CONNECTION, provider: 'google', calendarId: CALENDAR, events: [], ...batch }
  })
  const titles = async () => ((await app.inject({ method: 'GET', url: '/api/event?start=2026-05-01T00:00:00Z&end=2026-06-01T00:00:00Z', headers: user.headers })).json() as Array<{ title: string }>).map((event) => event.title).sort()
  t.equal((await send({ generation: 'first', complete: true, events: [item('gone-since')] })).statusCode, 200)
  const generation = 'second'
  t.equal((await send({ generation, events: [item('dentist')] })).statusCode, 200)
  // Made here and written to the provider after the re-import read past where the provider lists it.
  const own = 'ab'.repeat(12)
  const made = { title: 'Made during the import', startDate: '2026-05-21T08:00:00Z', endDate: '2026-05-21T09:00:00Z' }
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: own, ...made, calendarId: CALENDAR } })).statusCode, 204)
  const linked = await send({ generation, events: [item('made-during', { eventId: own, updated: '2026-05-06T11:00:00.000Z', content: { ...made, isAllDay: false, timeZone: 'UTC' } })] })
  t.equal(linked.statusCode, 200, linked.body)
  const last = await send({ generation, complete: true, events: [] })
  t.equal(last.json().deleted, 1, 'the event the re-import did not bring goes')
  t.same(await titles(), ['Made during the import', 'dentist'], 'the own event stays, with the re-import\'s events')
  const kept = (await app.inject({ method: 'GET', url: `/api/event/${own}`, headers: user.headers })).json()
  t.equal(kept.providerEventId, 'made-during', 'and keeps its link')
})

test('a series moved here while a provider page stores one of its exceptions, without a transaction: the move takes the exceptions it read and leaves the new one', async (t) => {
  const { app, user, send } = await newUserWithPages(t, 'follow-race', { replicaSet: false })
  const series = 'e'.repeat(24)
  const rule = ['RRULE:FREQ=WEEKLY;COUNT=3']
  const at = (hour: number) => ({ startDate: `2026-05-04T${String(hour).padStart(2, '0')}:00:00+02:00`, endDate: `2026-05-04T${String(hour + 1).padStart(2, '0')}:00:00+02:00`, timeZone: 'Europe/Berlin' })
  t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: series, title: 'Weekly', ...at(9), recurrence: { rule } } })).statusCode, 204)
  t.same((await send([item('gmove', { eventId: series, content: { title: 'Weekly', ...at(9), isAllDay: false, recurrence: rule } })])).unchanged, 1)
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${series}_20260511T070000Z`, headers: user.headers, payload: { title: 'Kept here', ...at(9), startDate: '2026-05-11T09:00:00+02:00', endDate: '2026-05-11T10:00:00+02:00' } })).statusCode, 204)

  // The series moves to 10:00; between the move's read of its exceptions and their removal, a
  // pull's page stores the provider's exception of 18 May.
  const store = app.eventStore
  const deleteMany = store.events.deleteMany.bind(store.events)
  store.events.deleteMany = (async (...args: Parameters<typeof deleteMany>) => {
    store.events.deleteMany = deleteMany
    t.match(await send([item('gmove_20260518T070000Z', {
      recurringEventId: 'gmove', originalStartDate: '2026-05-18T09:00:00+02:00', content: { title: 'Weekly (moved at Google)', startDate: '2026-05-18T13:00:00+02:00', endDate: '2026-05-18T14:00:00+02:00', isAllDay: false, timeZone: 'Europe/Berlin' }
    })]), { created: 1 }, 'the page\'s exception is stored in between')
    return await deleteMany(...args)
  }) as typeof deleteMany
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${series}`, headers: user.headers, payload: { title: 'Weekly', ...at(10), recurrence: { rule } } })).statusCode, 204)
  t.equal(store.events.deleteMany, deleteMany, 'the move removed the exceptions it read')
  const stored = await app.mongo.db.collection('events').find({ user: user.userId, 'recurrence.eventId': series }, { projection: { _id: 0, title: 1, startDate: 1, providerEventId: 1 } }).sort({ startDate: 1 }).toArray()
  t.same(stored, [
    { title: 'Kept here', startDate: '2026-05-11T10:00:00+02:00' },
    { title: 'Weekly (moved at Google)', startDate: '2026-05-18T13:00:00+02:00', providerEventId: 'gmove_20260518T070000Z' }
  ], 'the edit made here moved with its series; the provider\'s exception, which the move never read, is still stored')
})
