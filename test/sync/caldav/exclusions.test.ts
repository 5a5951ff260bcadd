// A series' EXDATEs at the CalDAV server when the series is written again from here: the backend
// sends its rule without the occurrences deleted one by one (it keeps those as cancelled
// occurrences), so the resource's exclusions must survive the write, moved as the series moved.
// The resource is written as another client writes it: several values on one EXDATE line.
import { test } from 'tap'
import ICAL from 'ical.js'
import { applyContent, contentOf, parseResource } from '../../../sync/lib/providers/caldav-mapping.js'
import { exclusionsOf, masterOf, moveExclusions, removeExclusion } from '../../../sync/lib/providers/caldav-series.js'
import type { EventContent } from '../../../schemas/sync/index.js'

const ZONE = 'Europe/Berlin'
const RESOURCE = [
  'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//other//client//EN',
  'BEGIN:VEVENT', 'UID:weekly-1', 'DTSTAMP:20270301T000000Z',
  'DTSTART;TZID=Europe/Berlin:20270315T090000', 'DTEND;TZID=Europe/Berlin:20270315T093000',
  'RRULE:FREQ=WEEKLY', 'EXDATE;TZID=Europe/Berlin:20270322T090000,20270412T090000', 'SUMMARY:Weekly',
  'END:VEVENT', 'END:VCALENDAR', ''
].join('\r\n')

const SERIES: EventContent = { title: 'Weekly', startDate: '2027-03-15T09:00:00+01:00', endDate: '2027-03-15T09:30:00+01:00', isAllDay: false, timeZone: ZONE, recurrence: ['RRULE:FREQ=WEEKLY'] }

/** The resource after the series is written as `after`, and the occurrences it then excludes. */
function written (after: EventContent): { excluded: string[], ics: string } {
  const calendar = parseResource(RESOURCE)
  const master = masterOf(calendar)
  if (master === null) throw new Error('no master')
  const before = contentOf(master, calendar, ZONE)
  if (before === null) throw new Error('no content')
  const excluded = exclusionsOf(master, calendar, ZONE)
  applyContent(master, after, '2027-03-20T10:00:00.000Z')
  moveExclusions(calendar, master, excluded, before, after, ZONE)
  return { excluded: exclusionsOf(master, calendar, ZONE), ics: calendar.toString() }
}

/** The occurrence starts another client's library (ical.js) expands from the resource, as wall times in the series' zone. */
function expanded (ics: string, until: string): string[] {
  const calendar = parseResource(ics)
  const master = masterOf(calendar)
  if (master === null) return []
  const iterator = new ICAL.Event(master).iterator()
  const starts: string[] = []
  for (let next = iterator.next(); next !== null && next !== undefined && next.toString() < until; next = iterator.next()) {
    starts.push(next.toString())
  }
  return starts
}

test('both exclusions are read from one line with two values', async (t) => {
  const calendar = parseResource(RESOURCE)
  const master = masterOf(calendar)
  t.same(master === null ? [] : exclusionsOf(master, calendar, ZONE), ['2027-03-22T09:00:00+01:00', '2027-04-12T09:00:00+02:00'])
})

test('a rename keeps both deleted occurrences deleted', async (t) => {
  const { excluded, ics } = written({ ...SERIES, title: 'Weekly (team)' })
  t.same(excluded, ['2027-03-22T09:00:00+01:00', '2027-04-12T09:00:00+02:00'])
  t.same(expanded(ics, '2027-04-20'), ['2027-03-15T09:00:00', '2027-03-29T09:00:00', '2027-04-05T09:00:00', '2027-04-19T09:00:00'])
})

test('"this and following" from April 5: the deletion before the cut stays, the one after it goes with the tail', async (t) => {
  const { excluded, ics } = written({ ...SERIES, recurrence: ['RRULE:FREQ=WEEKLY;UNTIL=20270404T215959Z'] })
  t.same(excluded, ['2027-03-22T09:00:00+01:00'])
  t.same(expanded(ics, '2027-05-01'), ['2027-03-15T09:00:00', '2027-03-29T09:00:00'])
})

test('the series moved to 14:00: its deleted occurrences move with it and stay deleted', async (t) => {
  const { excluded, ics } = written({ ...SERIES, startDate: '2027-03-15T14:00:00+01:00', endDate: '2027-03-15T14:30:00+01:00' })
  t.same(excluded, ['2027-03-22T14:00:00+01:00', '2027-04-12T14:00:00+02:00'])
  t.same(expanded(ics, '2027-04-20'), ['2027-03-15T14:00:00', '2027-03-29T14:00:00', '2027-04-05T14:00:00', '2027-04-19T14:00:00'])
})

test('a series moved to another zone keeps no exclusion, as it keeps no exception (lib/events/series-move.ts)', async (t) => {
  const { excluded } = written({ ...SERIES, timeZone: 'America/New_York', startDate: '2027-03-15T09:00:00-04:00', endDate: '2027-03-15T09:30:00-04:00' })
  t.same(excluded, [])
})

test('an occurrence written as an override of its own is no longer excluded; the other value on its line stays', async (t) => {
  const calendar = parseResource(RESOURCE)
  const master = masterOf(calendar)
  if (master === null) throw new Error('no master')
  removeExclusion(calendar, master, '2027-03-22T09:00:00+01:00', ZONE)
  t.same(exclusionsOf(master, calendar, ZONE), ['2027-04-12T09:00:00+02:00'])
  removeExclusion(calendar, master, '2027-04-12T07:00:00Z', ZONE)
  t.same(master.getAllProperties('exdate'), [], 'a line left without a value goes')
})
