// The rules behind the agenda and the 4-day view, without a browser: which days each shows, how
// far previous and next move, the ranges the agenda reads (a page at a time, each within the API's
// widest read), its grouping by day (empty days left out, all-day first, an event over several
// days under each of them), and the keys and paths that reach both.
import { test } from 'tap'
import { DateTime } from 'luxon'
import { AGENDA_DAYS, MAX_READ_DAYS, step, stepUnit, viewDays, viewRange, viewTitle } from '../../web/src/lib/grid.js'
import { agendaDays, agendaPages } from '../../web/src/lib/agenda.js'
import { shortcutFor, type KeyPress } from '../../web/src/lib/shortcuts.js'
import { routeOf } from '../../web/src/lib/auth-params.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'

const zone = 'Europe/Berlin'

function event (id: string, start: string, end: string, extra: Partial<CalendarEvent> = {}): CalendarEvent {
  return { _id: id, title: id, startDate: start, endDate: end, isAllDay: false, timeZone: zone, status: 'confirmed', origin: 'compass', priority: 'unassigned', ...extra }
}

test('4 days: four days from the shown date (not from Monday), moving by four', async (t) => {
  const thursday = DateTime.fromISO('2026-03-05T15:00', { zone })
  t.same(viewDays(thursday, '4days').map((day) => day.toISODate()), ['2026-03-05', '2026-03-06', '2026-03-07', '2026-03-08'])
  t.equal(step(thursday, '4days', 1).toISODate(), '2026-03-09')
  t.equal(step(thursday, '4days', -1).toISODate(), '2026-03-01')
  const range = viewRange(thursday, '4days')
  t.equal(range.from.toISOString(), '2026-03-04T23:00:00.000Z')
  t.equal(range.to.toISOString(), '2026-03-08T23:00:00.000Z')
  t.equal(stepUnit('4days'), '4 days', 'the buttons say "Next 4 days"')
  t.equal(stepUnit('week'), 'week')
  t.equal(viewTitle(thursday.setLocale('en-GB'), '4days'), '5 Mar – 8 Mar 2026')
  t.equal(viewTitle(thursday.setLocale('en-GB'), 'week'), '2 Mar – 8 Mar 2026', 'the week as before')
})

test('agenda: a page of 30 days from the shown date, each read within the API\'s widest, moving by a page', async (t) => {
  const anchor = DateTime.fromISO('2026-03-20T10:30', { zone })
  t.equal(AGENDA_DAYS, 30)
  t.ok(AGENDA_DAYS <= MAX_READ_DAYS)
  const pages = agendaPages(anchor, 3)
  t.same(pages.map((page) => page.first.toISODate()), ['2026-03-20', '2026-04-19', '2026-05-19'], 'one after the other, no gap and no overlap')
  t.equal(pages[0]?.from.toISOString(), '2026-03-19T23:00:00.000Z', 'from the shown day\'s midnight')
  t.equal(pages[0]?.to.toISOString(), '2026-04-18T22:00:00.000Z', 'summer time by then')
  t.equal(pages[0]?.to.getTime(), pages[1]?.from.getTime())
  for (const page of pages) t.ok((page.to.getTime() - page.from.getTime()) / 86_400_000 <= MAX_READ_DAYS, 'within the widest read')
  t.same(viewRange(anchor, 'agenda'), { from: pages[0]?.from, to: pages[0]?.to }, 'the page the toolbar\'s range is, read once for both')
  t.equal(agendaPages(anchor, 0).length, 1, 'always at least the first page')
  t.throws(() => agendaPages(anchor, 1, MAX_READ_DAYS + 1), RangeError)
  t.equal(step(anchor, 'agenda', 1).toISODate(), '2026-04-19', 'next: the day after the page shown')
  t.equal(step(anchor, 'agenda', -1).toISODate(), '2026-02-18')
  t.equal(stepUnit('agenda'), '30 days')
  t.equal(viewTitle(anchor.setLocale('en-GB'), 'agenda'), 'From 20 Mar 2026')
})

test('agenda: days with events in order, empty ones left out, today marked, all-day first then by start', async (t) => {
  const page = { first: DateTime.fromISO('2026-03-02', { zone }), days: 7 }
  const days = agendaDays([
    event('Dinner', '2026-03-04T19:00:00+01:00', '2026-03-04T21:00:00+01:00'),
    event('Standup', '2026-03-04T09:00:00+01:00', '2026-03-04T09:15:00+01:00'),
    event('Holiday', '2026-03-04', '2026-03-05', { isAllDay: true }),
    event('Early', '2026-03-02T07:00:00+01:00', '2026-03-02T08:00:00+01:00'),
    event('Before', '2026-02-20T07:00:00+01:00', '2026-02-20T08:00:00+01:00'),
    event('After', '2026-03-09T00:00:00+01:00', '2026-03-09T01:00:00+01:00')
  ], page, zone, '2026-03-04')
  t.same(days.map((day) => [day.date, day.today, day.events.map((item) => item._id)]), [
    ['2026-03-02', false, ['Early']],
    ['2026-03-04', true, ['Holiday', 'Standup', 'Dinner']]
  ], 'Tuesday and the days after Wednesday have nothing and are left out; outside the page nothing')
  t.same(agendaDays([], page, zone, '2026-03-04'), [], 'nothing at all: no day')
})

test('agenda: an event over several days under each of them; ending at midnight not on the next day; in the user\'s zone', async (t) => {
  const page = { first: DateTime.fromISO('2026-03-02', { zone }), days: 7 }
  const days = agendaDays([
    event('Trip', '2026-03-03', '2026-03-06', { isAllDay: true }),
    event('Night shift', '2026-03-03T22:00:00+01:00', '2026-03-04T06:00:00+01:00'),
    event('Until midnight', '2026-03-05T23:00:00+01:00', '2026-03-06T00:00:00+01:00'),
    event('Began before', '2026-02-27T10:00:00+01:00', '2026-03-02T12:00:00+01:00'),
    event('New York call', '2026-03-07T18:30:00-05:00', '2026-03-07T19:00:00-05:00'),
    event('Instant', '2026-03-07T12:00:00+01:00', '2026-03-07T12:00:00+01:00')
  ], page, zone, '2026-01-01')
  t.same(days.map((day) => [day.date, day.events.map((item) => item._id)]), [
    ['2026-03-02', ['Began before']],
    ['2026-03-03', ['Trip', 'Night shift']],
    ['2026-03-04', ['Trip', 'Night shift']],
    ['2026-03-05', ['Trip', 'Until midnight']],
    ['2026-03-07', ['Instant']],
    ['2026-03-08', ['New York call']]
  ], 'Saturday 18:30 in New York is Sunday 00:30 in Berlin; an event of no length is on its day')
  t.notOk(days.some((day) => day.today))
})

test('keys and paths: x the 4-day view, a the agenda; /4days and /agenda are routes of their own', async (t) => {
  const press = (key: string, extra: Partial<KeyPress> = {}): KeyPress => ({ key, altKey: false, ctrlKey: false, metaKey: false, typing: false, inDialog: false, ...extra })
  t.equal(shortcutFor(press('x')), '4days')
  t.equal(shortcutFor(press('X')), '4days', 'caps lock')
  t.equal(shortcutFor(press('a')), 'agenda')
  t.equal(shortcutFor(press('a', { typing: true })), null, 'not while typing')
  t.equal(shortcutFor(press('a', { ctrlKey: true })), null, 'Ctrl+A belongs to the browser')
  t.same(routeOf('http://localhost/4days?date=2026-03-05'), { route: '4days', redirect: null })
  t.same(routeOf('http://localhost/agenda/'), { route: 'agenda', redirect: null })
  t.same(routeOf('http://localhost/schedule?date=2026-03-05'), { route: 'day', redirect: '/day?date=2026-03-05' })
})
