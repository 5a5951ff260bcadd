import { test } from 'tap'
import { assembleRange, occurrenceAt, RangeBudget, storageFields } from '../../../lib/events/range.js'
import type { ProviderRecord } from '../../../lib/events/record.js'
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
  const result = await assembleRange([single, moved], [{ series: base, edits: [moved, cancelled] }], from, to)
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
    originalStartsAt: null,
    searchWords: ['standup']
  })
  t.equal(storageFields(series()).seriesEndsAt, null)
  const edit = instance(base, { originalStartDate: '2026-03-09T09:00:00+01:00' })
  t.same(storageFields(edit).originalStartsAt, new Date('2026-03-09T08:00:00Z'))
})

test('a range read holding more than its bound is refused with a code to narrow it', async (t) => {
  const hourly = series({ _id: 'a'.repeat(24), startDate: '1970-01-01T00:00:00Z', endDate: '1970-01-01T00:30:00Z', timeZone: 'UTC', recurrence: { rule: ['RRULE:FREQ=HOURLY'] } })
  const yearLong = [new Date('2026-01-01T00:00:00Z'), new Date('2027-01-01T00:00:00Z')] as const
  await t.rejects(assembleRange([], [{ series: hourly, edits: [] }], ...yearLong), { statusCode: 400, code: 'RANGE_TOO_LARGE', message: /narrow the range/ })
  const week = await assembleRange([], [{ series: hourly, edits: [] }], new Date('2026-12-01T00:00:00Z'), new Date('2026-12-08T00:00:00Z'))
  t.equal(week.length, 7 * 24, 'a week of the same series is answered')
  const wordy = series({ _id: 'b'.repeat(24), description: 'x'.repeat(16_000), recurrence: { rule: ['RRULE:FREQ=DAILY'] } })
  await t.rejects(assembleRange([], [{ series: wordy, edits: [] }], ...yearLong), { code: 'RANGE_TOO_LARGE' }, 'the bound counts text too')
  const budget = new RangeBudget()
  t.throws(() => { budget.hold(standalone({}), 5001) }, { code: 'RANGE_TOO_LARGE' })
})

test('a series whose rule is refused here is read as its one stored event, never expanded', async (t) => {
  const skipped: ProviderRecord = series({ _id: 'a'.repeat(24), startDate: '2026-03-02T09:00:00Z', endDate: '2026-03-02T10:00:00Z', recurrence: { rule: ['RRULE:FREQ=MINUTELY'] }, expansionSkipped: 'RRULE_FREQUENCY_NOT_ALLOWED' } as Partial<ProviderRecord>)
  // Stored before SECONDLY was refused: the same, without the mark.
  const legacy = series({ _id: 'b'.repeat(24), startDate: '2026-03-03T09:00:00Z', endDate: '2026-03-03T09:00:01Z', recurrence: { rule: ['RRULE:FREQ=SECONDLY'] } })
  const result = await assembleRange([], [{ series: skipped, edits: [] }, { series: legacy, edits: [] }], from, to)
  t.same(result.map((event) => event._id), ['a'.repeat(24), 'b'.repeat(24)])
  t.equal(occurrenceAt(skipped, '20260302T090100Z'), null)
  t.equal(occurrenceAt(legacy, '20260303T090001Z'), null)
  t.same(storageFields(legacy).seriesEndsAt, new Date('2026-03-03T09:00:01Z'), 'kept as the single event it is read as')
  t.same(await assembleRange([], [{ series: skipped, edits: [] }], new Date('2026-03-05T00:00:00Z'), to), [], 'nowhere else')
})

test('the rule walks of one range read have a total bound: many series that rarely match are refused, a few are answered', async (t) => {
  // Each series is bounded by itself (pieces of 100 periods), but matches only on 29 February at
  // 03:00: a 400-day read without one walks about 9,700 hours per series and finds nothing.
  const sparse = (index: number) => ({
    series: series({
      _id: index.toString(16).padStart(24, '0'),
      // Distinct starts, so that each is compiled (and its first match searched) afresh.
      startDate: `2024-02-29T03:${String(index).padStart(2, '0')}:00Z`,
      endDate: `2024-02-29T04:${String(index).padStart(2, '0')}:00Z`,
      timeZone: 'UTC',
      recurrence: { rule: ['RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=3'] }
    }),
    edits: []
  })
  const range = [new Date('2026-03-01T00:00:00Z'), new Date('2027-04-05T00:00:00Z')] as const
  const few = await assembleRange([], [1, 2, 3].map(sparse), ...range)
  t.same(few, [], 'three such series: answered (nothing in the range)')
  await t.rejects(assembleRange([], [4, 5, 6, 7, 8, 9].map(sparse), ...range), {
    statusCode: 400, code: 'RANGE_TOO_LARGE', message: /more than 50000 steps of their rules.*narrow the range/
  }, 'six of them: refused with the code to narrow the range')
  const budget = new RangeBudget()
  await t.rejects(assembleRange([], [10, 11, 12, 13, 14, 15].map(sparse), ...range, budget), { code: 'RANGE_TOO_LARGE' })
  t.ok(budget.periods > 50_000 && budget.periods < 60_000, `the read stopped soon after its bound (${budget.periods} periods walked)`)
  t.equal(budget.items, 0, 'though it held nothing')
})
