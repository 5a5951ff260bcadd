import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { connectGoogle, startFullStack, userWithGoogleAccount, primaryCalendarId } from './stack.js'
import { googleItems, ourOccurrences, providerOccurrences, waitConverged } from './occurrences.js'

// A series made here, one occurrence moved at Google ("another device", the stand-in's control
// surface), then the series edited here, then split ("this and following"): both sides must keep
// showing the same occurrences, and the series must never be lost.

const WINDOW = { from: '2026-11-30T00:00:00Z', to: '2027-01-05T00:00:00Z' }
const SERIES_ID = 'a1'.repeat(12)
const SPLIT_ID = 'b2'.repeat(12)

interface Stored { _id: string, title: string, providerEventId?: string, recurrence?: { rule?: string[], eventId?: string }, originalStartDate?: string }

test('a series made here, an occurrence moved at Google, then edited and split here: both sides converge', async (t) => {
  const stack = await startFullStack(t)
  const user = await userWithGoogleAccount(stack, 'mo')
  const google = stack.google.control
  const primary = user.email
  const app = stack.backend.app
  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)

  const ours = async () => await ourOccurrences(app, user.headers, WINDOW)
  const theirs = () => providerOccurrences(googleItems(google.storedEvents(primary)), WINDOW)
  const series = async (): Promise<Stored> => (await app.inject({ method: 'GET', url: `/api/event/${SERIES_ID}`, headers: user.headers })).json()
  const googleMaster = () => google.storedEvents(primary).find((event) => event['summary'] !== undefined && event['recurrence'] !== undefined && String(event['summary']).startsWith('Standup'))
  const converged = async (what: string) => { await waitConverged(ours, theirs, what) }

  const body = {
    title: 'Standup',
    startDate: '2026-12-01T10:00:00-05:00',
    endDate: '2026-12-01T11:00:00-05:00',
    timeZone: 'America/New_York',
    recurrence: { rule: ['RRULE:FREQ=WEEKLY'] }
  }

  let googleId = ''
  await t.test('1. the series reaches Google and gains its id', async (t) => {
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: SERIES_ID, ...body, calendarId: await primaryCalendarId(app, user.headers) } })).statusCode, 204)
    await waitUntil(() => googleMaster() !== undefined, 'the series at Google', 20_000)
    googleId = String(googleMaster()?.['id'])
    await waitUntil(async () => (await series()).providerEventId === googleId, 'the link back', 20_000)
    await converged('both sides with the weekly series')
    t.equal((await ours()).length, 5, 'Dec 1, 8, 15, 22 and 29')
  })

  await t.test('2. Google moves the second occurrence: it arrives as an exception of the series, the series keeps its id', async (t) => {
    google.patchEvent(primary, `${googleId}_20261208T150000Z`, {
      start: { dateTime: '2026-12-08T12:00:00-05:00', timeZone: 'America/New_York' },
      end: { dateTime: '2026-12-08T13:00:00-05:00', timeZone: 'America/New_York' }
    })
    await waitUntil(async () => (await ours()).some((entry) => entry.startsWith('2026-12-08T17:00:00.000Z')), 'the moved occurrence here', 20_000)
    await converged('both sides with the moved occurrence')
    const stored = await series()
    t.equal(stored.providerEventId, googleId, 'the series keeps the id of Google\'s master')
    t.same(stored.recurrence?.rule, ['RRULE:FREQ=WEEKLY'])
    const moved: Stored = (await app.inject({ method: 'GET', url: `/api/event/${SERIES_ID}_20261208T150000Z`, headers: user.headers })).json()
    t.match(moved, { recurrence: { eventId: SERIES_ID }, providerEventId: `${googleId}_20261208T150000Z`, startDate: /^2026-12-08T12:00:00/ })
  })

  await t.test('2b. "this event" deleted here (Dec 22): gone at Google too', async (t) => {
    t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${SERIES_ID}_20261222T150000Z?applyTo=this`, headers: user.headers })).statusCode, 204)
    await converged('both sides without Dec 22')
    t.notOk((await ours()).some((entry) => entry.startsWith('2026-12-22T')), 'no Dec 22 here')
  })

  await t.test('3. the series\' title changes here: Google\'s master changes, the moved occurrence stays moved, nothing is lost', async (t) => {
    t.equal((await app.inject({ method: 'PUT', url: `/api/event/${SERIES_ID}`, headers: user.headers, payload: { ...body, title: 'Standup (team)' } })).statusCode, 204)
    await waitUntil(() => googleMaster()?.['summary'] === 'Standup (team)', 'the title at Google', 20_000)
    await converged('both sides after the title change')
    const lines = await ours()
    t.equal(lines.length, 4, 'every occurrence of the series is still read, and Dec 22 stays deleted')
    t.ok(lines.some((entry) => entry.startsWith('2026-12-08T17:00:00.000Z|2026-12-08T18:00:00.000Z')), 'the moved one at its new time')
    t.equal(lines.filter((entry) => entry.startsWith('2026-12-01T')).length, 1, 'one event on Dec 1')
    t.same(googleMaster()?.['recurrence'], ['RRULE:FREQ=WEEKLY'], 'Google\'s series keeps its rule')
    t.match(googleMaster()?.['start'], { dateTime: /^2026-12-01T10:00:00/ })
    t.same((await series()).recurrence?.rule, ['RRULE:FREQ=WEEKLY'], 'our series keeps its rule')
  })

  await t.test('4. "this and following" from Dec 15: Google\'s master gets its UNTIL, the new series goes there too', async (t) => {
    t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${SERIES_ID}_20261215T150000Z?applyTo=thisAndFollowing`, headers: user.headers })).statusCode, 204)
    const split = { ...body, calendarId: await primaryCalendarId(app, user.headers), _id: SPLIT_ID, title: 'Standup (new slot)', startDate: '2026-12-15T09:00:00-05:00', endDate: '2026-12-15T09:30:00-05:00' }
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: split })).statusCode, 204)
    await waitUntil(() => String((googleMaster()?.['recurrence'] as string[] | undefined)?.[0]).includes('UNTIL='), 'UNTIL at Google', 20_000)
    await waitUntil(() => google.storedEvents(primary).some((event) => event['summary'] === 'Standup (new slot)'), 'the new series at Google', 20_000)
    await converged('both sides after the split')
    const lines = await ours()
    t.same(lines.filter((entry) => !entry.endsWith('|Standup (new slot)')).map((entry) => entry.slice(0, 24)), ['2026-12-01T15:00:00.000Z', '2026-12-08T17:00:00.000Z'], 'Dec 1 and the moved Dec 8 of the first series')
    t.equal(lines.filter((entry) => entry.endsWith('|Standup (new slot)')).length, 3, 'Dec 15, 22 and 29')
  })
})
