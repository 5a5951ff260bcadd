// The search rule the signed-out calendar applies in the browser (web/src/lib/search.ts), on the
// server's own words (lib/events/search-words.ts): each query word the beginning of a word of the
// event; the local pages in start order; what choosing a result opens; results under their day.
import { test } from 'tap'
import { eventToOpen, groupByDay, matchesSearch, searchLocal, searchTermsOf } from '../../web/src/lib/search.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'
import type { LocalData } from '../../web/src/lib/local-events.js'

const zone = 'Europe/Berlin'

function event (id: string, title: string, start: string, extra: Partial<CalendarEvent> = {}): CalendarEvent {
  const allDay = start.length === 10
  return {
    _id: id,
    title,
    startDate: allDay ? start : `${start}:00+01:00`,
    endDate: allDay ? start : `${start.slice(0, 11)}23:00:00+01:00`,
    isAllDay: allDay,
    timeZone: zone,
    status: 'confirmed',
    origin: 'compass',
    priority: 'unassigned',
    ...extra
  }
}

function data (...events: CalendarEvent[]): LocalData {
  return { version: 1, seeded: true, entries: events.map((item) => ({ event: item })) }
}

test('a word beginning with each query word, case and accents ignored', async (t) => {
  const standUp = { title: 'Stand-up in Berlin', location: 'Café Zoë', description: 'Bring the ROADMAP' }
  t.ok(matchesSearch(standUp, searchTermsOf('stand berl')), '"stand berl" finds "Stand-up in Berlin"')
  t.ok(matchesSearch(standUp, searchTermsOf('STAND')), 'any case')
  t.ok(matchesSearch(standUp, searchTermsOf('cafe zoe')), 'accents dropped, in the location')
  t.ok(matchesSearch(standUp, searchTermsOf('roadm')), 'and in the description')
  t.notOk(matchesSearch(standUp, searchTermsOf('tand')), 'the middle of a word finds nothing')
  t.notOk(matchesSearch(standUp, searchTermsOf('stand paris')), 'every word of the query must be there')
  t.notOk(matchesSearch(standUp, searchTermsOf('  -- ')), 'a query without letters or digits finds nothing')
  t.same(searchTermsOf('Plan plan, PLÄN'), ['plan'], 'the query\'s words folded, each once')
})

test('the signed-out calendar searched a page at a time, in start order', async (t) => {
  const local = data(
    event('c', 'Team lunch', '2026-03-04T12:00'),
    event('a', 'Team planning', '2026-03-02T09:00'),
    event('x', 'Team party', '2026-03-03T18:00', { status: 'cancelled' }),
    event('b', 'Team offsite', '2026-03-03'),
    event('d', 'Dentist', '2026-03-01T08:00'),
    event('s', 'Team standup', '2026-02-02T09:30', { recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=10'] } }),
    event('o', 'Team standup, moved', '2026-02-10T11:00', { recurrence: { eventId: 's' }, originalStartDate: '2026-02-09T09:30:00+01:00' })
  )
  const first = searchLocal(local, 'team', { limit: 3 })
  t.same(first.events.map((item) => item._id), ['s', 'o', 'a'], 'a series once at its start, a changed occurrence of its own, then by start; nothing cancelled')
  t.equal(first.next, '3')
  const second = searchLocal(local, 'team', { limit: 3, cursor: first.next })
  t.same(second.events.map((item) => item._id), ['b', 'c'], 'the next page from where the first ended, all-day by its date in the zone')
  t.equal(second.next, null, 'the last page says so')
  t.same(searchLocal(local, 'zzz').events, [], 'nothing found: an empty page')
  t.equal(searchLocal(local, 'zzz').next, null)
})

test('choosing a result: an event opens as it is, a series as its first occurrence', async (t) => {
  const single = event('a', 'Planning', '2026-03-02T09:00')
  t.equal(eventToOpen(single), single)
  const series = event('5f0000000000000000000001', 'Standup', '2026-03-02T09:30', { endDate: '2026-03-02T09:45:00+01:00', recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=3'] } })
  t.same(eventToOpen(series), {
    ...series,
    _id: '5f0000000000000000000001_20260302T083000Z',
    recurrence: { eventId: '5f0000000000000000000001' },
    originalStartDate: '2026-03-02T09:30:00+01:00',
    startDate: '2026-03-02T09:30:00+01:00',
    endDate: '2026-03-02T09:45:00+01:00'
  }, 'the occurrence the grid shows on its first day, so the dialog asks which events a change is for')
  const broken = event('5f0000000000000000000002', 'Odd', '2026-03-02T09:30', { recurrence: { rule: ['RRULE:FREQ=NEVER'] } })
  t.equal(eventToOpen(broken), broken, 'a rule this client cannot expand: the series as stored')
})

test('results under the day each starts on, in the user\'s zone', async (t) => {
  const days = groupByDay([
    event('a', 'Late', '2026-03-02T23:30'),
    { ...event('b', 'Just after midnight in Berlin', '2026-03-02T23:30'), startDate: '2026-03-02T23:30:00Z' },
    event('c', 'All day', '2026-03-03')
  ], zone)
  t.same(days.map((day) => [day.day, day.events.map((item) => item._id)]), [['2026-03-02', ['a']], ['2026-03-03', ['b', 'c']]])
})
