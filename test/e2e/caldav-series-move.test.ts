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

// A daily series another client wrote on a CalDAV server (a real Radicale), with a cancelled day
// (EXDATE) and a renamed one (a RECURRENCE-ID override), moved here from 10:00 to 14:00 as the web
// client's dialog sends it: the exceptions move along on both sides, by the same rule.

const WINDOW = { from: '2026-11-30T00:00:00Z', to: '2026-12-08T00:00:00Z' }
const USER = 'ida'
const PASSWORD = 'ida-app-password'

const RESOURCE = [
  'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Another client//EN',
  'BEGIN:VEVENT', 'UID:daily-standup@another.example', 'DTSTAMP:20261120T080000Z', 'LAST-MODIFIED:20261120T080000Z',
  'DTSTART;TZID=Europe/Berlin:20261201T100000', 'DTEND;TZID=Europe/Berlin:20261201T103000', 'RRULE:FREQ=DAILY;COUNT=6',
  'EXDATE;TZID=Europe/Berlin:20261203T100000', 'SUMMARY:Stand-up', 'END:VEVENT',
  'BEGIN:VEVENT', 'UID:daily-standup@another.example', 'DTSTAMP:20261120T080000Z', 'LAST-MODIFIED:20261120T080000Z',
  'RECURRENCE-ID;TZID=Europe/Berlin:20261205T100000', 'DTSTART;TZID=Europe/Berlin:20261205T100000', 'DTEND;TZID=Europe/Berlin:20261205T103000',
  'SUMMARY:Stand-up (renamed there)', 'END:VEVENT',
  'END:VCALENDAR', ''
].join('\r\n')

test('CalDAV: a series moved here takes another client\'s cancelled and renamed days along, on both sides', { skip: radicaleMissing() ?? false }, async (t) => {
  const stack = await startFullStack(t)
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, PASSWORD, 'home', 'Home')
  const resourceUrl = `${calendarUrl}standup.ics`
  t.equal((await radicale.put(resourceUrl, USER, PASSWORD, RESOURCE)).status, 201, 'another client wrote the series')
  const email = uniqueEmail('caldav-move')
  const user = await signUp(stack.backend.app, { email, password: 'pw-for-caldav-move-1' })
  const app = stack.backend.app
  await connectCalDav(stack, user, { serverUrl: radicale.url, username: USER, password: PASSWORD })

  const ours = async () => await ourOccurrences(app, user.headers, WINDOW)
  const theirs = async () => caldavOccurrences((await radicale.get(calendarUrl, USER, PASSWORD)).body, WINDOW)
  const refresh = async () => await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
  const at = (day: number, hour: number, title: string) => `2026-12-0${day}T${String(hour - 1).padStart(2, '0')}:00:00.000Z|2026-12-0${day}T${String(hour - 1).padStart(2, '0')}:30:00.000Z|${title}`

  await waitConverged(ours, theirs, 'the imported series', refresh)
  t.same(await ours(), [at(1, 10, 'Stand-up'), at(2, 10, 'Stand-up'), at(4, 10, 'Stand-up'), at(5, 10, 'Stand-up (renamed there)'), at(6, 10, 'Stand-up')], 'imported as another client shows it')

  const range = (await app.inject({ method: 'GET', url: `/api/event?start=${WINDOW.from}&end=${WINDOW.to}`, headers: user.headers })).json<CalendarEvent[]>()
  const first = range.find((event) => event.startDate.startsWith('2026-12-01')) as CalendarEvent
  const seriesId = first.recurrence?.eventId ?? first._id.split('_')[0] ?? ''
  const series = (await app.inject({ method: 'GET', url: `/api/event/${seriesId}`, headers: user.headers })).json<CalendarEvent>()
  const draft = { title: 'Stand-up', description: '', location: '', isAllDay: false, startDate: '2026-12-01T14:00:00+01:00', endDate: '2026-12-01T14:30:00+01:00', timeZone: 'Europe/Berlin', frequency: 'DAILY' as const }
  t.same(await sendPlan(app, user.headers, planEdit(first, draft, 'all', series, mintEventId())), [204], 'moved to 14:00, all events')

  const moved = [at(1, 14, 'Stand-up'), at(2, 14, 'Stand-up'), at(4, 14, 'Stand-up'), at(5, 14, 'Stand-up (renamed there)'), at(6, 14, 'Stand-up')]
  t.same(await ours(), moved, 'here at once: 3 December still cancelled, 5 December still renamed, nothing left at 10:00')
  await waitUntil(async () => (await radicale.get(resourceUrl, USER, PASSWORD)).body.includes('DTSTART;TZID=Europe/Berlin:20261201T140000'), 'the move on the server', 20_000)
  await waitConverged(ours, theirs, 'both sides after the move', refresh)
  t.same(await theirs(), moved, 'and so another client shows it (ical.js)')
  const stored = (await radicale.get(resourceUrl, USER, PASSWORD)).body
  t.match(stored, /EXDATE;TZID=Europe\/Berlin:20261203T140000/, 'the cancelled day moved with the series')
  t.match(stored, /RECURRENCE-ID;TZID=Europe\/Berlin:20261205T140000/, 'and the renamed one')
  t.notMatch(stored, /T100000/, 'nothing of 10:00 is left in the resource')

  // Another client moves the 4th to 16:00 (its title unchanged); the series is then renamed here.
  const withMoved = stored.replace(/END:VCALENDAR\s*$/, [
    'BEGIN:VEVENT', 'UID:daily-standup@another.example', 'DTSTAMP:20261121T080000Z', 'LAST-MODIFIED:20261121T080000Z',
    'RECURRENCE-ID;TZID=Europe/Berlin:20261204T140000', 'DTSTART;TZID=Europe/Berlin:20261204T160000', 'DTEND;TZID=Europe/Berlin:20261204T163000',
    'SUMMARY:Stand-up', 'END:VEVENT', 'END:VCALENDAR', ''
  ].join('\r\n'))
  t.ok([201, 204].includes((await radicale.put(resourceUrl, USER, PASSWORD, withMoved)).status), 'another client moved the 4th')
  await waitUntil(async () => {
    await refresh()
    return (await ours()).some((line) => line.startsWith('2026-12-04T15:00'))
  }, 'the moved occurrence here', 20_000)
  const range2 = (await app.inject({ method: 'GET', url: `/api/event?start=${WINDOW.from}&end=${WINDOW.to}`, headers: user.headers })).json<CalendarEvent[]>()
  const firstAgain = range2.find((event) => event.startDate.startsWith('2026-12-01')) as CalendarEvent
  const seriesAgain = (await app.inject({ method: 'GET', url: `/api/event/${seriesId}`, headers: user.headers })).json<CalendarEvent>()
  t.same(await sendPlan(app, user.headers, planEdit(firstAgain, { ...draft, title: 'Stand-up (team)' }, 'all', seriesAgain, mintEventId())), [204], 'renamed, all events')
  const renamed = [at(1, 14, 'Stand-up (team)'), at(2, 14, 'Stand-up (team)'), at(4, 16, 'Stand-up (team)'), at(5, 14, 'Stand-up (renamed there)'), at(6, 14, 'Stand-up (team)')]
  t.same(await ours(), renamed, 'here: the moved occurrence takes the new title, the one renamed there keeps its own')
  await waitUntil(async () => (await radicale.get(resourceUrl, USER, PASSWORD)).body.includes('SUMMARY:Stand-up (team)'), 'the rename on the server', 20_000)
  await waitConverged(ours, theirs, 'both sides after the rename', refresh)
  t.same(await theirs(), renamed, 'and so another client shows it')
})
