import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { RawSseReader } from '../realtime/sse-reader.js'
import { radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'
import { mintEventId } from '../../lib/events/ids.js'
import { planEdit, type EventDraft } from '../../web/src/lib/series-edit.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'
import { sendPlan } from '../web-plans.js'
import { connectCalDav, connectGoogle, connectMicrosoft, defaultMicrosoftCalendar, onItsWay, startFullStack, userWithGoogleAccount, withMicrosoft } from './stack.js'

// Google, Microsoft and a CalDAV server connected to one user at once, through the real
// interfaces and the web client's own requests. Google's account also holds a calendar shared with
// it to read only: a change of its event is refused there, and the person sees it as not synced,
// on the event and in the status, while the changes of the two other connections go through.

const USER = 'noor'
const PASSWORD = 'noor-app-password'
const RANGE = 'start=2026-11-30T00:00:00Z&end=2026-12-07T00:00:00Z'

function draftOf (event: CalendarEvent, title: string): EventDraft {
  return { title, description: '', location: '', isAllDay: event.isAllDay, startDate: event.startDate, endDate: event.endDate, timeZone: event.timeZone, frequency: null }
}

test('three connections of three kinds: each change reaches its own calendar; one a calendar refuses shows as not synced, and only that one', { skip: radicaleMissing() ?? false }, async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { microsoft: true }))
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, PASSWORD, 'home', 'Home')
  const user = await userWithGoogleAccount(stack, 'three-kinds')
  const google = stack.google.control
  const team = google.addCalendar(user.email, { summary: 'Team (shared, read only)', accessRole: 'reader' })
  google.insertEvent(team.id, { summary: 'Team offsite', start: { dateTime: '2026-12-02T09:00:00+01:00', timeZone: 'Europe/Berlin' }, end: { dateTime: '2026-12-02T17:00:00+01:00', timeZone: 'Europe/Berlin' } })
  stack.microsoft.control.createAccount({ email: user.email, name: 'three-kinds', timeZone: 'W. Europe Standard Time' })
  const app = stack.backend.app

  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  t.equal((await connectMicrosoft(stack, user)).searchParams.get('status'), 'connected')
  await connectCalDav(stack, user, { serverUrl: radicale.url, username: USER, password: PASSWORD })
  await waitUntil(async () => {
    const connections = await stack.sync.syncConnections.listByUser(user.userId)
    return connections.length === 3 && connections.every((connection) => connection.state === 'healthy')
  }, 'three connections healthy', 60_000)

  const stream = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: user.headers.authorization ?? '' })
  t.teardown(() => stream.close())
  const counts = () => stream.messages().flatMap((message) => {
    const status = message as { type: string, connectionId?: string, unsyncedWrites?: number }
    return status.type === 'syncStatusChanged' && status.unsyncedWrites !== undefined ? [status.unsyncedWrites] : []
  })
  const range = async () => (await app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).json<CalendarEvent[]>()
  const read = async (id: string) => (await app.inject({ method: 'GET', url: `/api/event/${id}`, headers: user.headers })).json<CalendarEvent>()
  // Nothing on its way: no change report still in the backend's outbox, no write queued or running at Sync.
  const settled = async () => (await onItsWay(stack, user.userId)).length === 0
  const microsoftCalendar = defaultMicrosoftCalendar(stack, user.email)
  const atGoogle = (calendarId: string, title: string) => google.storedEvents(calendarId).filter((event) => event['status'] !== 'cancelled' && String(event['summary']).startsWith(title))
  const atMicrosoft = (title: string) => stack.microsoft.control.storedEvents(microsoftCalendar).filter((event) => event['deleted'] !== true && String(event['subject']).startsWith(title))
  const atRadicale = async (title: string) => (await radicale.get(calendarUrl, USER, PASSWORD)).body.includes(`SUMMARY:${title}`)

  const offsite = (await range()).find((event) => event.title === 'Team offsite')
  if (offsite === undefined) throw new Error('the shared calendar\'s event was not imported')
  t.equal(offsite.calendarId, team.id, 'imported into its own calendar')

  // New events in the Outlook and the CalDAV calendar, as the web client's dialog makes them.
  const create = async (title: string, calendarId: string) => {
    const id = mintEventId()
    const answer = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: id, title, startDate: '2026-12-03T10:00:00Z', endDate: '2026-12-03T11:00:00Z', timeZone: 'Europe/Berlin', calendarId } })
    t.equal(answer.statusCode, 204, `${title}: ${answer.body}`)
    return id
  }
  const inOutlook = await create('Review (Outlook)', microsoftCalendar)
  const inCaldav = await create('Choir (CalDAV)', calendarUrl)
  await waitUntil(async () => (await read(inOutlook)).providerEventId !== undefined && (await read(inCaldav)).providerEventId !== undefined && await settled(), 'both written and linked', 30_000)

  // The same edit in all three, as the dialog's Save sends it.
  t.same(await sendPlan(app, user.headers, planEdit(offsite, draftOf(offsite, 'Team offsite (moved here)'), 'all', null, mintEventId())), [204], 'the change is saved here')
  for (const id of [inOutlook, inCaldav]) {
    const event = await read(id)
    t.same(await sendPlan(app, user.headers, planEdit(event, draftOf(event, `${event.title} v2`), 'all', null, mintEventId())), [204])
  }
  await waitUntil(async () => (await read(offsite._id)).syncIssue !== undefined && await settled(), 'the refused change marked', 30_000)

  const marked = await read(offsite._id)
  t.equal(marked.title, 'Team offsite (moved here)', 'the change stays here')
  t.match(marked.syncIssue, { provider: 'google', reason: 'readOnly', retrying: false, message: 'Google Calendar lets this account only read this calendar: the change is kept here only.' }, 'and the event says why it is not at Google')
  t.equal(atGoogle(team.id, 'Team offsite').length, 1)
  t.same(atGoogle(team.id, 'Team offsite (moved'), [], 'Google kept its own')
  await stream.until(() => counts().includes(1), 20_000)
  t.pass('the status heard of one change not synced')

  t.equal(atMicrosoft('Review (Outlook) v2').length, 1, 'the Outlook change at Outlook')
  t.ok(await atRadicale('Choir (CalDAV) v2'), 'the CalDAV change on the CalDAV server')
  t.equal((await read(inOutlook)).syncIssue, undefined, 'neither of those is marked')
  t.equal((await read(inCaldav)).syncIssue, undefined)
  t.same(atGoogle(user.email, 'Review'), [], 'nothing of the others went to Google')
  t.same(atGoogle(user.email, 'Choir'), [])
  t.same(atMicrosoft('Choir'), [])
  t.notOk(await atRadicale('Review'))

  // A new stream's replay carries the count, so a tab opened now says it too.
  const replay = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: user.headers.authorization ?? '' })
  t.teardown(() => replay.close())
  const [first] = await replay.untilMessages(1, 10_000)
  const summaries = (first as { sync: { connections: Array<{ provider: string, unsyncedWrites?: number }> } }).sync.connections
  t.same(summaries.map((summary) => [summary.provider, summary.unsyncedWrites]).sort(), [['caldav', 0], ['google', 1], ['microsoft', 0]])

  // Deleting the marked event here takes its mark and the count with it.
  t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${offsite._id}`, headers: user.headers })).statusCode, 204)
  await stream.until(() => counts().at(-1) === 0, 20_000)
  t.pass('the count went back to none')
})
