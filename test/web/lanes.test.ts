// Events across a row of days (web/src/lib/lanes.ts), without a browser: which days of the row an
// event covers, the lanes that keep overlapping events apart, and "+N more" past the lanes that fit.
import { test } from 'tap'
import { DateTime } from 'luxon'
import { assignLanes, lanesUsed, limitLanes, spansOf, type Laned } from '../../web/src/lib/lanes.js'
import { viewDays } from '../../web/src/lib/grid.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'

const zone = 'Europe/Berlin'
// Monday 9 to Sunday 15 March 2026.
const week = viewDays(DateTime.fromISO('2026-03-10', { zone }), 'week')

function event (id: string, start: string, end: string, extra: Partial<CalendarEvent> = {}): CalendarEvent {
  const isAllDay = !start.includes('T')
  return { _id: id, title: id, startDate: start, endDate: end, isAllDay, timeZone: zone, status: 'confirmed', origin: 'compass', priority: 'unassigned', ...extra }
}

const brief = (items: Laned[]) => items.map((item) => [item.event._id, item.first, item.last, item.lane])

test('the days of the row an event covers: all-day by date, timed by instant, cut at the edges', async (t) => {
  const spans = spansOf([
    event('offsite', '2026-03-09', '2026-03-12'),
    event('one day', '2026-03-13', '2026-03-14'),
    event('ski', '2026-03-14', '2026-03-18'),
    event('before', '2026-03-02', '2026-03-10'),
    event('last week', '2026-03-02', '2026-03-09'),
    event('next week', '2026-03-16', '2026-03-17'),
    event('lunch', '2026-03-10T12:00:00+01:00', '2026-03-10T13:00:00+01:00'),
    event('night', '2026-03-11T22:00:00+01:00', '2026-03-12T02:00:00+01:00'),
    event('to midnight', '2026-03-12T22:00:00+01:00', '2026-03-13T00:00:00+01:00'),
    event('moment', '2026-03-13T00:00:00+01:00', '2026-03-13T00:00:00+01:00'),
    event('sunday night', '2026-03-15T23:00:00+01:00', '2026-03-16T01:00:00+01:00')
  ], week, zone)
  t.same(spans.map((span) => [span.event._id, span.first, span.last, span.continuesBefore, span.continuesAfter]), [
    ['offsite', 0, 2, false, false],
    ['one day', 4, 4, false, false],
    ['ski', 5, 6, false, true],
    ['before', 0, 0, true, false],
    ['lunch', 1, 1, false, false],
    ['night', 2, 3, false, false],
    ['to midnight', 3, 3, false, false],
    ['moment', 4, 4, false, false],
    ['sunday night', 6, 6, false, true]
  ], 'the end date is the day after the last; an event ending at midnight stays on its day')
  const oneDay = spansOf([event('offsite', '2026-03-09', '2026-03-12')], [week[1] as DateTime], zone)
  t.same(oneDay.map((span) => [span.first, span.last, span.continuesBefore, span.continuesAfter]), [[0, 0, true, true]], 'the day view: one day of a longer event')
  t.same(spansOf([event('x', '2026-03-09', '2026-03-10')], [], zone), [], 'no days, nothing')
})

test('lanes: overlapping events never share one; the longer first on a day; free lanes reused', async (t) => {
  const laned = assignLanes(spansOf([
    event('lunch', '2026-03-10T12:00:00+01:00', '2026-03-10T13:00:00+01:00'),
    event('conference', '2026-03-10', '2026-03-13'),
    event('offsite', '2026-03-09', '2026-03-12'),
    event('friday', '2026-03-13', '2026-03-14'),
    event('breakfast', '2026-03-10T08:00:00+01:00', '2026-03-10T09:00:00+01:00'),
    event('weekend', '2026-03-14', '2026-03-16')
  ], week, zone))
  t.same(brief(laned), [
    ['offsite', 0, 2, 0],
    ['conference', 1, 3, 1],
    ['breakfast', 1, 1, 2],
    ['lunch', 1, 1, 3],
    ['friday', 4, 4, 0],
    ['weekend', 5, 6, 0]
  ], 'bars before the day\'s single events, timed ones by start; Friday takes lane 0 again')
  for (const a of laned) {
    for (const b of laned) {
      if (a === b || a.lane !== b.lane) continue
      t.ok(a.last < b.first || b.last < a.first, `${a.event._id} and ${b.event._id} share lane ${a.lane} without sharing a day`)
    }
  }
  const same = assignLanes(spansOf([event('b', '2026-03-09', '2026-03-11'), event('a', '2026-03-09', '2026-03-11')], week, zone))
  t.same(brief(same), [['a', 0, 1, 0], ['b', 0, 1, 1]], 'the same days: by title, the same order every time')
})

test('"+N more": a day whose events need more lanes than fit keeps its last lane for it; a bar is not cut', async (t) => {
  const laned = assignLanes(spansOf([
    event('offsite', '2026-03-09', '2026-03-12'), // Mon-Wed, lane 0
    event('conference', '2026-03-10', '2026-03-13'), // Tue-Thu, lane 1
    event('tue 1', '2026-03-10T08:00:00+01:00', '2026-03-10T09:00:00+01:00'), // lane 2
    event('tue 2', '2026-03-10T10:00:00+01:00', '2026-03-10T11:00:00+01:00'), // lane 3
    event('thu', '2026-03-12', '2026-03-14'), // Thu-Fri, lane 0
    event('wed', '2026-03-11T10:00:00+01:00', '2026-03-11T11:00:00+01:00') // lane 2
  ], week, zone))
  t.same(brief(laned).find((item) => item[0] === 'wed'), ['wed', 2, 2, 2])

  const all = limitLanes(laned, 7, 4)
  t.same(all.more, [], 'four lanes: everything fits')
  t.equal(lanesUsed(all.shown, all.more, 4), 4)

  const three = limitLanes(laned, 7, 3)
  t.same(three.shown.map((item) => item.event._id), ['offsite', 'conference', 'wed', 'thu'], 'Tuesday needs four: its last two lanes go to "+2 more"; Wednesday keeps its third')
  t.same(three.more.map((day) => [day.day, day.events.map((item) => item._id)]), [[1, ['tue 1', 'tue 2']]])
  t.equal(lanesUsed(three.shown, three.more, 3), 3)

  const two = limitLanes(laned, 7, 2)
  t.same(two.shown.map((item) => item.event._id), ['offsite', 'thu'], 'two lanes: the conference is not shown on Thursday alone, but left out wherever it is')
  t.same(two.more.map((day) => [day.day, day.events.map((item) => item._id)]), [
    [1, ['conference', 'tue 1', 'tue 2']],
    [2, ['conference', 'wed']],
    [3, ['conference']]
  ], 'counted on each of its days')
  for (const day of two.more) {
    t.notOk(two.shown.some((item) => item.lane === 1 && item.first <= day.day && item.last >= day.day), `day ${day.day}: its last lane is free for "+N more"`)
  }

  const one = limitLanes(laned, 7, 1)
  t.same(one.shown.map((item) => item.event._id), [], 'one lane, and a day or a bar that needs more: only "+N more"')
  t.same(one.more.map((day) => [day.day, day.events.length]), [[0, 1], [1, 4], [2, 3], [3, 2], [4, 1]])
  t.same(limitLanes(laned, 7, 0), one, 'never fewer than one lane')
  t.equal(lanesUsed([], [], 3), 0, 'an empty row draws no lanes')
})
