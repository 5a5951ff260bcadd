// The VTIMEZONE built from the zone database, and how a write names its zone: read back with
// ical.js (another client's library), each zone's offsets must be the zone database's own.
import { test } from 'tap'
import ICAL from 'ical.js'
import { DateTime } from 'luxon'
import { vtimezoneFor } from '../../../sync/lib/providers/vtimezone.js'
import { addTimeZones, applyContent, eventsOfResource, newResource, parseResource } from '../../../sync/lib/providers/caldav-mapping.js'
import { masterOf, occurrenceProperty } from '../../../sync/lib/providers/caldav-series.js'
import { BERLIN, ics } from './harness.js'

/** The offset (minutes) ical.js gives a wall time under the definition. */
function offsetBy (definition: InstanceType<typeof ICAL.Component>, wall: string): number {
  const zone = new ICAL.Timezone(definition)
  return zone.utcOffset(ICAL.Time.fromDateTimeString(wall)) / 60
}

function luxonOffset (zone: string, wall: string): number {
  return DateTime.fromISO(wall, { zone }).offset
}

const CONTENT = { title: 'Weekly', startDate: '2027-03-15T09:00:00+01:00', endDate: '2027-03-15T09:30:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin', recurrence: ['RRULE:FREQ=WEEKLY'] }

test('zones with a yearly rule are written once with an RRULE, so a series read decades later keeps its wall time', async (t) => {
  const berlin = vtimezoneFor('Europe/Berlin', 2027, 2027)
  const rules = berlin.getAllSubcomponents().map((part) => `${part.name} ${String(part.getFirstPropertyValue('rrule'))}`)
  t.same(rules, ['daylight FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU', 'standard FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU'])
  const newYork = vtimezoneFor('America/New_York', 2026, 2028)
  t.same(newYork.getAllSubcomponents().map((part) => String(part.getFirstPropertyValue('rrule'))), ['FREQ=YEARLY;BYMONTH=3;BYDAY=2SU', 'FREQ=YEARLY;BYMONTH=11;BYDAY=1SU'])
  t.same(newYork.getAllSubcomponents().map((part) => part.getFirstPropertyValue('tzname')), ['EDT', 'EST'])
  for (const wall of ['2027-03-27T09:00:00', '2027-03-29T09:00:00', '2027-10-31T09:00:00', '2060-07-05T09:00:00', '2060-12-05T09:00:00']) {
    t.equal(offsetBy(berlin, wall), luxonOffset('Europe/Berlin', wall), `Berlin at ${wall}`)
    t.equal(offsetBy(newYork, wall), luxonOffset('America/New_York', wall), `New York at ${wall}`)
  }
})

test('a zone without changes is one observance; a zone whose rule ended lists each change of the span', async (t) => {
  const tokyo = vtimezoneFor('Asia/Tokyo', 2027, 2027)
  t.same(tokyo.getAllSubcomponents().map((part) => [part.name, part.getFirstPropertyValue('rrule')]), [['standard', null]])
  t.equal(offsetBy(tokyo, '2027-07-01T09:00:00'), 540)
  // Brazil kept summer time until 2019: the changes of 2017 to 2019 are written out, none after.
  const saoPaulo = vtimezoneFor('America/Sao_Paulo', 2018, 2020)
  t.ok(saoPaulo.getAllSubcomponents().every((part) => part.getFirstPropertyValue('rrule') === null), 'no rule that would repeat the summer time')
  for (const wall of ['2018-01-10T09:00:00', '2018-07-10T09:00:00', '2018-12-10T09:00:00', '2019-12-10T09:00:00', '2030-12-10T09:00:00']) {
    t.equal(offsetBy(saoPaulo, wall), luxonOffset('America/Sao_Paulo', wall), `São Paulo at ${wall}`)
  }
})

test('a write names the event\'s zone: TZID with the zone\'s VTIMEZONE; UTC with Z; all-day as dates', async (t) => {
  const zoned = newResource('u1', 'e1', CONTENT, '2026-11-25T10:00:00.000Z').toString()
  t.match(zoned, /\r\nDTSTART;TZID=Europe\/Berlin:20270315T090000\r\n/)
  t.match(zoned, /\r\nDTEND;TZID=Europe\/Berlin:20270315T093000\r\n/)
  t.equal(zoned.match(/BEGIN:VTIMEZONE/g)?.length, 1)
  t.notMatch(zoned, /X-CALENDAR-TIME-ZONE/, 'the TZID says the zone')
  const [read] = eventsOfResource('/c/u1.ics', zoned, null, 'UTC')
  t.match(read?.content, { startDate: '2027-03-15T09:00:00+01:00', endDate: '2027-03-15T09:30:00+01:00', timeZone: 'Europe/Berlin', recurrence: ['RRULE:FREQ=WEEKLY'] })

  const utc = newResource('u2', 'e2', { ...CONTENT, timeZone: 'UTC', startDate: '2027-03-15T08:00:00Z', endDate: '2027-03-15T08:30:00Z' }, '2026-11-25T10:00:00.000Z').toString()
  t.match(utc, /\r\nDTSTART:20270315T080000Z\r\n/)
  t.notMatch(utc, /VTIMEZONE/)

  const allDay = newResource('u3', 'e3', { ...CONTENT, isAllDay: true, startDate: '2027-03-15', endDate: '2027-03-16' }, '2026-11-25T10:00:00.000Z').toString()
  t.match(allDay, /\r\nDTSTART;VALUE=DATE:20270315\r\n/)
  t.notMatch(allDay, /VTIMEZONE|X-CALENDAR-TIME-ZONE/)
})

test('occurrences take the series\' form, and another client\'s VTIMEZONE of the zone is kept', async (t) => {
  const theirs = ics(['UID:s1', 'DTSTAMP:20261101T000000Z', 'DTSTART;TZID=Europe/Berlin:20270315T090000', 'DTEND;TZID=Europe/Berlin:20270315T093000', 'SUMMARY:Weekly', 'RRULE:FREQ=WEEKLY'])
    .replace('PRODID:-//test//other client//EN\r\n', `PRODID:-//test//other client//EN\r\n${BERLIN.join('\r\n')}\r\n`)
  const calendar = parseResource(theirs)
  const master = masterOf(calendar)
  if (master === null) throw new Error('no series')
  applyContent(master, { ...CONTENT, title: 'Weekly (renamed)' }, '2026-11-25T10:00:00.000Z')
  master.addProperty(occurrenceProperty('exdate', master, '2027-03-29T09:00:00+02:00'))
  addTimeZones(calendar)
  const written = calendar.toString()
  t.match(written, /\r\nEXDATE;TZID=Europe\/Berlin:20270329T090000\r\n/, 'the wall time of the occurrence in the series\' zone')
  t.equal(written.match(/BEGIN:VTIMEZONE/g)?.length, 1, 'their definition, not a second one')
  t.match(written, /DTSTART:19700329T020000/, 'their definition as they wrote it')

  const allDay = parseResource(ics(['UID:s2', 'DTSTAMP:20261101T000000Z', 'DTSTART;VALUE=DATE:20270315', 'SUMMARY:Day', 'RRULE:FREQ=WEEKLY']))
  const allDayMaster = masterOf(allDay)
  if (allDayMaster === null) throw new Error('no series')
  t.equal(occurrenceProperty('recurrence-id', allDayMaster, '2027-03-22').toICALString(), 'RECURRENCE-ID;VALUE=DATE:20270322')
})

test('definitions are kept for reuse, a bounded number of them: the oldest, asked again, is built again alike', async (t) => {
  const first = vtimezoneFor('Etc/GMT-3', 1900, 1900).toString()
  for (let year = 1901; year < 1901 + 70; year++) vtimezoneFor('Etc/GMT-3', year, year)
  const again = vtimezoneFor('Etc/GMT-3', 1900, 1900)
  t.equal(again.toString(), first)
  t.equal(offsetBy(again, '1900-06-01T09:00:00'), 180)
  const reused = vtimezoneFor('Etc/GMT-3', 1900, 1900)
  t.not(reused, again, 'each caller gets its own component to add to its resource')
})

test('another client\'s TZID is read as the IANA zone it stands for: a Windows name, a path ending in one, X-LIC-LOCATION, or the zone whose offsets its definition has', async (t) => {
  const definition = (tzid: string, extra: string[] = [], [standard, daylight] = ['-0500', '-0400'], [stdRule, dstRule] = ['BYDAY=1SU;BYMONTH=11', 'BYDAY=2SU;BYMONTH=3']) => [
    'BEGIN:VTIMEZONE', `TZID:${tzid}`, ...extra,
    'BEGIN:STANDARD', 'DTSTART:16010101T020000', `TZOFFSETFROM:${daylight}`, `TZOFFSETTO:${standard}`, `RRULE:FREQ=YEARLY;${stdRule}`, 'END:STANDARD',
    'BEGIN:DAYLIGHT', 'DTSTART:16010101T020000', `TZOFFSETFROM:${standard}`, `TZOFFSETTO:${daylight}`, `RRULE:FREQ=YEARLY;${dstRule}`, 'END:DAYLIGHT',
    'END:VTIMEZONE'
  ]
  const read = (tzid: string, zoneLines: string[], calendarZone = 'UTC') => {
    const resource = ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//test//EN', ...zoneLines,
      'BEGIN:VEVENT', 'UID:z', 'DTSTAMP:20261120T000000Z', `DTSTART;TZID=${tzid}:20270315T090000`, `DTEND;TZID=${tzid}:20270315T093000`,
      'RRULE:FREQ=DAILY;COUNT=3', `EXDATE;TZID=${tzid}:20270316T090000`, 'SUMMARY:z', 'END:VEVENT', 'END:VCALENDAR', ''].join('\r\n')
    const [event] = eventsOfResource('/cal/z.ics', resource, null, calendarZone)
    return event?.content
  }
  t.match(read('Eastern Standard Time', definition('Eastern Standard Time')), { timeZone: 'America/New_York', startDate: '2027-03-15T09:00:00-04:00', recurrence: ['RRULE:FREQ=DAILY;COUNT=3', 'EXDATE;TZID=America/New_York:20270316T090000'] }, 'Outlook\'s Windows name, through CLDR')
  t.match(read('Eastern Standard Time', []), { timeZone: 'America/New_York', startDate: '2027-03-15T09:00:00-04:00' }, 'even without its definition')
  t.match(read('/mozilla.org/20050126_1/America/New_York', definition('/mozilla.org/20050126_1/America/New_York')), { timeZone: 'America/New_York' }, 'a path that ends in an IANA name')
  t.match(read('Custom Eastern', definition('Custom Eastern', ['X-LIC-LOCATION:America/Toronto'])), { timeZone: 'America/Toronto' }, 'X-LIC-LOCATION')
  const europe = definition('GMT +0100 (Standard) / GMT +0200 (Daylight)', [], ['+0100', '+0200'], ['BYDAY=-1SU;BYMONTH=10', 'BYDAY=-1SU;BYMONTH=3'])
  t.match(read('GMT +0100 (Standard) / GMT +0200 (Daylight)', europe, 'Europe/Berlin'), { timeZone: 'Europe/Berlin', startDate: '2027-03-15T09:00:00+01:00' }, 'a name nobody knows: the calendar\'s zone, whose offsets the definition has')
  const found = read('GMT +0100 (Standard) / GMT +0200 (Daylight)', europe, 'America/New_York')
  t.ok(found !== undefined && DateTime.fromISO('2027-07-15T12:00:00Z').setZone(found.timeZone).offset === 120 && DateTime.fromISO('2027-01-15T12:00:00Z').setZone(found.timeZone).offset === 60, `another zone with those offsets when the calendar's differs (${found?.timeZone ?? 'none'})`)
})
