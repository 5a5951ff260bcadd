import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { signUp, uniqueEmail } from '../helper.js'
import { radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'
import { startFullStack, primaryCalendarId } from './stack.js'
import { caldavOccurrences, ourOccurrences, waitConverged } from './occurrences.js'

// The Google case of test/e2e/google-moved-occurrence.test.ts on a CalDAV server (a real Radicale):
// a series made here, one occurrence moved by another client (a RECURRENCE-ID override in the
// series' resource), the series edited here, then split ("this and following").

const WINDOW = { from: '2026-11-30T00:00:00Z', to: '2027-01-05T00:00:00Z' }
const SERIES_ID = 'e5'.repeat(12)
const SPLIT_ID = 'f6'.repeat(12)
const USER = 'mo'
const PASSWORD = 'mo-app-password'

interface Stored { providerEventId?: string, recurrence?: { rule?: string[], eventId?: string }, startDate?: string }

/** iCalendar's UTC basic format of an instant. */
function utc (date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z').replaceAll('-', '').replaceAll(':', '')
}

test('CalDAV: a series made here, an occurrence moved by another client, then edited and split here: both sides converge', { skip: radicaleMissing() ?? false }, async (t) => {
  const stack = await startFullStack(t)
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, PASSWORD, 'home', 'Home')
  const email = uniqueEmail('caldav-mo')
  const user = { ...await signUp(stack.backend.app, { email, password: 'pw-for-caldav-mo-1' }), email }
  const app = stack.backend.app
  const connected = await app.inject({ method: 'POST', url: '/api/connections/caldav', headers: user.headers, payload: { serverUrl: radicale.url, username: USER, password: PASSWORD } })
  t.equal(connected.statusCode, 200)
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)

  const collection = async () => (await radicale.get(calendarUrl, USER, PASSWORD)).body
  const ours = async () => await ourOccurrences(app, user.headers, WINDOW)
  const theirs = async () => caldavOccurrences(await collection(), WINDOW)
  const series = async (): Promise<Stored> => (await app.inject({ method: 'GET', url: `/api/event/${SERIES_ID}`, headers: user.headers })).json()
  const refresh = async () => await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
  // On a failure: our records of the series (rule and versions) and the server's resource.
  const explain = async () => {
    const records = await app.mongo.db.collection('events').find({ user: user.userId }, { projection: { title: 1, recurrence: 1, originalStartDate: 1, lastUpdated: 1, providerUpdated: 1, providerEtag: 1, providerEventId: 1, generation: 1 } }).toArray()
    return `stored here: ${JSON.stringify(records)}\non the server: ${JSON.stringify(await collection())}`
  }
  const converged = async (what: string) => { await waitConverged(ours, theirs, what, refresh, explain) }

  const body = {
    title: 'Standup',
    startDate: '2026-12-01T10:00:00-05:00',
    endDate: '2026-12-01T11:00:00-05:00',
    timeZone: 'America/New_York',
    recurrence: { rule: ['RRULE:FREQ=WEEKLY'] }
  }

  let resourceUrl = ''
  await t.test('1. the series reaches the server and gains its resource', async (t) => {
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: SERIES_ID, ...body, calendarId: await primaryCalendarId(app, user.headers) } })).statusCode, 204)
    await waitUntil(async () => (await collection()).includes('SUMMARY:Standup'), 'the series on the server', 20_000)
    await waitUntil(async () => (await series()).providerEventId !== undefined, 'the link back', 20_000)
    resourceUrl = `${radicale.url}${(await series()).providerEventId ?? ''}`
    await converged('both sides with the weekly series')
    t.equal((await ours()).length, 5, 'Dec 1, 8, 15, 22 and 29')
  })

  await t.test('2. another client moves the second occurrence (RECURRENCE-ID): an exception of the series here, the series keeps its resource', async (t) => {
    const current = (await radicale.get(resourceUrl, USER, PASSWORD)).body
    const uid = /\r?\nUID:([^\r\n]+)/.exec(current)?.[1] ?? ''
    const override = [
      'BEGIN:VEVENT', `UID:${uid}`, `DTSTAMP:${utc(new Date())}`, `LAST-MODIFIED:${utc(new Date(Date.now() + 1000))}`,
      'RECURRENCE-ID:20261208T150000Z', 'DTSTART:20261208T170000Z', 'DTEND:20261208T180000Z', 'SUMMARY:Standup', 'END:VEVENT'
    ].join('\r\n')
    const put = await radicale.put(resourceUrl, USER, PASSWORD, current.replace(/END:VCALENDAR\s*$/, `${override}\r\nEND:VCALENDAR\r\n`))
    t.ok(put.status === 201 || put.status === 204, `the other client's write (${put.status})`)
    await waitUntil(async () => {
      await refresh()
      return (await ours()).some((entry) => entry.startsWith('2026-12-08T17:00:00.000Z'))
    }, 'the moved occurrence here', 20_000)
    await converged('both sides with the moved occurrence')
    const stored = await series()
    t.equal(`${radicale.url}${stored.providerEventId ?? ''}`, resourceUrl, 'the series keeps its resource')
    t.same(stored.recurrence?.rule, ['RRULE:FREQ=WEEKLY'])
    const moved: Stored = (await app.inject({ method: 'GET', url: `/api/event/${SERIES_ID}_20261208T150000Z`, headers: user.headers })).json()
    t.match(moved, { recurrence: { eventId: SERIES_ID } })
    t.equal(Date.parse(moved.startDate ?? ''), Date.parse('2026-12-08T17:00:00Z'))
  })

  await t.test('2b. "this event" deleted here (Dec 22): an EXDATE of the series on the server', async (t) => {
    t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${SERIES_ID}_20261222T150000Z?applyTo=this`, headers: user.headers })).statusCode, 204)
    await waitUntil(async () => /\nEXDATE[^\r\n]*:20261222T/.test((await radicale.get(resourceUrl, USER, PASSWORD)).body), 'the EXDATE on the server', 20_000)
    await converged('both sides without Dec 22')
    t.equal((await ours()).length, 4, 'Dec 1, the moved Dec 8, Dec 15 and Dec 29')
  })

  await t.test('3. the series\' title changes here: the server\'s series changes, the override and the deleted day stay, nothing is lost', async (t) => {
    t.equal((await app.inject({ method: 'PUT', url: `/api/event/${SERIES_ID}`, headers: user.headers, payload: { ...body, title: 'Standup (team)' } })).statusCode, 204)
    await waitUntil(async () => (await collection()).includes('SUMMARY:Standup (team)'), 'the title on the server', 20_000)
    await converged('both sides after the title change')
    const lines = await ours()
    t.equal(lines.length, 4, 'every occurrence of the series is still read, and Dec 22 stays deleted')
    t.match((await radicale.get(resourceUrl, USER, PASSWORD)).body, /\nEXDATE[^\r\n]*:20261222T/, 'the server keeps its EXDATE')
    t.ok(lines.some((entry) => entry.startsWith('2026-12-08T17:00:00.000Z|2026-12-08T18:00:00.000Z')), 'the moved one at its new time')
    t.equal(lines.filter((entry) => entry.startsWith('2026-12-01T')).length, 1, 'one event on Dec 1')
    t.same((await series()).recurrence?.rule, ['RRULE:FREQ=WEEKLY', 'EXDATE;TZID=America/New_York:20261222T100000'], 'our series keeps its rule, the server\'s exclusion of the deleted day with it')
  })

  await t.test('4. "this and following" from Dec 15: the server\'s series gets its UNTIL, the new series goes there too', async (t) => {
    t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${SERIES_ID}_20261215T150000Z?applyTo=thisAndFollowing`, headers: user.headers })).statusCode, 204)
    const split = { ...body, calendarId: await primaryCalendarId(app, user.headers), _id: SPLIT_ID, title: 'Standup (new slot)', startDate: '2026-12-15T09:00:00-05:00', endDate: '2026-12-15T09:30:00-05:00' }
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: split })).statusCode, 204)
    await waitUntil(async () => /RRULE:[^\r\n]*UNTIL=/.test((await radicale.get(resourceUrl, USER, PASSWORD)).body), 'UNTIL on the server', 20_000)
    await waitUntil(async () => (await collection()).includes('SUMMARY:Standup (new slot)'), 'the new series on the server', 20_000)
    await converged('both sides after the split')
    const lines = await ours()
    t.same(lines.filter((entry) => !entry.endsWith('|Standup (new slot)')).map((entry) => entry.slice(0, 24)), ['2026-12-01T15:00:00.000Z', '2026-12-08T17:00:00.000Z'], 'Dec 1 and the moved Dec 8 of the first series')
    t.equal(lines.filter((entry) => entry.endsWith('|Standup (new slot)')).length, 3, 'Dec 15, 22 and 29')
  })
})
