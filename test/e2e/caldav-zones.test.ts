import { test } from 'tap'
import { DateTime } from 'luxon'
import { waitUntil } from '../processes.js'
import { signUp, uniqueEmail } from '../helper.js'
import { radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'
import { startFullStack, primaryCalendarId } from './stack.js'
import { caldavOccurrences, ourOccurrences } from './occurrences.js'

// A weekly 09:00 meeting in Berlin made here, across the change to summer time (2027-03-28), on a
// real Radicale: the server holds it in its zone (TZID and VTIMEZONE), so another client (ical.js)
// sees 09:00 on both sides of the change. Then another client moves one occurrence and removes the
// move again: the occurrence returns to the series' time here too.

const WINDOW = { from: '2027-03-14T00:00:00Z', to: '2027-04-10T00:00:00Z' }
const SERIES_ID = 'a7'.repeat(12)
const ZONE = 'Europe/Berlin'
const USER = 'tz'
const PASSWORD = 'tz-app-password'
/** Mar 15 and 22 in winter time (UTC+1), Mar 29 and Apr 5 in summer time (UTC+2): 09:00 local each. */
const AT_NINE = ['2027-03-15T08:00:00.000Z', '2027-03-22T08:00:00.000Z', '2027-03-29T07:00:00.000Z', '2027-04-05T07:00:00.000Z']

interface Stored { providerEventId?: string, startDate?: string, timeZone?: string }

function utc (date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z').replaceAll('-', '').replaceAll(':', '')
}

function berlinWallTimes (lines: string[]): string[] {
  return lines.map((entry) => DateTime.fromISO(entry.slice(0, 24), { zone: ZONE }).toFormat('yyyy-MM-dd HH:mm'))
}

test('CalDAV: a series keeps its zone across a daylight-saving change, and an override removed at the server leaves the backend', { skip: radicaleMissing() ?? false }, async (t) => {
  const stack = await startFullStack(t)
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, PASSWORD, 'home', 'Home')
  const email = uniqueEmail('caldav-tz')
  const user = { ...await signUp(stack.backend.app, { email, password: 'pw-for-caldav-tz-1' }), email }
  const app = stack.backend.app
  const connected = await app.inject({ method: 'POST', url: '/api/connections/caldav', headers: user.headers, payload: { serverUrl: radicale.url, username: USER, password: PASSWORD } })
  t.equal(connected.statusCode, 200)
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)

  const collection = async () => (await radicale.get(calendarUrl, USER, PASSWORD)).body
  const ours = async () => await ourOccurrences(app, user.headers, WINDOW)
  const theirs = async () => caldavOccurrences(await collection(), WINDOW)
  const series = async (): Promise<Stored> => (await app.inject({ method: 'GET', url: `/api/event/${SERIES_ID}`, headers: user.headers })).json()
  const occurrence = async (start: string) => await app.inject({ method: 'GET', url: `/api/event/${SERIES_ID}_${utc(new Date(start))}`, headers: user.headers })
  const refresh = async () => await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
  const converged = async (what: string) => {
    try {
      await waitUntil(async () => {
        await refresh()
        return JSON.stringify(await ours()) === JSON.stringify(await theirs())
      }, what, 20_000)
    } catch (error) {
      throw new Error(`${(error as Error).message}\nhere:  ${(await ours()).join('\n       ')}\nthere: ${(await theirs()).join('\n       ')}`)
    }
  }

  let resourceUrl = ''
  await t.test('1. written with TZID and a VTIMEZONE: another client reads 09:00 Berlin time before and after the change', async (t) => {
    const body = { title: 'Weekly', startDate: '2027-03-15T09:00:00+01:00', endDate: '2027-03-15T09:30:00+01:00', timeZone: ZONE, recurrence: { rule: ['RRULE:FREQ=WEEKLY'] } }
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: SERIES_ID, ...body, calendarId: await primaryCalendarId(app, user.headers) } })).statusCode, 204)
    await waitUntil(async () => (await series()).providerEventId !== undefined, 'the link back', 20_000)
    resourceUrl = `${radicale.url}${(await series()).providerEventId ?? ''}`
    const resource = (await radicale.get(resourceUrl, USER, PASSWORD)).body
    t.match(resource, /\r\nDTSTART;TZID=Europe\/Berlin:20270315T090000\r\n/, 'the start as Berlin wall time')
    t.match(resource, /\r\nDTEND;TZID=Europe\/Berlin:20270315T093000\r\n/)
    t.match(resource, /BEGIN:VTIMEZONE\r\nTZID:Europe\/Berlin\r\n/, 'the zone defined in the resource')
    t.match(resource, /TZOFFSETFROM:\+0100\r\nTZOFFSETTO:\+0200\r\n/, 'with the change to summer time')
    const there = await theirs()
    t.same(there.map((entry) => entry.slice(0, 24)), AT_NINE, 'ical.js expands the series at 09:00 Berlin time on both sides of the change')
    t.same(berlinWallTimes(there), ['2027-03-15 09:00', '2027-03-22 09:00', '2027-03-29 09:00', '2027-04-05 09:00'])
    await converged('both sides with the series')
    t.same((await ours()).map((entry) => entry.slice(0, 24)), AT_NINE)
    t.equal((await series()).timeZone, ZONE, 'the pull reads the zone back')
  })

  await t.test('2. another client moves Mar 22 to 14:00 (RECURRENCE-ID with TZID): an edit of that occurrence here', async (t) => {
    const current = (await radicale.get(resourceUrl, USER, PASSWORD)).body
    const uid = /\r?\nUID:([^\r\n]+)/.exec(current)?.[1] ?? ''
    const override = [
      'BEGIN:VEVENT', `UID:${uid}`, `DTSTAMP:${utc(new Date())}`, `LAST-MODIFIED:${utc(new Date(Date.now() + 1000))}`,
      'RECURRENCE-ID;TZID=Europe/Berlin:20270322T090000', 'DTSTART;TZID=Europe/Berlin:20270322T140000', 'DTEND;TZID=Europe/Berlin:20270322T143000',
      'SUMMARY:Weekly', 'END:VEVENT'
    ].join('\r\n')
    const put = await radicale.put(resourceUrl, USER, PASSWORD, current.replace(/END:VCALENDAR\s*$/, `${override}\r\nEND:VCALENDAR\r\n`))
    t.ok(put.status === 201 || put.status === 204, `the other client's write (${put.status})`)
    await waitUntil(async () => {
      await refresh()
      return (await ours()).some((entry) => entry.startsWith('2027-03-22T13:00:00.000Z'))
    }, 'the moved occurrence here', 20_000)
    await converged('both sides with the moved occurrence')
    const moved: Stored = (await occurrence('2027-03-22T08:00:00Z')).json()
    t.match(moved.providerEventId, /#/, 'the edit carries the override\'s id')
    t.equal(Date.parse(moved.startDate ?? ''), Date.parse('2027-03-22T13:00:00Z'))
  })

  await t.test('3. another client removes the override: after the next pull the edit is gone and Mar 22 is at 09:00 again', async (t) => {
    const current = (await radicale.get(resourceUrl, USER, PASSWORD)).body
    const without = current.replace(/BEGIN:VEVENT\r\n(?:(?!END:VEVENT)[\s\S])*?RECURRENCE-ID[\s\S]*?END:VEVENT\r\n/, '')
    t.notMatch(without, /RECURRENCE-ID/, 'the other client\'s copy has no override')
    const put = await radicale.put(resourceUrl, USER, PASSWORD, without)
    t.ok(put.status === 201 || put.status === 204, `the other client's write (${put.status})`)
    await waitUntil(async () => {
      await refresh()
      return (await ours()).some((entry) => entry.startsWith('2027-03-22T08:00:00.000Z'))
    }, 'the occurrence back at the series\' time here', 20_000)
    await converged('both sides without the override')
    t.same((await ours()).map((entry) => entry.slice(0, 24)), AT_NINE, 'every occurrence at 09:00 Berlin time')
    const back = await occurrence('2027-03-22T08:00:00Z')
    t.equal(back.statusCode, 200)
    const shown: Stored = back.json()
    t.equal(shown.providerEventId, (await series()).providerEventId, 'no edit with the override\'s id is left: the occurrence is the series\' own')
    t.equal(Date.parse(shown.startDate ?? ''), Date.parse('2027-03-22T08:00:00Z'))
  })
})
