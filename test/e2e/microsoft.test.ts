import { test } from 'tap'
import { RawSseReader } from '../realtime/sse-reader.js'
import { waitUntil } from '../processes.js'
import { signIn } from '../helper.js'
import { graphClient, occurrenceOn } from './graph-client.js'
import { connectMicrosoft, defaultMicrosoftCalendar, startFullStack, userWithMicrosoftAccount, withMicrosoft, primaryCalendarId } from './stack.js'

// A user's Microsoft calendar both ways, live, through the real interfaces: the backend's routes and
// stream, the Sync service with its worker running, and the Microsoft stand-in acting as Microsoft
// (identity platform and Graph, change notifications to the backend's /sync proxy) and as "another
// device" (its control surface).

const RANGE = 'start=2026-11-01T00:00:00Z&end=2027-01-01T00:00:00Z'
const BERLIN = 'W. Europe Standard Time'

// Found by this test, in production code this change does not touch: a revocation reaches Sync at
// once as the subscription's `reauthorizationRequired` lifecycle notification; Sync renews the
// subscription with its access token, which outlives the grant, Graph answers 403 ExtensionError,
// and the adapter reports a plain failure (logged as a warning) instead of refreshing the token,
// whose invalid_grant would show the revocation. The connection stays healthy, with notifications
// paused, until the access token expires (up to an hour).

/** Whether `condition` comes true within `ms`; for assertions that may be known to fail (todo). */
async function eventually (condition: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    if (await condition()) return true
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

interface Listed { _id: string, title: string, startDate: string, endDate: string, isAllDay?: boolean, calendarId?: string, providerEventId?: string, origin: string }

test('a Microsoft calendar through the Sync service, end to end', async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { microsoft: true }))
  const user = await userWithMicrosoftAccount(stack, 'grace')
  const microsoft = stack.microsoft.control
  const calendarId = defaultMicrosoftCalendar(stack, user.email)
  const dentist = microsoft.insertEvent(calendarId, { subject: 'Dentist', start: { dateTime: '2026-11-23T15:00:00', timeZone: BERLIN }, end: { dateTime: '2026-11-23T16:00:00', timeZone: BERLIN } })
  microsoft.insertEvent(calendarId, { subject: 'Call with New York', start: { dateTime: '2026-11-24T10:00:00', timeZone: 'Eastern Standard Time' }, end: { dateTime: '2026-11-24T10:30:00', timeZone: 'Eastern Standard Time' } })
  microsoft.insertEvent(calendarId, { subject: 'Holiday', isAllDay: true, start: { dateTime: '2026-12-24T00:00:00', timeZone: BERLIN }, end: { dateTime: '2026-12-27T00:00:00', timeZone: BERLIN } })
  const series = microsoft.insertEvent(calendarId, {
    subject: 'Weekly review',
    start: { dateTime: '2026-11-02T09:00:00', timeZone: BERLIN },
    end: { dateTime: '2026-11-02T10:00:00', timeZone: BERLIN },
    recurrence: { pattern: { type: 'weekly', interval: 1, daysOfWeek: ['monday'] }, range: { type: 'numbered', startDate: '2026-11-02', numberOfOccurrences: 10 } }
  })
  // Another device moves one occurrence (an exception) and deletes another; only Graph names them.
  const device = await graphClient(stack.microsoft, user.email, `${stack.backendOrigin}/sync/oauth/microsoft/callback`)
  microsoft.patchEvent(calendarId, await occurrenceOn(device, String(series.id), '2026-11-09'), {
    subject: 'Review (moved)', start: { dateTime: '2026-11-09T11:00:00', timeZone: BERLIN }, end: { dateTime: '2026-11-09T12:00:00', timeZone: BERLIN }
  })
  microsoft.deleteEvent(calendarId, await occurrenceOn(device, String(series.id), '2026-11-16'))

  const events = async (): Promise<Listed[]> => (await stack.backend.app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).json()
  const stream = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: user.headers.authorization ?? '' })
  t.teardown(() => stream.close())
  const messagesOf = (type: string) => stream.messages().filter((message) => (message as { type: string }).type === type) as Array<Record<string, unknown>>

  await t.test('connect: begin with provider microsoft, consent, callback through /sync, back to the web app with status and cid', async (t) => {
    const landed = await connectMicrosoft(stack, user)
    t.equal(`${landed.origin}${landed.pathname}`, `${stack.webUrl}/`)
    t.equal(landed.searchParams.get('status'), 'connected')
    t.equal(landed.searchParams.get('provider'), 'microsoft')
    t.match(landed.searchParams.get('cid'), /^[A-Za-z0-9_-]{4,64}$/)
  })

  await t.test('the import reaches the calendar and the stream', async (t) => {
    await waitUntil(async () => (await events()).some((event) => event.title === 'Holiday'), 'the imported events', 20_000)
    await stream.until(() => messagesOf('importCompleted').length > 0 && messagesOf('eventsChanged').length > 0, 20_000)
    await stream.until(() => messagesOf('syncStatusChanged').some((message) => message.status === 'healthy'), 20_000)
    t.pass('importCompleted, eventsChanged and a healthy status arrived on the stream')
    const listed = await events()
    const find = (title: string) => listed.find((event) => event.title === title)
    t.equal(Date.parse(find('Dentist')?.startDate ?? ''), Date.parse('2026-11-23T14:00:00Z'), 'W. Europe Standard Time read as Berlin')
    t.equal(Date.parse(find('Call with New York')?.startDate ?? ''), Date.parse('2026-11-24T15:00:00Z'), 'Eastern Standard Time read as New York')
    t.match(find('Holiday'), { isAllDay: true }, 'the all-day event stays all-day')
    t.equal(find('Holiday')?.startDate.slice(0, 10), '2026-12-24')
    t.ok(listed.some((event) => event.title === 'Review (moved)' && Date.parse(event.startDate) === Date.parse('2026-11-09T10:00:00Z')), 'the exception at its new time')
    const reviews = listed.filter((event) => event.title === 'Weekly review').map((event) => event.startDate.slice(0, 10))
    t.notOk(reviews.includes('2026-11-09'), 'the moved occurrence is not also at its original time')
    t.notOk(reviews.includes('2026-11-16'), 'the occurrence deleted at Microsoft is not shown')
    t.equal(reviews.length, 7, 'ten weekly, one moved, one deleted, one after the range')
    t.ok(listed.every((event) => event.origin === 'providerImport' && event.calendarId === calendarId), 'every event is an import of the default calendar')
  })

  await t.test('a change at Microsoft by another device arrives live', async (t) => {
    const before = messagesOf('eventsChanged').length
    microsoft.patchEvent(calendarId, String(dentist.id), { subject: 'Dentist (moved)', start: { dateTime: '2026-11-23T17:00:00', timeZone: BERLIN }, end: { dateTime: '2026-11-23T18:00:00', timeZone: BERLIN } })
    await stream.until(() => messagesOf('eventsChanged').length > before, 20_000)
    await waitUntil(async () => (await events()).some((event) => event.title === 'Dentist (moved)'), 'the change in the calendar', 10_000)
    t.equal(Date.parse((await events()).find((event) => event.title === 'Dentist (moved)')?.startDate ?? ''), Date.parse('2026-11-23T16:00:00Z'))
    t.notOk((await events()).some((event) => event.title === 'Dentist'), 'changed in place, not copied')

    const reviewOn = async (day: string) => (await events()).some((event) => event.title === 'Weekly review' && event.startDate.startsWith(day))
    t.ok(await reviewOn('2026-11-23'), 'the occurrence of 23 November is there before')
    const beforeDeletion = messagesOf('eventsChanged').length
    microsoft.deleteEvent(calendarId, await occurrenceOn(device, String(series.id), '2026-11-23'))
    await stream.until(() => messagesOf('eventsChanged').length > beforeDeletion, 20_000)
    await waitUntil(async () => !await reviewOn('2026-11-23'), 'the occurrence gone from the calendar', 10_000)
    t.pass('an occurrence deleted by another device leaves the calendar, with eventsChanged on the stream')
  })

  await t.test('the user\'s own event goes to Microsoft and gains its id; an edit follows it there', async (t) => {
    const own = 'e'.repeat(24)
    const created = await stack.backend.app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: own, calendarId: await primaryCalendarId(stack.backend.app, user.headers), title: 'Lunch with Bo', startDate: '2026-11-25T12:00:00Z', endDate: '2026-11-25T13:00:00Z' } })
    t.equal(created.statusCode, 204)
    const atMicrosoft = () => microsoft.storedEvents(calendarId).filter((event) => event['deleted'] !== true && String(event['subject']).startsWith('Lunch with Bo'))
    await waitUntil(() => atMicrosoft().length > 0, 'the event at Microsoft', 20_000)
    await waitUntil(async () => (await events()).some((event) => event._id === own && event.providerEventId !== undefined), 'the link back', 20_000)
    const linked = (await events()).find((event) => event._id === own)
    t.equal(linked?.providerEventId, atMicrosoft()[0]?.['id'], 'the providerEventId is the Graph event\'s id')
    t.equal(atMicrosoft()[0]?.['createdBy'], stack.syncConfig.extprovider2?.clientId, 'written by the application, not by another device')

    const edited = await stack.backend.app.inject({ method: 'PUT', url: `/api/event/${own}`, headers: user.headers, payload: { title: 'Lunch with Bo and Cy', startDate: '2026-11-25T12:00:00Z', endDate: '2026-11-25T13:30:00Z' } })
    t.equal(edited.statusCode, 204)
    await waitUntil(() => atMicrosoft().some((event) => event['subject'] === 'Lunch with Bo and Cy'), 'the edit at Microsoft', 20_000)
    // Microsoft notifies the application of its own writes too; that echo must not copy the event.
    await stack.microsoft.notificationsSettled()
    await new Promise((resolve) => setTimeout(resolve, 1500))
    t.equal(atMicrosoft().length, 1, 'one event at Microsoft')
    t.equal((await events()).filter((event) => event.title.startsWith('Lunch with Bo')).length, 1, 'one event in the calendar')
  })

  await t.test('revoked at Microsoft: attention CONNECTION_REVOKED on the stream, the connection needs the user, its events answer 410', async (t) => {
    const holiday = (await events()).find((event) => event.title === 'Holiday')
    const revokedNow = async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'actionRequired'
    microsoft.revoke(user.email, { reason: 'consent' })
    await stack.microsoft.notificationsSettled()
    // Access tokens outlive a revocation at Microsoft (up to an hour): the reauthorizationRequired
    // lifecycle notification makes Sync refresh, which is where the revocation shows.
    t.ok(await eventually(revokedNow, 5000), 'the reauthorizationRequired notification alone reveals the revocation')
    await stream.until(() => messagesOf('syncStatusChanged').some((message) => message.code === 'CONNECTION_REVOKED'), 20_000)
    const revoked = messagesOf('syncStatusChanged').find((message) => message.code === 'CONNECTION_REVOKED')
    t.match(revoked, { status: 'attention', retryable: false })
    const [connection] = await stack.sync.syncConnections.listByUser(user.userId)
    t.match(connection, { provider: 'microsoft', state: 'actionRequired', reason: 'authorizationRevoked' })
    t.equal(revoked?.connectionId, connection?._id.toHexString(), 'the message names the connection')

    // A dead grant ends the user's sessions (the backend's rule for every provider).
    await stream.untilEnded(20_000)
    const back = await signIn(stack.backend.app, { email: user.email, password: 'pw-for-grace-1' })
    const refused = await stack.backend.app.inject({ method: 'PUT', url: `/api/event/${holiday?._id ?? ''}`, headers: back.headers, payload: { title: 'Holiday!', startDate: '2026-12-24', endDate: '2026-12-27', isAllDay: true, calendarId } })
    t.equal(refused.statusCode, 410)
    t.match(refused.json(), { code: 'CONNECTION_REVOKED', connectionId: revoked?.connectionId })
  })
})
