import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { signUp, uniqueEmail } from '../helper.js'
import { radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'
import { mintEventId } from '../../lib/events/ids.js'
import { planEdit } from '../../web/src/lib/series-edit.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'
import { sendPlan } from '../web-plans.js'
import { connectCalDav, startFullStack } from './stack.js'
import { caldavOccurrences, ourOccurrences, waitConverged } from './occurrences.js'

// A daily 09:00 meeting Outlook wrote on a CalDAV server (a real Radicale): its zone is a Windows
// name, "Eastern Standard Time", defined by the resource's own VTIMEZONE, and the series crosses the
// United States' change to summer time (14 March 2027) two weeks before Europe's. It is imported in
// New York's zone, not the calendar's, so every occurrence lands where another client (ical.js)
// puts it; renamed here, the master is written in that zone and the other client's cancelled and
// renamed days stay on their occurrences (the override as its author wrote it).

const WINDOW = { from: '2027-03-07T00:00:00Z', to: '2027-03-21T00:00:00Z' }
const USER = 'oz'
const PASSWORD = 'oz-app-password'

const OUTLOOK_EASTERN = [
  'BEGIN:VTIMEZONE', 'TZID:Eastern Standard Time',
  'BEGIN:STANDARD', 'DTSTART:16010101T020000', 'TZOFFSETFROM:-0400', 'TZOFFSETTO:-0500', 'RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=1SU;BYMONTH=11', 'END:STANDARD',
  'BEGIN:DAYLIGHT', 'DTSTART:16010101T020000', 'TZOFFSETFROM:-0500', 'TZOFFSETTO:-0400', 'RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=2SU;BYMONTH=3', 'END:DAYLIGHT',
  'END:VTIMEZONE'
]

const RESOURCE = [
  'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:Microsoft Exchange Server 2010', 'METHOD:PUBLISH', ...OUTLOOK_EASTERN,
  'BEGIN:VEVENT', 'UID:040000008200E00074C5B7101A82E008000000005C2E1D7A', 'DTSTAMP:20261120T120000Z', 'LAST-MODIFIED:20261120T120000Z',
  'DTSTART;TZID=Eastern Standard Time:20270308T090000', 'DTEND;TZID=Eastern Standard Time:20270308T093000', 'RRULE:FREQ=DAILY;COUNT=12',
  'EXDATE;TZID=Eastern Standard Time:20270312T090000', 'SUMMARY:Sync with Boston', 'END:VEVENT',
  'BEGIN:VEVENT', 'UID:040000008200E00074C5B7101A82E008000000005C2E1D7A', 'DTSTAMP:20261120T120000Z', 'LAST-MODIFIED:20261120T120000Z',
  'RECURRENCE-ID;TZID=Eastern Standard Time:20270316T090000', 'DTSTART;TZID=Eastern Standard Time:20270316T090000', 'DTEND;TZID=Eastern Standard Time:20270316T093000',
  'SUMMARY:Sync with Boston (agenda sent)', 'END:VEVENT',
  'END:VCALENDAR', ''
].join('\r\n')

/** 09:00 in New York: 14:00 UTC before 14 March 2027, 13:00 UTC from then on. */
function nineInBoston (day: number, title: string): string {
  const hour = day < 14 ? 14 : 13
  const date = `2027-03-${String(day).padStart(2, '0')}`
  return `${date}T${hour}:00:00.000Z|${date}T${hour}:30:00.000Z|${title}`
}

test('CalDAV: a series in Outlook\'s "Eastern Standard Time" keeps New York\'s wall time across its change of offset, on both sides, and after a rename here', { skip: radicaleMissing() ?? false }, async (t) => {
  const stack = await startFullStack(t)
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, PASSWORD, 'work', 'Work')
  const resourceUrl = `${calendarUrl}boston.ics`
  t.equal((await radicale.put(resourceUrl, USER, PASSWORD, RESOURCE)).status, 201, 'Outlook wrote the series')
  const user = await signUp(stack.backend.app, { email: uniqueEmail('caldav-eastern'), password: 'pw-for-caldav-eastern-1' })
  const app = stack.backend.app
  await connectCalDav(stack, user, { serverUrl: radicale.url, username: USER, password: PASSWORD })

  const ours = async () => await ourOccurrences(app, user.headers, WINDOW)
  const theirs = async () => caldavOccurrences((await radicale.get(calendarUrl, USER, PASSWORD)).body, WINDOW)
  const refresh = async () => await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
  const days = [8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19]
  const expected = (title: string) => days.map((day) => nineInBoston(day, day === 16 ? 'Sync with Boston (agenda sent)' : title))

  await waitConverged(ours, theirs, 'the imported series', refresh)
  t.same(await theirs(), expected('Sync with Boston'), 'ical.js: 09:00 in New York every day, 12 March cancelled, 16 March renamed')
  t.same(await ours(), expected('Sync with Boston'), 'the same here')
  const range = (await app.inject({ method: 'GET', url: `/api/event?start=${WINDOW.from}&end=${WINDOW.to}`, headers: user.headers })).json<CalendarEvent[]>()
  const first = range.find((event) => event.startDate.startsWith('2027-03-08')) as CalendarEvent
  const series = (await app.inject({ method: 'GET', url: `/api/event/${first._id.split('_')[0] ?? ''}`, headers: user.headers })).json<CalendarEvent>()
  t.equal(series.timeZone, 'America/New_York', 'the series keeps its author\'s zone, as CLDR maps the Windows name')
  t.match(series.recurrence?.rule, ['RRULE:FREQ=DAILY;COUNT=12', 'EXDATE;TZID=America/New_York:20270312T090000'], 'its exclusion read in that zone')

  const draft = { title: 'Sync with Boston (weekly numbers)', description: '', location: '', isAllDay: false, startDate: first.startDate, endDate: first.endDate, timeZone: series.timeZone, frequency: 'DAILY' as const }
  t.same(await sendPlan(app, user.headers, planEdit(first, draft, 'all', series, mintEventId())), [204], 'renamed here, all events')
  await waitUntil(async () => (await radicale.get(resourceUrl, USER, PASSWORD)).body.includes('SUMMARY:Sync with Boston (weekly numbers)'), 'the rename on the server', 20_000)
  await waitConverged(ours, theirs, 'both sides after the rename', refresh)
  t.same(await theirs(), expected('Sync with Boston (weekly numbers)'), 'ical.js: still 09:00 in New York, the cancelled day still out, the renamed day still its own')
  const stored = (await radicale.get(resourceUrl, USER, PASSWORD)).body
  t.match(stored, /DTSTART;TZID=America\/New_York:20270308T090000/, 'the master written in New York\'s zone')
  t.match(stored, /RECURRENCE-ID;TZID=Eastern Standard Time:20270316T090000/, 'the override as its author wrote it, its zone defined beside')
  t.match(stored, /TZID:Eastern Standard Time/)
})
