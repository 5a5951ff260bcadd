import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { graphClient, occurrenceOn } from './graph-client.js'
import { connectMicrosoft, defaultMicrosoftCalendar, startFullStack, userWithMicrosoftAccount, withMicrosoft, primaryCalendarId } from './stack.js'
import { microsoftOccurrences, ourOccurrences, waitConverged } from './occurrences.js'

// The Google case of test/e2e/google-moved-occurrence.test.ts at Microsoft: a series made here,
// one occurrence moved at Microsoft by another device (Graph's exception of a seriesMaster), the
// series edited here, then split ("this and following"). Both sides must show the same occurrences.

const WINDOW = { from: '2026-11-30T00:00:00Z', to: '2027-01-05T00:00:00Z' }
const SERIES_ID = 'c3'.repeat(12)
const SPLIT_ID = 'd4'.repeat(12)
const NEW_YORK = 'Eastern Standard Time'

interface Stored { providerEventId?: string, recurrence?: { rule?: string[], eventId?: string }, startDate?: string }

test('Microsoft: a series made here, an occurrence moved there, then edited and split here: both sides converge', async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { microsoft: true }))
  const user = await userWithMicrosoftAccount(stack, 'mo-ms', NEW_YORK)
  const microsoft = stack.microsoft.control
  const calendarId = defaultMicrosoftCalendar(stack, user.email)
  const app = stack.backend.app
  t.equal((await connectMicrosoft(stack, user)).searchParams.get('status'), 'connected')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)
  const device = await graphClient(stack.microsoft, user.email, `${stack.backendOrigin}/sync/oauth/microsoft/callback`)

  const ours = async () => await ourOccurrences(app, user.headers, WINDOW)
  const theirs = async () => await microsoftOccurrences(device, WINDOW)
  const series = async (): Promise<Stored> => (await app.inject({ method: 'GET', url: `/api/event/${SERIES_ID}`, headers: user.headers })).json()
  const master = () => microsoft.storedEvents(calendarId).find((event) => event['deleted'] !== true && event['type'] === 'seriesMaster' && String(event['subject']).startsWith('Standup'))
  const converged = async (what: string) => {
    await stack.microsoft.notificationsSettled()
    await waitConverged(ours, theirs, what)
  }

  const body = {
    title: 'Standup',
    startDate: '2026-12-01T10:00:00-05:00',
    endDate: '2026-12-01T11:00:00-05:00',
    timeZone: 'America/New_York',
    recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=TU'] }
  }

  let masterId = ''
  await t.test('1. the series reaches Microsoft and gains its id', async (t) => {
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: SERIES_ID, ...body, calendarId: await primaryCalendarId(app, user.headers) } })).statusCode, 204)
    await waitUntil(() => master() !== undefined, 'the series at Microsoft', 20_000)
    masterId = String(master()?.['id'])
    await waitUntil(async () => (await series()).providerEventId === masterId, 'the link back', 20_000)
    await converged('both sides with the weekly series')
    t.equal((await ours()).length, 5, 'Dec 1, 8, 15, 22 and 29')
  })

  await t.test('2. Microsoft moves the second occurrence and deletes the first: an exception of the series and an exclusion, the series keeps its id', async (t) => {
    microsoft.patchEvent(calendarId, await occurrenceOn(device, masterId, '2026-12-08'), {
      start: { dateTime: '2026-12-08T12:00:00', timeZone: NEW_YORK },
      end: { dateTime: '2026-12-08T13:00:00', timeZone: NEW_YORK }
    })
    microsoft.deleteEvent(calendarId, await occurrenceOn(device, masterId, '2026-12-01'))
    await waitUntil(async () => (await ours()).some((entry) => entry.startsWith('2026-12-08T17:00:00.000Z')), 'the moved occurrence here', 20_000)
    await converged('both sides with the moved occurrence')
    const stored = await series()
    t.equal(stored.providerEventId, masterId, 'the series keeps the id of Microsoft\'s master')
    t.ok(stored.recurrence?.rule?.some((line) => line.startsWith('RRULE:FREQ=WEEKLY')), 'and its rule')
    const moved: Stored = (await app.inject({ method: 'GET', url: `/api/event/${SERIES_ID}_20261208T150000Z`, headers: user.headers })).json()
    t.match(moved, { recurrence: { eventId: SERIES_ID } })
    t.equal(Date.parse(moved.startDate ?? ''), Date.parse('2026-12-08T17:00:00Z'))
  })

  await t.test('2b. "this event" deleted here (Dec 22): gone at Microsoft too', async (t) => {
    t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${SERIES_ID}_20261222T150000Z?applyTo=this`, headers: user.headers })).statusCode, 204)
    await converged('both sides without Dec 22')
    t.notOk((await ours()).some((entry) => entry.startsWith('2026-12-22T')), 'no Dec 22 here')
  })

  await t.test('3. the series\' title changes here: Microsoft\'s master changes, the moved occurrence stays moved, nothing is lost', async (t) => {
    // A client sends the rule back as it read it, with the exclusion Microsoft's deletion became.
    const rule = (await series()).recurrence?.rule ?? []
    t.ok(rule.some((line) => line.startsWith('EXDATE')), 'the deleted occurrence is an exclusion here')
    t.equal((await app.inject({ method: 'PUT', url: `/api/event/${SERIES_ID}`, headers: user.headers, payload: { ...body, recurrence: { rule }, title: 'Standup (team)' } })).statusCode, 204)
    await waitUntil(() => master()?.['subject'] === 'Standup (team)', 'the title at Microsoft', 20_000)
    await converged('both sides after the title change')
    const lines = await ours()
    t.equal(lines.length, 3, 'every occurrence of the series is still read, and Dec 22 stays deleted')
    t.ok(lines.some((entry) => entry.startsWith('2026-12-08T17:00:00.000Z|2026-12-08T18:00:00.000Z')), 'the moved one at its new time')
    t.equal(lines.filter((entry) => entry.startsWith('2026-12-01T')).length, 0, 'none on Dec 1')
    t.ok((await series()).recurrence?.rule?.some((line) => line.startsWith('RRULE:FREQ=WEEKLY')), 'our series keeps its rule')
  })

  await t.test('4. "this and following" from Dec 15: Microsoft\'s series ends before it, the new series goes there too', async (t) => {
    t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${SERIES_ID}_20261215T150000Z?applyTo=thisAndFollowing`, headers: user.headers })).statusCode, 204)
    const split = { ...body, calendarId: await primaryCalendarId(app, user.headers), _id: SPLIT_ID, title: 'Standup (new slot)', startDate: '2026-12-15T09:00:00-05:00', endDate: '2026-12-15T09:30:00-05:00' }
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: split })).statusCode, 204)
    await waitUntil(() => (master()?.['recurrence'] as { range?: { type?: string } } | undefined)?.range?.type === 'endDate', 'an end date at Microsoft', 20_000)
    await waitUntil(() => microsoft.storedEvents(calendarId).some((event) => event['subject'] === 'Standup (new slot)'), 'the new series at Microsoft', 20_000)
    await converged('both sides after the split')
    const lines = await ours()
    t.same(lines.filter((entry) => !entry.endsWith('|Standup (new slot)')).map((entry) => entry.slice(0, 24)), ['2026-12-08T17:00:00.000Z'], 'the moved Dec 8 of the first series (Dec 1 stays deleted)')
    t.equal(lines.filter((entry) => entry.endsWith('|Standup (new slot)')).length, 3, 'Dec 15, 22 and 29')
  })
})
