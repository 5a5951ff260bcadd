// The details card's words (web/src/lib/event-details.ts): a description's http and https
// addresses as links and everything else as text (hostile text included), the event's time and
// date range, and its repeat rule in a sentence.
import { test } from 'tap'
import { DateTime } from 'luxon'
import { descriptionParts, repeatInWords, whenInWords } from '../../web/src/lib/event-details.js'
import { defaultRepeat, repeatFormOf } from '../../web/src/lib/recurrence-form.js'

const zone = 'Europe/Berlin'

test('a description: http and https addresses are links, the rest is text', async (t) => {
  t.same(descriptionParts('Agenda at https://example.com/a?b=1&c=2#x. Bring snacks.'), [
    { kind: 'text', text: 'Agenda at ' },
    { kind: 'link', text: 'https://example.com/a?b=1&c=2#x', href: 'https://example.com/a?b=1&c=2#x' },
    { kind: 'text', text: '. Bring snacks.' }
  ], 'the sentence\'s full stop is not part of the address')
  t.same(descriptionParts('(see http://example.org/x)'), [
    { kind: 'text', text: '(see ' }, { kind: 'link', text: 'http://example.org/x', href: 'http://example.org/x' }, { kind: 'text', text: ')' }
  ], 'a bracket that closes the prose stays text')
  t.same(descriptionParts('https://en.wikipedia.org/wiki/Up_(film)'), [
    { kind: 'link', text: 'https://en.wikipedia.org/wiki/Up_(film)', href: 'https://en.wikipedia.org/wiki/Up_(film)' }
  ], 'an address\'s own brackets stay in it')
  t.same(descriptionParts('two: https://a.example/1\nhttps://b.example/2'), [
    { kind: 'text', text: 'two: ' }, { kind: 'link', text: 'https://a.example/1', href: 'https://a.example/1' },
    { kind: 'text', text: '\n' }, { kind: 'link', text: 'https://b.example/2', href: 'https://b.example/2' }
  ])
  t.same(descriptionParts('HTTPS://Example.COM/Path'), [{ kind: 'link', text: 'HTTPS://Example.COM/Path', href: 'https://example.com/Path' }], 'the scheme in any case')
})

test('a description: nothing else becomes a link or markup', async (t) => {
  const hostile = 'javascript:alert(1) <img src=x onerror=alert(1)> data:text/html,<b>x</b> ftp://example.com/file mailto:a@example.com'
  t.same(descriptionParts(hostile), [{ kind: 'text', text: hostile }], 'other schemes and markup stay text, to be drawn as text')
  t.same(descriptionParts('<a href="https://evil.example/">click</a>'), [
    { kind: 'text', text: '<a href="' }, { kind: 'link', text: 'https://evil.example/', href: 'https://evil.example/' }, { kind: 'text', text: '">click</a>' }
  ], 'an address inside markup is a link to that address, the markup around it text')
  t.same(descriptionParts('https:// and http://'), [{ kind: 'text', text: 'https:// and http://' }], 'a scheme without a host is no link')
  t.same(descriptionParts('see https://example.com/javascript:alert(1)'), [
    { kind: 'text', text: 'see ' }, { kind: 'link', text: 'https://example.com/javascript:alert(1)', href: 'https://example.com/javascript:alert(1)' }
  ], 'a script in the path is only a path')
  t.same(descriptionParts(''), [])
  t.same(descriptionParts('no links here.'), [{ kind: 'text', text: 'no links here.' }])
})

test('when: a time on one day, across midnight, all day, over several days', async (t) => {
  t.equal(whenInWords({ startDate: '2026-03-02T09:00:00+01:00', endDate: '2026-03-02T10:30:00+01:00', isAllDay: false }, zone), 'Monday, 2 March 2026, 09:00 – 10:30')
  t.equal(whenInWords({ startDate: '2026-03-02T08:00:00Z', endDate: '2026-03-02T09:00:00Z', isAllDay: false }, zone), 'Monday, 2 March 2026, 09:00 – 10:00', 'in the user\'s zone')
  t.equal(whenInWords({ startDate: '2026-03-02T22:00:00+01:00', endDate: '2026-03-03T01:00:00+01:00', isAllDay: false }, zone), 'Monday, 2 March 2026, 22:00 – Tuesday, 3 March 2026, 01:00')
  t.equal(whenInWords({ startDate: '2026-03-02', endDate: '2026-03-03', isAllDay: true }, zone), 'Monday, 2 March 2026, all day')
  t.equal(whenInWords({ startDate: '2026-03-02', endDate: '2026-03-05', isAllDay: true }, zone), 'Monday, 2 March 2026 – Wednesday, 4 March 2026, all day', 'the last day, not the API\'s end')
})

test('the repeat rule in words', async (t) => {
  const start = DateTime.fromISO('2026-03-02T09:00', { zone })
  const read = (line: string) => repeatInWords(repeatFormOf([line], start, zone))
  t.equal(repeatInWords(null), null, 'no rule')
  t.equal(repeatInWords(defaultRepeat(start)), null, 'a form that does not repeat')
  t.equal(read('RRULE:FREQ=DAILY'), 'Every day')
  t.equal(read('RRULE:FREQ=DAILY;INTERVAL=3'), 'Every 3 days')
  t.equal(read('RRULE:FREQ=WEEKLY'), 'Every week on Monday', 'a weekly rule without BYDAY repeats on its start\'s day')
  t.equal(read('RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE,FR;COUNT=5'), 'Every 2 weeks on Monday, Wednesday and Friday, 5 times')
  t.equal(read('RRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR,SA,SU'), 'Every week on every day')
  t.equal(read('RRULE:FREQ=MONTHLY;COUNT=1'), 'Every month, once')
  t.equal(read('RRULE:FREQ=YEARLY;UNTIL=20300301T225959Z'), 'Every year, until 1 March 2030', 'UNTIL read on its day in the zone')
  t.equal(read('RRULE:FREQ=HOURLY'), null, 'a frequency the calendar does not show')
})
