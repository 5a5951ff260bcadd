import { test } from 'tap'
import { RawSseReader } from '../realtime/sse-reader.js'
import { waitUntil } from '../processes.js'
import { signUp, uniqueEmail } from '../helper.js'
import { basic, radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'
import { allDayIcs, BERLIN, ics } from '../sync/caldav/harness.js'
import { startFullStack, primaryCalendarId } from './stack.js'
import { caldavFetch } from '../sync/caldav/fetch.js'

// A CalDAV account both ways through the real interfaces: the backend's session route and
// stream, the Sync service with its worker running, and a real Radicale, which another client
// (plain fetch) changes directly.

const RANGE = 'start=2026-11-01T00:00:00Z&end=2027-01-01T00:00:00Z'
const USER = 'ada'
const PASSWORD = 'ada-app-password'

interface Listed { _id: string, title: string, startDate: string, calendarId?: string, providerEventId?: string, origin: string }

function seriesIcs (): string {
  const body = ics(
    ['UID:review', 'DTSTAMP:20261101T000000Z', 'LAST-MODIFIED:20261101T000000Z', 'DTSTART;TZID=Europe/Berlin:20261102T090000', 'DTEND;TZID=Europe/Berlin:20261102T100000', 'SUMMARY:Weekly review', 'RRULE:FREQ=WEEKLY;COUNT=10', 'EXDATE;TZID=Europe/Berlin:20261116T090000'],
    ['UID:review', 'DTSTAMP:20261101T000000Z', 'LAST-MODIFIED:20261101T000000Z', 'RECURRENCE-ID;TZID=Europe/Berlin:20261109T090000', 'DTSTART;TZID=Europe/Berlin:20261109T110000', 'DTEND;TZID=Europe/Berlin:20261109T120000', 'SUMMARY:Review (moved)']
  )
  return body.replace('END:VCALENDAR', `${BERLIN.join('\r\n')}\r\nEND:VCALENDAR`)
}

test('a CalDAV account through the backend route and the Sync service, end to end', { skip: radicaleMissing() ?? false }, async (t) => {
  // Between Sync and Radicale, so a test can act as another client between two of Sync's requests.
  let interceptor: ((input: string | URL | Request, init: RequestInit) => Promise<Response>) | null = null
  const stack = await startFullStack(t, { caldavFetch: async (input, init = {}) => interceptor === null ? await caldavFetch(input, init) : await interceptor(input, init) })
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, PASSWORD, 'home', 'Home')
  await radicale.put(`${calendarUrl}review.ics`, USER, PASSWORD, seriesIcs())
  await radicale.put(`${calendarUrl}holiday.ics`, USER, PASSWORD, allDayIcs())
  const email = uniqueEmail('caldav')
  const user = { ...await signUp(stack.backend.app, { email, password: 'pw-for-caldav-1' }), email }
  const events = async (): Promise<Listed[]> => (await stack.backend.app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).json()
  const connect = async (password: string) => await stack.backend.app.inject({ method: 'POST', url: '/api/connections/caldav', headers: user.headers, payload: { serverUrl: radicale.url, username: USER, password } })
  const serverCalendar = async () => (await radicale.get(calendarUrl, USER, PASSWORD)).body
  const stream = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: user.headers.authorization ?? '' })
  t.teardown(() => stream.close())
  const messagesOf = (type: string) => stream.messages().filter((message) => (message as { type: string }).type === type) as Array<Record<string, unknown>>

  await t.test('wrong password: a clear 422 and nothing stored; the right one connects', async (t) => {
    const refused = await connect('not-the-password')
    t.equal(refused.statusCode, 422)
    t.equal(refused.json().code, 'CALDAV_CONNECT_FAILED')
    t.same(await stack.sync.syncConnections.listByUser(user.userId), [])
    const connected = await connect(PASSWORD)
    t.equal(connected.statusCode, 200)
    t.match(connected.json(), { created: true, calendars: 1 })
  })

  await t.test('the import: a series with a moved and a removed occurrence, and an all-day event', async (t) => {
    await waitUntil(async () => (await events()).length >= 9, 'the imported events', 20_000)
    const listed = await events()
    const titles = listed.map((event) => event.title)
    t.equal(titles.filter((title) => title === 'Weekly review').length, 7, 'ten weekly, one removed (EXDATE), one moved, one after the range')
    t.ok(listed.some((event) => event.title === 'Review (moved)' && Date.parse(event.startDate) === Date.parse('2026-11-09T10:00:00Z')), 'the override at its new time')
    t.ok(titles.includes('Holiday'))
    t.ok(listed.every((event) => event.origin === 'providerImport' && event.calendarId === calendarUrl))
    await stream.until(() => messagesOf('syncStatusChanged').some((message) => message.status === 'healthy'), 20_000)
  })

  await t.test('a change made directly on Radicale arrives on the next pull', async (t) => {
    const put = await radicale.put(`${calendarUrl}dentist.ics`, USER, PASSWORD, ics(['UID:dentist', 'DTSTAMP:20261121T000000Z', 'DTSTART:20261123T140000Z', 'DTEND:20261123T150000Z', 'SUMMARY:Dentist']))
    t.equal(put.status, 201)
    t.equal((await stack.backend.app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })).statusCode, 200)
    await waitUntil(async () => (await events()).some((event) => event.title === 'Dentist'), 'the new event', 20_000)
  })

  const own = 'c'.repeat(24)
  await t.test('the user\'s own event reaches Radicale and gains its id', async (t) => {
    const created = await stack.backend.app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: own, calendarId: await primaryCalendarId(stack.backend.app, user.headers), title: 'Lunch with Bo', startDate: '2026-11-25T12:00:00Z', endDate: '2026-11-25T13:00:00Z' } })
    t.equal(created.statusCode, 204)
    await waitUntil(async () => (await serverCalendar()).includes('SUMMARY:Lunch with Bo'), 'the event on Radicale', 20_000)
    await waitUntil(async () => (await events()).some((event) => event._id === own && event.providerEventId !== undefined), 'the link back', 20_000)
  })

  await t.test('a 412: another client changes the event between our read and our write; the newer version wins', async (t) => {
    const linked = (await events()).find((event) => event._id === own)
    const target = `${radicale.url}${linked?.providerEventId ?? ''}`
    let raced = false
    t.teardown(() => { interceptor = null })
    interceptor = async (input, init) => {
      if (!raced && init.method === 'PUT' && String(input) === target) {
        raced = true
        const current = await radicale.get(target, USER, PASSWORD)
        // Changed later than the backend's edit below, as by a clock ahead of ours.
        const newer = current.body.replace(/SUMMARY:[^\r\n]*/, 'SUMMARY:Lunch (moved elsewhere)').replace(/LAST-MODIFIED:[^\r\n]*/, 'LAST-MODIFIED:20300101T000000Z')
        await fetch(target, { method: 'PUT', headers: { authorization: basic(USER, PASSWORD), 'content-type': 'text/calendar' }, body: newer })
      }
      return await caldavFetch(input, init)
    }
    const edited = await stack.backend.app.inject({ method: 'PUT', url: `/api/event/${own}`, headers: user.headers, payload: { title: 'Lunch with Bo and Cy', startDate: '2026-11-25T12:00:00Z', endDate: '2026-11-25T13:30:00Z' } })
    t.equal(edited.statusCode, 204)
    await waitUntil(async () => (await events()).some((event) => event._id === own && event.title === 'Lunch (moved elsewhere)'), 'the newer version in the calendar', 20_000)
    t.ok(raced, 'the write met the concurrent change')
    t.match(await serverCalendar(), /SUMMARY:Lunch \(moved elsewhere\)/, 'and Radicale keeps it')
    interceptor = null
  })

  await t.test('the password changes at the server: the next pull gets 401, the connection needs the user', async (t) => {
    await radicale.setPassword(USER, 'a-new-app-password')
    await stack.backend.app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
    await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'actionRequired', 'actionRequired', 20_000)
    t.match((await stack.sync.syncConnections.listByUser(user.userId))[0], { state: 'actionRequired', reason: 'authorizationRevoked' })
    const connectionId = (await stack.sync.syncConnections.listByUser(user.userId))[0]?._id.toHexString()
    await stream.until(() => messagesOf('syncStatusChanged').some((message) => message.code === 'CONNECTION_REVOKED'), 20_000)
    t.match(messagesOf('syncStatusChanged').find((message) => message.code === 'CONNECTION_REVOKED'), { connectionId, status: 'attention', retryable: false })

    // An app password is not a sign-in grant: the user stays signed in, and the stream stays open.
    t.equal((await stack.backend.app.inject({ method: 'GET', url: '/api/user/profile', headers: user.headers })).statusCode, 200, 'the session lives on')
    t.notOk(stream.ended, 'the stream stays open')

    const imported = (await events()).find((event) => event.title === 'Holiday')
    const refused = await stack.backend.app.inject({ method: 'DELETE', url: `/api/event/${imported?._id ?? ''}`, headers: user.headers })
    t.equal(refused.statusCode, 410, 'a change to the account\'s events is refused')
    t.match(refused.json(), { code: 'CONNECTION_REVOKED', connectionId })
    t.ok((await events()).some((event) => event.title === 'Holiday'), 'and changes nothing')

    // Connecting the same account again with its new password repairs the connection, without naming it.
    const repaired = await connect('a-new-app-password')
    t.equal(repaired.statusCode, 200)
    t.match(repaired.json(), { created: false, connectionId })
    await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'healthy again', 20_000)
  })
})
