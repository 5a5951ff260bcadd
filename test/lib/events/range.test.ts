import { test } from 'tap'
import { assembleRange, occurrenceAt, storageFields } from '../../../lib/events/range.js'
import { instance, series, standalone } from './fixtures.js'

const from = new Date('2026-03-01T00:00:00Z')
const to = new Date('2026-03-24T00:00:00Z')

test('range reads merge single events, occurrences and edited occurrences in start order', async (t) => {
  const base = series({ _id: 'a'.repeat(24), startDate: '2026-03-02T09:00:00+01:00', endDate: '2026-03-02T09:15:00+01:00' })
  const moved = instance(base, {
    _id: 'b'.repeat(24),
    originalStartDate: '2026-03-09T09:00:00+01:00',
    startDate: '2026-03-10T14:00:00+01:00',
    endDate: '2026-03-10T14:15:00+01:00',
    title: 'Standup (moved)'
  })
  const cancelled = instance(base, { _id: 'c'.repeat(24), originalStartDate: '2026-03-16T08:00:00Z', status: 'cancelled' })
  const single = standalone({ _id: 'd'.repeat(24), startDate: '2026-03-05T12:00:00Z', endDate: '2026-03-05T13:00:00Z' })
  const result = assembleRange([single, moved], [{ series: base, edits: [moved, cancelled] }], from, to)
  t.same(result.map((event) => [event._id, event.startDate, event.title]), [
    ['a'.repeat(24) + '_20260302T080000Z', '2026-03-02T09:00:00+01:00', 'Standup'],
    ['d'.repeat(24), '2026-03-05T12:00:00Z', 'Dentist'],
    ['b'.repeat(24), '2026-03-10T14:00:00+01:00', 'Standup (moved)'],
    ['a'.repeat(24) + '_20260323T080000Z', '2026-03-23T09:00:00+01:00', 'Standup']
  ])
  const first = result[0]
  t.same(first?.recurrence, { eventId: 'a'.repeat(24) })
  t.equal(first?.originalStartDate, '2026-03-02T09:00:00+01:00')
  t.equal(first?.endDate, '2026-03-02T09:15:00+01:00')
})

test('a single occurrence is found by its key, and only where the series has one', async (t) => {
  const base = series({ _id: 'a'.repeat(24) })
  t.equal(occurrenceAt(base, '20260309T080000Z')?.startDate, '2026-03-09T09:00:00+01:00')
  t.equal(occurrenceAt(base, '20260309T090000Z'), null, 'wrong time')
  t.equal(occurrenceAt(base, '20260310T080000Z'), null, 'wrong day')
  t.equal(occurrenceAt(base, '20260309'), null, 'all-day key on a timed series')
  const allDay = series({ isAllDay: true, startDate: '2026-03-02', endDate: '2026-03-03', timeZone: 'Asia/Tokyo' })
  t.equal(occurrenceAt(allDay, '20260309')?.endDate, '2026-03-10')
})

test('storage fields hold UTC instants for the database', async (t) => {
  const base = series({ recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=2'] } })
  t.same(storageFields(base), {
    startsAt: new Date('2026-03-02T08:00:00Z'),
    endsAt: new Date('2026-03-02T09:00:00Z'),
    seriesEndsAt: new Date('2026-03-09T09:00:00Z'),
    originalStartsAt: null
  })
  t.equal(storageFields(series()).seriesEndsAt, null)
  const edit = instance(base, { originalStartDate: '2026-03-09T09:00:00+01:00' })
  t.same(storageFields(edit).originalStartsAt, new Date('2026-03-09T08:00:00Z'))
})
