import { test } from 'tap'
import { RawSseReader } from '../realtime/sse-reader.js'
import { waitUntil } from '../processes.js'
import { signIn } from '../helper.js'
import { connectGoogle, startFullStack, userWithGoogleAccount, primaryCalendarId } from './stack.js'

// A user's Google calendar both ways, live, through the real interfaces: the backend's routes and
// stream, the Sync service with its worker running, and the Google stand-in acting as Google and
// as "another device" (its control surface).

const RANGE = 'start=2026-11-01T00:00:00Z&end=2027-01-01T00:00:00Z'

interface Listed { _id: string, title: string, startDate: string, calendarId?: string, providerEventId?: string, origin: string }

test('Google Calendar through the Sync service, end to end', async (t) => {
  const stack = await startFullStack(t)
  const user = await userWithGoogleAccount(stack, 'ada')
  const google = stack.google.control
  const primary = user.email
  google.insertEvent(primary, { summary: 'Dentist', start: { dateTime: '2026-11-23T15:00:00+01:00', timeZone: 'Europe/Berlin' }, end: { dateTime: '2026-11-23T16:00:00+01:00', timeZone: 'Europe/Berlin' } })
  google.insertEvent(primary, { summary: 'Holiday', start: { date: '2026-12-24' }, end: { date: '2026-12-27' } })
  const series = google.insertEvent(primary, {
    summary: 'Weekly review',
    start: { dateTime: '2026-11-02T09:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-11-02T10:00:00+01:00', timeZone: 'Europe/Berlin' },
    recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10']
  })
  google.deleteEvent(primary, `${String(series['id'])}_20261116T080000Z`)

  const events = async (): Promise<Listed[]> => (await stack.backend.app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).json()
  const stream = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: user.headers.authorization ?? '' })
  t.teardown(() => stream.close())
  const messagesOf = (type: string) => stream.messages().filter((message) => (message as { type: string }).type === type) as Array<Record<string, unknown>>

  await t.test('connect: begin, consent, callback through /sync, back to the web app with status and cid', async (t) => {
    const landed = await connectGoogle(stack, user)
    t.equal(`${landed.origin}${landed.pathname}`, `${stack.webUrl}/`)
    t.equal(landed.searchParams.get('status'), 'connected')
    t.match(landed.searchParams.get('cid'), /^[A-Za-z0-9_-]{4,64}$/)
  })

  await t.test('the import reaches the calendar and the stream', async (t) => {
    await waitUntil(async () => (await events()).length >= 9, 'the imported events', 20_000)
    // Counted once the import completed: whether the cancelled occurrence (16 November) lies in the
    // weeks around today depends on when the test runs, and outside them only the whole calendar's
    // pass brings it.
    await stream.until(() => messagesOf('importCompleted').length > 0 && messagesOf('eventsChanged').length > 0, 20_000)
    const titles = (await events()).map((event) => event.title)
    t.ok(titles.includes('Dentist') && titles.includes('Holiday'))
    t.equal(titles.filter((title) => title === 'Weekly review').length, 8, 'a series of ten, one cancelled, one before the range')
    t.ok((await events()).every((event) => event.origin === 'providerImport' && event.calendarId === primary))
    await stream.until(() => messagesOf('syncStatusChanged').some((message) => message.status === 'healthy'), 20_000)
    t.pass('importCompleted, eventsChanged and a healthy status arrived on the stream')
  })

  await t.test('a change at Google arrives live', async (t) => {
    const before = messagesOf('eventsChanged').length
    const dentist = (await events()).find((event) => event.title === 'Dentist')
    google.patchEvent(primary, dentist?.providerEventId ?? '', { summary: 'Dentist (moved)' })
    await stream.until(() => messagesOf('eventsChanged').length > before, 20_000)
    await waitUntil(async () => (await events()).some((event) => event.title === 'Dentist (moved)'), 'the change in the calendar', 10_000)
    t.pass('eventsChanged on the stream, and the calendar shows the change')
  })

  await t.test('the user\'s own event goes to Google and gains its id; an edit follows it there', async (t) => {
    const own = 'f'.repeat(24)
    const created = await stack.backend.app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: own, calendarId: await primaryCalendarId(stack.backend.app, user.headers), title: 'Lunch with Bo', startDate: '2026-11-25T12:00:00Z', endDate: '2026-11-25T13:00:00Z' } })
    t.equal(created.statusCode, 204)
    await waitUntil(() => google.storedEvents(primary).some((event) => event['summary'] === 'Lunch with Bo'), 'the event at Google', 20_000)
    await waitUntil(async () => (await events()).some((event) => event._id === own && event.providerEventId !== undefined), 'the link back', 20_000)
    const edited = await stack.backend.app.inject({ method: 'PUT', url: `/api/event/${own}`, headers: user.headers, payload: { title: 'Lunch with Bo and Cy', startDate: '2026-11-25T12:00:00Z', endDate: '2026-11-25T13:30:00Z' } })
    t.equal(edited.statusCode, 204)
    await waitUntil(() => google.storedEvents(primary).some((event) => event['summary'] === 'Lunch with Bo and Cy'), 'the edit at Google', 20_000)
    const copies = (await events()).filter((event) => event.title.startsWith('Lunch with Bo'))
    t.equal(copies.length, 1, 'Google echoing the write back does not make a second event')
  })

  await t.test('revoked at Google: attention with both codes, then every session ends (invalid_grant); signed in again, 410 for its events until a reconnect repairs', async (t) => {
    const holiday = (await events()).find((event) => event.title === 'Holiday')
    google.revoke(primary)
    // The next pull meets invalid_grant.
    const refresh = await stack.backend.app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
    t.equal(refresh.statusCode, 200)
    await stream.until(() => messagesOf('syncStatusChanged').some((message) => message.code === 'CONNECTION_REVOKED'), 20_000)
    const codes = messagesOf('syncStatusChanged').filter((message) => message.status === 'attention').map((message) => message.code)
    t.ok(codes.includes('CONNECTION_REVOKED') && codes.includes('GOOGLE_REVOKED'), 'the current code and its legacy alias')
    const connectionId = messagesOf('syncStatusChanged').find((message) => message.code === 'CONNECTION_REVOKED')?.connectionId

    // A dead grant ends the user's sessions: the stream closes and REST answers 401, so the client
    // goes back to login.
    await stream.untilEnded(20_000)
    t.equal((await stack.backend.app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).statusCode, 401)
    const back = { ...await signIn(stack.backend.app, { email: user.email, password: 'pw-for-ada-1' }), email: user.email }
    const reopened = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: back.headers.authorization ?? '' })
    t.teardown(() => reopened.close())
    await reopened.untilMessages(1)

    const write = async () => await stack.backend.app.inject({ method: 'PUT', url: `/api/event/${holiday?._id ?? ''}`, headers: back.headers, payload: { title: 'Holiday!', startDate: '2026-12-24', endDate: '2026-12-27', isAllDay: true, calendarId: primary } })
    const refused = await write()
    t.equal(refused.statusCode, 410)
    t.equal(refused.json().code, 'CONNECTION_REVOKED')
    t.equal(refused.json().connectionId, connectionId)
    // A new event in the revoked calendar is refused the same way, and nothing is stored; one of the
    // user's own calendar is no cloud edit.
    const fresh = async () => await stack.backend.app.inject({ method: 'POST', url: '/api/event', headers: back.headers, payload: { title: 'Written after the reconnect', startDate: '2026-12-02T09:00:00Z', endDate: '2026-12-02T10:00:00Z', isAllDay: false, timeZone: 'UTC', calendarId: primary } })
    const refusedNew = await fresh()
    t.equal(refusedNew.statusCode, 410)
    t.equal(refusedNew.json().connectionId, connectionId)
    t.equal((await stack.backend.app.inject({ method: 'POST', url: '/api/event', headers: back.headers, payload: { title: 'Mine only', startDate: '2026-12-02T09:00:00Z', endDate: '2026-12-02T10:00:00Z' } })).statusCode, 204, 'an event of the user\'s own calendar')

    const landed = await connectGoogle(stack, back, { provider: 'google', intent: 'reconnect', connectionId })
    t.equal(landed.searchParams.get('status'), 'connected')
    await reopened.until(() => reopened.messages().some((message) => (message as Record<string, unknown>)['status'] === 'healthy'), 20_000)
    t.equal((await write()).statusCode, 204, 'writable again after the reconnect')
    t.equal((await fresh()).statusCode, 204, 'a new event too')
    await waitUntil(() => google.storedEvents(primary).some((event) => event['summary'] === 'Written after the reconnect'), 'the new event at Google', 20_000)
    t.notOk(google.storedEvents(primary).some((event) => event['summary'] === 'Mine only'), 'the own calendar\'s event stays here')
  })
})
