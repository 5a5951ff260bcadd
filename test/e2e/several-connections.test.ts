import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'
import { mintEventId } from '../../lib/events/ids.js'
import { connectGoogle, onItsWay, primaryCalendarId, startFullStack, userWithGoogleAccount } from './stack.js'

// Google and a CalDAV server connected to one user at once, through the real interfaces: each
// change goes to the calendar its event is in and to no other, and an event of the user's own
// calendar goes to neither.

const USER = 'kit'
const PASSWORD = 'kit-app-password'

test('with Google and CalDAV connected at once, each change goes to its own calendar only', { skip: radicaleMissing() ?? false }, async (t) => {
  const stack = await startFullStack(t)
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, PASSWORD, 'home', 'Home')
  const user = await userWithGoogleAccount(stack, 'two-kinds')
  const app = stack.backend.app
  const google = stack.google.control
  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  const caldav = await app.inject({ method: 'POST', url: '/api/connections/caldav', headers: user.headers, payload: { serverUrl: radicale.url, username: USER, password: PASSWORD } })
  t.equal(caldav.statusCode, 200, caldav.body)
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId)).every((connection) => connection.state === 'healthy'), 'both connections healthy', 30_000)

  const atGoogle = (title: string) => google.storedEvents(user.email).filter((event) => event['status'] !== 'cancelled' && String(event['summary']).startsWith(title))
  const atRadicale = async (title: string) => (await radicale.get(calendarUrl, USER, PASSWORD)).body.includes(`SUMMARY:${title}`)
  // Nothing on its way: no change report still in the backend's outbox, no write queued or running at Sync.
  const settled = async () => (await onItsWay(stack, user.userId)).length === 0
  const create = async (title: string, calendarId?: string) => {
    const id = mintEventId()
    const answer = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: id, title, startDate: '2026-12-03T10:00:00Z', endDate: '2026-12-03T11:00:00Z', ...(calendarId === undefined ? {} : { calendarId }) } })
    t.equal(answer.statusCode, 204, `${title}: ${answer.body}`)
    return id
  }
  const rename = async (id: string, title: string) => {
    const answer = await app.inject({ method: 'PUT', url: `/api/event/${id}`, headers: user.headers, payload: { title, startDate: '2026-12-03T10:00:00Z', endDate: '2026-12-03T11:00:00Z' } })
    t.equal(answer.statusCode, 204, `${title}: ${answer.body}`)
  }
  const linked = async (id: string) => (await app.inject({ method: 'GET', url: `/api/event/${id}`, headers: user.headers })).json<{ providerEventId?: string }>().providerEventId !== undefined

  const googleCalendar = await primaryCalendarId(app, user.headers, 'google')
  const caldavCalendar = await primaryCalendarId(app, user.headers, 'caldav')
  t.equal(caldavCalendar, calendarUrl)

  const inGoogle = await create('Dentist (Google)', googleCalendar)
  const inCaldav = await create('Choir (CalDAV)', caldavCalendar)
  const mine = await create('Mine only')
  await waitUntil(async () => await linked(inGoogle) && await linked(inCaldav) && await settled(), 'both written and linked', 30_000)
  t.equal(atGoogle('Dentist').length, 1, 'the Google event at Google')
  t.ok(await atRadicale('Choir (CalDAV)'), 'the CalDAV event on the CalDAV server')
  t.same(atGoogle('Choir'), [], 'and not at Google')
  t.notOk(await atRadicale('Dentist'), 'nor the Google event on the CalDAV server')
  t.same(atGoogle('Mine only'), [], 'an event of the user\'s own calendar is at neither')
  t.notOk(await atRadicale('Mine only'))

  await rename(inGoogle, 'Dentist moved (Google)')
  await rename(inCaldav, 'Choir moved (CalDAV)')
  await rename(mine, 'Mine renamed')
  await waitUntil(async () => atGoogle('Dentist moved').length === 1 && await atRadicale('Choir moved (CalDAV)') && await settled(), 'each rename at its own calendar', 30_000)
  t.same(atGoogle('Choir'), [])
  t.notOk(await atRadicale('Dentist'))
  t.same(atGoogle('Mine'), [])
  t.notOk(await atRadicale('Mine'))

  for (const id of [inGoogle, inCaldav]) t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${id}`, headers: user.headers })).statusCode, 204)
  await waitUntil(async () => atGoogle('Dentist').length === 0 && !await atRadicale('Choir') && await settled(), 'each deletion at its own calendar', 30_000)
  t.same(google.storedEvents(user.email).map((event) => String(event['summary'])).filter((title) => !title.startsWith('Dentist')), [], 'Google never held, even for a moment, an event of another calendar')
})
