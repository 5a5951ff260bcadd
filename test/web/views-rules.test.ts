// The rules behind the views, without a browser: the month's weeks, the `?date=` of the address,
// "+N more" beyond a readable number of columns, the repeat form written as RRULE and read back,
// and which key press is which shortcut.
import { test } from 'tap'
import { DateTime } from 'luxon'
import { eventsByDay, layoutDay, limitColumns, newEventStart, readDateParam, step, viewDays, viewRange } from '../../web/src/lib/grid.js'
import { defaultRepeat, repeatFormOf, repeatProblem, ruleOf, withRule } from '../../web/src/lib/recurrence-form.js'
import { shortcutFor, type KeyPress } from '../../web/src/lib/shortcuts.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'

const zone = 'Europe/Berlin'

function timed (id: string, start: string, end: string, extra: Partial<CalendarEvent> = {}): CalendarEvent {
  return { _id: id, title: id, startDate: start, endDate: end, isAllDay: false, timeZone: zone, status: 'confirmed', origin: 'compass', priority: 'unassigned', ...extra }
}

test('month: whole weeks from Monday; the next month; the range read', async (t) => {
  const days = viewDays(DateTime.fromISO('2026-03-18', { zone }), 'month')
  t.equal(days.length, 42)
  t.equal(days[0]?.toISODate(), '2026-02-23')
  t.equal(days[41]?.toISODate(), '2026-04-05')
  t.equal(viewDays(DateTime.fromISO('2027-02-10', { zone }), 'month').length, 28, 'February 2027 is exactly four weeks, Monday the 1st to Sunday the 28th')
  t.equal(step(DateTime.fromISO('2026-01-31', { zone }), 'month', 1).toISODate(), '2026-02-28')
  const range = viewRange(DateTime.fromISO('2026-03-18', { zone }), 'month')
  t.equal(range.from.toISOString(), '2026-02-22T23:00:00.000Z')
  t.equal(range.to.toISOString(), '2026-04-05T22:00:00.000Z', 'the day after the last, summer time by then')
})

test('New event: the next hour today, the hour under way late in the evening, 09:00 on another day', async (t) => {
  const today = DateTime.fromISO('2026-11-28', { zone })
  t.equal(newEventStart(today, DateTime.fromISO('2026-11-28T14:20', { zone })).toISO(), '2026-11-28T15:00:00.000+01:00')
  t.equal(newEventStart(today, DateTime.fromISO('2026-11-28T23:40', { zone })).toISO(), '2026-11-28T23:00:00.000+01:00', 'not midnight, on a day the view does not show')
  t.equal(newEventStart(today.plus({ days: 3 }), DateTime.fromISO('2026-11-28T23:40', { zone })).toISO(), '2026-12-01T09:00:00.000+01:00')
})

test('?date=: a real day; a day past its month brought back into it; anything else not a date', async (t) => {
  t.same(readDateParam(null, zone), { kind: 'absent' })
  t.equal((readDateParam('2027-02-28', zone) as { date: DateTime }).date.toISODate(), '2027-02-28')
  const corrected = readDateParam('2027-02-30', zone)
  t.match(corrected, { kind: 'corrected', written: '2027-02-30' })
  t.equal((corrected as { date: DateTime }).date.toISODate(), '2027-02-28')
  t.equal((readDateParam('2028-02-31', zone) as { date: DateTime }).date.toISODate(), '2028-02-29', 'a leap year')
  for (const written of ['2027-13-01', '2027-02-00', 'tomorrow', '2027-2-3', '']) t.same(readDateParam(written, zone), { kind: 'invalid', written }, written)
})

test('"+N more": past the readable columns, the rest gathered by the hour they start in', async (t) => {
  const day = DateTime.fromISO('2026-03-05', { zone })
  const clash = Array.from({ length: 5 }, (_, index) => timed(`c${index}`, '2026-03-05T14:00:00+01:00', '2026-03-05T15:00:00+01:00'))
  const late = timed('late', '2026-03-05T15:30:00+01:00', '2026-03-05T16:00:00+01:00')
  const lonely = timed('lonely', '2026-03-05T09:00:00+01:00', '2026-03-05T10:00:00+01:00')
  const placed = layoutDay([...clash, late, lonely], day, zone)
  const { shown, more } = limitColumns(placed, 2)
  t.same(shown.map((item) => [item.event._id, item.column, item.columns]), [['lonely', 0, 1], ['c0', 0, 2], ['late', 0, 1]], 'the later event overlaps none: a cluster of its own')
  t.same(more.map((band) => ({ top: band.top, height: band.height, ids: band.events.map((event) => event._id) })), [{ top: 840, height: 60, ids: ['c1', 'c2', 'c3', 'c4'] }])
  t.same(limitColumns(placed, 5).more, [], 'nothing gathered when it fits')
  t.same(limitColumns(placed, 1).shown.map((item) => item.event._id), ['lonely', 'late'], 'one column: every overlapping event in "+N more", the others as they are')
})

test('a month cell lists all-day events first, then timed ones by start; an event over midnight on both days', async (t) => {
  const days = viewDays(DateTime.fromISO('2026-03-04', { zone }), 'week')
  const list = eventsByDay([
    timed('late', '2026-03-04T23:00:00+01:00', '2026-03-05T01:00:00+01:00'),
    timed('early', '2026-03-04T07:00:00+01:00', '2026-03-04T08:00:00+01:00'),
    { ...timed('trip', '2026-03-04', '2026-03-06'), isAllDay: true }
  ], days, zone)
  t.same(list.map((events) => events.map((event) => event._id)), [[], [], ['trip', 'early', 'late'], ['trip', 'late'], [], [], []])
})

test('repeat form: written as one RRULE line and read back into the same form', async (t) => {
  const start = DateTime.fromISO('2026-03-16T17:00', { zone })
  const weekly = { ...defaultRepeat(start, 'WEEKLY'), interval: 2, weekdays: ['WE', 'MO'] as const, ends: 'count' as const, count: 5 }
  const line = ruleOf({ ...weekly, weekdays: [...weekly.weekdays] }, { isAllDay: false, zone })
  t.equal(line, 'RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;COUNT=5', 'weekdays in week order')
  t.same(repeatFormOf([line as string], start, zone), { ...weekly, weekdays: ['MO', 'WE'] })
  t.same(defaultRepeat(start, 'WEEKLY').weekdays, ['MO'], 'a new weekly rule repeats on the start\'s weekday')

  const until = { ...defaultRepeat(start, 'DAILY'), ends: 'until' as const, until: '2026-04-30' }
  t.equal(ruleOf(until, { isAllDay: false, zone }), 'RRULE:FREQ=DAILY;UNTIL=20260430T215959Z', 'the end of the day in the zone, in UTC')
  t.equal(repeatFormOf(['RRULE:FREQ=DAILY;UNTIL=20260430T215959Z'], start, zone)?.until, '2026-04-30')
  t.equal(ruleOf(until, { isAllDay: true, zone }), 'RRULE:FREQ=DAILY;UNTIL=20260430', 'a date for an all-day series')
  t.equal(repeatFormOf(['RRULE:FREQ=DAILY;UNTIL=20260430'], start, zone)?.until, '2026-04-30')
  t.equal(ruleOf({ ...defaultRepeat(start, 'YEARLY') }, { isAllDay: false, zone }), 'RRULE:FREQ=YEARLY')
  t.equal(ruleOf(defaultRepeat(start), { isAllDay: false, zone }), null, 'no repeat, no rule')
  t.equal(repeatFormOf(undefined, start, zone), null)
  t.equal(repeatFormOf(['RRULE:FREQ=SECONDLY'], start, zone), null, 'a frequency the form does not offer')

  t.equal(repeatProblem({ ...weekly, weekdays: [] }, '2026-03-16'), 'Choose at least one day of the week.')
  t.equal(repeatProblem({ ...weekly, weekdays: ['MO'], interval: 0 }, '2026-03-16'), 'Repeat every 1 to 999.')
  t.equal(repeatProblem({ ...until, until: '2026-03-01' }, '2026-03-16'), 'The end date cannot be before the start date.')
  t.equal(repeatProblem({ ...weekly, weekdays: ['MO'], count: 0 }, '2026-03-16'), 'End after 1 to 2000 times.')
  t.equal(repeatProblem({ ...weekly, weekdays: ['MO'] }, '2026-03-16'), null)
})

test('the form\'s rule replaces the series\' RRULE line and keeps its EXDATEs; a single event\'s edit stays single', async (t) => {
  const line = 'RRULE:FREQ=DAILY;COUNT=3'
  const replaced = withRule({ kind: 'replace', id: 's1', change: { title: 'x', startDate: 'a', endDate: 'b', recurrence: { rule: ['RRULE:FREQ=DAILY', 'EXDATE:20260302T090000Z'] } } }, line)
  t.same(replaced, { kind: 'replace', id: 's1', change: { title: 'x', startDate: 'a', endDate: 'b', recurrence: { rule: [line, 'EXDATE:20260302T090000Z'] } } })
  const occurrence = { kind: 'replace' as const, id: 's1_20260302', change: { title: 'x', startDate: 'a', endDate: 'b', recurrence: { eventId: 's1' } } }
  t.same(withRule(occurrence, line), occurrence, 'an occurrence edited alone carries no rule')
  t.same(withRule({ kind: 'split', deleteId: 'o', create: { title: 'x', startDate: 'a', endDate: 'b', recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=4'] } } }, line),
    { kind: 'split', deleteId: 'o', create: { title: 'x', startDate: 'a', endDate: 'b', recurrence: { rule: [line] } } })
  t.same(withRule({ kind: 'create', change: { title: 'x', startDate: 'a', endDate: 'b' } }, line), { kind: 'create', change: { title: 'x', startDate: 'a', endDate: 'b' } })
})

test('shortcuts: the Google Calendar keys; nothing while typing, in a dialog, or with a modifier', async (t) => {
  const press = (key: string, extra: Partial<KeyPress> = {}) => shortcutFor({ key, altKey: false, ctrlKey: false, metaKey: false, typing: false, inDialog: false, ...extra })
  t.same(['c', 't', 'j', 'k', 'n', 'p', 'ArrowRight', 'ArrowLeft', 'd', 'w', 'm', '1', '2', '3', '?', 'C'].map((key) => press(key)),
    ['create', 'today', 'next', 'previous', 'next', 'previous', 'next', 'previous', 'day', 'week', 'month', 'day', 'week', 'month', 'help', 'create'])
  t.equal(press('/'), 'search', '/: the search field, as Google Calendar')
  t.equal(press('x'), '4days', 'x: the 4-day view, Google\'s custom view')
  t.equal(press('z'), null)
  t.equal(press('c', { typing: true }), null)
  t.equal(press('c', { inDialog: true }), null)
  t.equal(press('ArrowRight', { altKey: true }), null, 'Alt+arrows move a focused event')
  t.equal(press('t', { ctrlKey: true }), null, 'Ctrl+T is the browser\'s')
  t.equal(press('k', { metaKey: true }), null)
  t.equal(press('ArrowLeft', { arrowsTaken: true }), null, 'a radio group keeps its arrows')
})
