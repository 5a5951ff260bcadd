// CalDAV colours as RFC 7986 COLOR on the VEVENT: our eleven written as their nearest CSS3 names and
// read back; a COLOR this service does not write (another client's) reads as no colour and stays in
// the resource through our writes unless we set a colour of our own.
import { test } from 'tap'
import { applyContent, eventsOfResource, newResource, parseResource } from '../../../sync/lib/providers/caldav-mapping.js'
import { EVENT_COLORS } from '../../../lib/events/colors.js'

const CONTENT = { title: 'Choir', startDate: '2026-05-04T19:00:00Z', endDate: '2026-05-04T21:00:00Z', isAllDay: false, timeZone: 'UTC' }

function resource (color: string): string {
  return [
    'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//other//client//EN', 'BEGIN:VEVENT', 'UID:c1', 'SUMMARY:Choir',
    'DTSTART:20260504T190000Z', 'DTEND:20260504T210000Z', 'DTSTAMP:20260501T000000Z', color, 'END:VEVENT', 'END:VCALENDAR', ''
  ].filter((line) => line !== '').join('\r\n')
}

const colorIn = (ics: string) => eventsOfResource('/cal/c1.ics', ics, null, 'UTC')[0]?.content?.color

test('COLOR read as our colour only when it is a name written here', async (t) => {
  t.equal(colorIn(resource('')), undefined, 'no COLOR: the calendar\'s colour')
  t.equal(colorIn(resource('COLOR:seagreen')), 'basil')
  t.equal(colorIn(resource('COLOR:DarkMagenta')), 'grape', 'CSS names are case-insensitive')
  t.equal(colorIn(resource('COLOR:dimgrey')), 'graphite', 'the grey spelling too')
  t.equal(colorIn(resource('COLOR:turquoise')), undefined, 'an unknown CSS name is no colour of ours')
  t.equal(colorIn(resource('COLOR:#ff0000')), undefined, 'nor is a value that is no name')
})

test('our colours written as distinct CSS3 names and read back as written', async (t) => {
  t.equal(new Set(EVENT_COLORS.map((entry) => entry.css)).size, EVENT_COLORS.length, 'no two colours share a CSS name')
  for (const { name, css } of EVENT_COLORS) {
    const ics = newResource('c1', 'e1', { ...CONTENT, color: name }, '2026-05-01T00:00:00Z').toString()
    t.match(ics, new RegExp(`\r\nCOLOR:${css}\r\n`), `${name} as ${css}`)
    t.equal(colorIn(ics), name)
  }
  t.notMatch(newResource('c2', 'e2', CONTENT, '2026-05-01T00:00:00Z').toString(), /COLOR/, 'the calendar\'s colour writes none')
})

test('another client\'s COLOR is kept while ours is absent, replaced when we set one', async (t) => {
  const calendar = parseResource(resource('COLOR:turquoise'))
  const event = calendar.getFirstSubcomponent('vevent')
  if (event === null) throw new Error('no VEVENT')
  applyContent(event, { ...CONTENT, title: 'Choir (moved)' }, '2026-05-02T00:00:00Z')
  t.match(calendar.toString(), /\r\nCOLOR:turquoise\r\n/, 'kept through a write without a colour')
  applyContent(event, { ...CONTENT, color: 'tomato' }, '2026-05-03T00:00:00Z')
  t.match(calendar.toString(), /\r\nCOLOR:red\r\n/)
  t.notMatch(calendar.toString(), /turquoise/, 'our colour replaces it')
  applyContent(event, CONTENT, '2026-05-04T00:00:00Z')
  t.notMatch(calendar.toString(), /COLOR/, 'our own colour cleared: the calendar\'s colour again')
})
