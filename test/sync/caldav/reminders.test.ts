// CalDAV reminders as VALARMs: DISPLAY alarms relative to the start are the event's reminders both
// ways; another client's alarms of other kinds stay in the resource through our writes.
import { test } from 'tap'
import { applyContent, eventsOfResource, newResource, parseResource } from '../../../sync/lib/providers/caldav-mapping.js'

const CONTENT = { title: 'Dentist', startDate: '2026-05-04T09:00:00Z', endDate: '2026-05-04T10:00:00Z', isAllDay: false, timeZone: 'UTC' }

function resource (alarms: string): string {
  return [
    'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//other//client//EN', 'BEGIN:VEVENT', 'UID:r1', 'SUMMARY:Dentist',
    'DTSTART:20260504T090000Z', 'DTEND:20260504T100000Z', 'DTSTAMP:20260501T000000Z', alarms, 'END:VEVENT', 'END:VCALENDAR', ''
  ].filter((line) => line !== '').join('\r\n')
}

const remindersIn = (ics: string) => eventsOfResource('/cal/r1.ics', ics, null, 'UTC')[0]?.content?.reminders

test('VALARMs read as reminders', async (t) => {
  t.equal(remindersIn(resource('')), undefined, 'no alarm: the calendar\'s default')
  t.same(remindersIn(resource('BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:x\r\nTRIGGER;RELATED=START:-PT10M\r\nEND:VALARM\r\nBEGIN:VALARM\r\nACTION:AUDIO\r\nTRIGGER:-P1D\r\nEND:VALARM')),
    [{ minutes: 10 }, { minutes: 1440 }], 'DISPLAY and AUDIO before the start, RELATED=START said or implied')
  t.same(remindersIn(resource('BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:x\r\nTRIGGER:PT0S\r\nEND:VALARM')), [{ minutes: 0 }], 'at the start')
  t.same(remindersIn(resource([
    'BEGIN:VALARM\r\nACTION:EMAIL\r\nSUMMARY:s\r\nDESCRIPTION:d\r\nATTENDEE:mailto:a@example.com\r\nTRIGGER:-PT1H\r\nEND:VALARM',
    'BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:x\r\nTRIGGER;RELATED=END:-PT5M\r\nEND:VALARM',
    'BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:x\r\nTRIGGER;VALUE=DATE-TIME:20260504T080000Z\r\nEND:VALARM',
    'BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:x\r\nTRIGGER:PT5M\r\nEND:VALARM'
  ].join('\r\n'))), [], 'an email, one from the end, an absolute time and one after the start are no reminders of ours: none')
})

test('reminders written as DISPLAY VALARMs, other alarms kept', async (t) => {
  const ics = newResource('r1', 'e1', { ...CONTENT, reminders: [{ minutes: 30 }, { minutes: 5 }] }, '2026-05-01T00:00:00Z').toString()
  t.match(ics, /BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:Dentist\r\nTRIGGER;RELATED=START:-PT5M\r\nEND:VALARM/)
  t.match(ics, /TRIGGER;RELATED=START:-PT30M/)
  t.same(remindersIn(ics), [{ minutes: 5 }, { minutes: 30 }], 'and read back as written')
  t.notMatch(newResource('r2', 'e2', CONTENT, '2026-05-01T00:00:00Z').toString(), /VALARM/, 'the default writes no alarm')

  const calendar = parseResource(resource([
    'BEGIN:VALARM\r\nACTION:EMAIL\r\nSUMMARY:s\r\nDESCRIPTION:d\r\nATTENDEE:mailto:a@example.com\r\nTRIGGER:-PT1H\r\nEND:VALARM',
    'BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:x\r\nTRIGGER:-PT15M\r\nEND:VALARM'
  ].join('\r\n')))
  const event = calendar.getFirstSubcomponent('vevent')
  if (event === null) throw new Error('no VEVENT')
  applyContent(event, { ...CONTENT, reminders: [{ minutes: 10 }] }, '2026-05-02T00:00:00Z')
  const written = calendar.toString()
  t.match(written, /ACTION:EMAIL/, 'another client\'s email alarm stays')
  t.notMatch(written, /-PT15M/, 'the reminder replaced is gone')
  t.same(remindersIn(written), [{ minutes: 10 }])
  applyContent(event, { ...CONTENT, reminders: [] }, '2026-05-03T00:00:00Z')
  t.same(remindersIn(calendar.toString()), [], 'none: no DISPLAY alarm, the email one still there')
})
