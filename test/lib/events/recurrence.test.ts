import { test } from 'tap'
import { compileSeries, expandSeries, seriesEnd, truncateRule, firstOccurrence } from '../../../lib/events/recurrence.js'

const weeklyBerlin = {
  startDate: '2026-03-16T09:00:00+01:00',
  endDate: '2026-03-16T09:30:00+01:00',
  isAllDay: false,
  timeZone: 'Europe/Berlin',
  rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO']
}

test('a weekly series keeps its wall-clock time across the DST change', async (t) => {
  const series = compileSeries(weeklyBerlin)
  const occurrences = expandSeries(series, new Date('2026-03-15T00:00:00Z'), new Date('2026-04-07T00:00:00Z'), 100)
  t.same(occurrences.map((o) => o.startDate), [
    '2026-03-16T09:00:00+01:00',
    '2026-03-23T09:00:00+01:00',
    '2026-03-30T09:00:00+02:00',
    '2026-04-06T09:00:00+02:00'
  ])
  t.same(occurrences.map((o) => o.start.toISOString()), [
    '2026-03-16T08:00:00.000Z', '2026-03-23T08:00:00.000Z', '2026-03-30T07:00:00.000Z', '2026-04-06T07:00:00.000Z'
  ])
  t.same(occurrences.map((o) => o.end.getTime() - o.start.getTime()), [1800000, 1800000, 1800000, 1800000])
})

test('expansion returns exactly the occurrences overlapping the range', async (t) => {
  const series = compileSeries(weeklyBerlin)
  // Starts in the middle of the 23 March occurrence (08:00-08:30 UTC) and ends when the 30 March one starts.
  const occurrences = expandSeries(series, new Date('2026-03-23T08:15:00Z'), new Date('2026-03-30T07:00:00Z'), 100)
  t.same(occurrences.map((o) => o.startDate), ['2026-03-23T09:00:00+01:00'])
  t.same(expandSeries(series, new Date('2026-03-01T00:00:00Z'), new Date('2026-03-16T08:00:00Z'), 100), [], 'nothing before the first')
  t.equal(expandSeries(series, new Date('2026-03-01T00:00:00Z'), new Date('2027-03-01T00:00:00Z'), 5).length, 5, 'limit holds')
})

test('UNTIL in UTC is read as the instant it names, in the series zone', async (t) => {
  // 2026-03-30T07:00Z is 09:00 Berlin summer time: that occurrence is the last one.
  const series = compileSeries({ ...weeklyBerlin, rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO;UNTIL=20260330T070000Z'] })
  const occurrences = expandSeries(series, new Date('2026-03-01T00:00:00Z'), new Date('2026-05-01T00:00:00Z'), 100)
  t.same(occurrences.map((o) => o.startDate), ['2026-03-16T09:00:00+01:00', '2026-03-23T09:00:00+01:00', '2026-03-30T09:00:00+02:00'])
  t.same(seriesEnd(series, 100), new Date('2026-03-30T07:30:00Z'))
})

test('EXDATE lines remove occurrences', async (t) => {
  const series = compileSeries({
    ...weeklyBerlin,
    rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=4', 'EXDATE:20260323T080000Z', 'EXDATE;TZID=Europe/Berlin:20260330T090000']
  })
  const occurrences = expandSeries(series, new Date('2026-03-01T00:00:00Z'), new Date('2026-05-01T00:00:00Z'), 100)
  t.same(occurrences.map((o) => o.startDate), ['2026-03-16T09:00:00+01:00', '2026-04-06T09:00:00+02:00'])
})

test('all-day series repeat by date and keep their length in days', async (t) => {
  const series = compileSeries({
    startDate: '2026-03-28',
    endDate: '2026-03-30',
    isAllDay: true,
    timeZone: 'America/New_York',
    rule: ['RRULE:FREQ=MONTHLY;COUNT=3', 'EXDATE;VALUE=DATE:20260428']
  })
  const occurrences = expandSeries(series, new Date('2026-01-01T00:00:00Z'), new Date('2027-01-01T00:00:00Z'), 100)
  t.same(occurrences.map((o) => [o.startDate, o.endDate]), [['2026-03-28', '2026-03-30'], ['2026-05-28', '2026-05-30']])
  t.equal(occurrences[0]?.start.toISOString(), '2026-03-28T04:00:00.000Z', 'midnight in the series zone')
  t.same(seriesEnd(series, 100), new Date('2026-05-30T04:00:00.000Z'))
})

test('open series have no end; too long ones are treated as open', async (t) => {
  t.equal(seriesEnd(compileSeries(weeklyBerlin), 100), null)
  t.equal(seriesEnd(compileSeries({ ...weeklyBerlin, rule: ['RRULE:FREQ=DAILY;COUNT=500'] }), 100), null)
  t.same(seriesEnd(compileSeries({ ...weeklyBerlin, rule: ['RRULE:FREQ=DAILY;COUNT=2'] }), 100), new Date('2026-03-17T08:30:00Z'))
})

test('truncation ends the series before the given occurrence', async (t) => {
  const series = compileSeries({ ...weeklyBerlin, rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10'] })
  const rule = truncateRule(series, new Date('2026-03-30T07:00:00Z'))
  t.same(rule, ['RRULE:FREQ=WEEKLY;BYDAY=MO;UNTIL=20260330T065959Z'])
  const truncated = compileSeries({ ...weeklyBerlin, rule })
  const occurrences = expandSeries(truncated, new Date('2026-03-01T00:00:00Z'), new Date('2026-06-01T00:00:00Z'), 100)
  t.same(occurrences.map((o) => o.startDate), ['2026-03-16T09:00:00+01:00', '2026-03-23T09:00:00+01:00'])
  t.equal(firstOccurrence(truncated)?.startDate, '2026-03-16T09:00:00+01:00')

  const allDay = { startDate: '2026-03-01', endDate: '2026-03-02', isAllDay: true, timeZone: 'UTC', rule: ['RRULE:FREQ=DAILY'] }
  const allDayRule = truncateRule(compileSeries(allDay), new Date('2026-03-04T00:00:00Z'))
  t.same(allDayRule, ['RRULE:FREQ=DAILY;UNTIL=20260303'])
  const days = expandSeries(compileSeries({ ...allDay, rule: allDayRule }), new Date('2026-01-01T00:00:00Z'), new Date('2026-12-01T00:00:00Z'), 100)
  t.same(days.map((o) => o.startDate), ['2026-03-01', '2026-03-02', '2026-03-03'])
})

test('bad rules are refused with a reason', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['RRULE:FREQ=DAILY;FOO=BAR'], /Unknown RRULE property/],
    [['RRULE:FREQ=DAILY;COUNT=abc'], /COUNT must be a positive integer/],
    [['RRULE:INTERVAL=2'], /needs FREQ/],
    [['RRULE:FREQ=WEEKLY;BYDAY=XX'], /cannot be expanded/],
    [['RRULE:FREQ=DAILY;COUNT=2;UNTIL=20260101T000000Z'], /both COUNT and UNTIL/],
    [['RRULE:FREQ=DAILY;DTSTART=20260101T000000Z'], /DTSTART/],
    [['FREQ=DAILY'], /exactly one RRULE/],
    [['RRULE:FREQ=DAILY', 'RRULE:FREQ=WEEKLY'], /exactly one RRULE/],
    [['RRULE:FREQ=DAILY', 'RDATE:20260101'], /not an RRULE or EXDATE line/],
    [['RRULE:FREQ=DAILY', 'EXDATE:20261399T000000Z'], /not a date/],
    [['RRULE:'], /not an RRULE line/]
  ]
  for (const [rule, message] of cases) {
    t.throws(() => compileSeries({ ...weeklyBerlin, rule }), { name: 'RecurrenceRuleError', message }, rule.join(' '))
  }
})
