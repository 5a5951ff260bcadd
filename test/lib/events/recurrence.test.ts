import { test } from 'tap'
import rrule from 'rrule'
import { toFloating, fromFloating } from '../../../lib/events/time.js'
import { DateTime } from 'luxon'
import { compileSeries, expandSeries, seriesEnd, truncateRule, firstOccurrence, hasOccurrenceAt } from '../../../lib/events/recurrence.js'

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

test('a time the clock shows twice, or skips, is read as RFC 5545 says, whatever the season the process runs in', async (t) => {
  // New York sets its clocks back at 02:00 on 1 November 2026 and forward at 02:00 on 8 March 2026.
  const nightly = { startDate: '2026-10-30T01:30:00-04:00', endDate: '2026-10-30T02:00:00-04:00', isAllDay: false, timeZone: 'America/New_York', rule: ['RRULE:FREQ=DAILY'] }
  const autumn = expandSeries(compileSeries(nightly), new Date('2026-10-31T00:00:00Z'), new Date('2026-11-03T00:00:00Z'), 10)
  t.same(autumn.map((o) => o.startDate), ['2026-10-31T01:30:00-04:00', '2026-11-01T01:30:00-04:00', '2026-11-02T01:30:00-05:00'], 'the doubled 01:30 is its first occurrence, in daylight time')
  t.same(autumn.map((o) => o.end.getTime() - o.start.getTime()), [1_800_000, 1_800_000, 1_800_000])
  const skipped = { startDate: '2026-03-06T02:30:00-05:00', endDate: '2026-03-06T03:00:00-05:00', isAllDay: false, timeZone: 'America/New_York', rule: ['RRULE:FREQ=DAILY;COUNT=4'] }
  const spring = expandSeries(compileSeries(skipped), new Date('2026-03-06T00:00:00Z'), new Date('2026-03-10T12:00:00Z'), 10)
  t.same(spring.map((o) => o.startDate), ['2026-03-06T02:30:00-05:00', '2026-03-07T02:30:00-05:00', '2026-03-08T03:30:00-04:00', '2026-03-09T02:30:00-04:00'], 'the skipped 02:30 is read with the offset before: 03:30 daylight time')
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
  t.same(seriesEnd(series), new Date('2026-03-30T07:30:00Z'))
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
  t.same(seriesEnd(series), new Date('2026-05-30T04:00:00.000Z'))
})

test('open series have no end; a COUNT ends at its last occurrence, however many', async (t) => {
  t.equal(seriesEnd(compileSeries(weeklyBerlin)), null)
  t.same(seriesEnd(compileSeries({ ...weeklyBerlin, rule: ['RRULE:FREQ=DAILY;COUNT=500'] })), new Date('2027-07-28T07:30:00Z'))
  t.same(seriesEnd(compileSeries({ ...weeklyBerlin, rule: ['RRULE:FREQ=DAILY;COUNT=2'] })), new Date('2026-03-17T08:30:00Z'))
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

const { RRule } = rrule

/** What rrule itself says, walking from the series' start: the answer expansion must keep. */
function walkedFromStart (rule: string, startDate: string, timeZone: string, from: Date, to: Date): string[] {
  const dtstart = toFloating(DateTime.fromISO(startDate, { setZone: true }).setZone(timeZone))
  const reference = new RRule({ ...RRule.parseString(rule.slice('RRULE:'.length)), dtstart, tzid: null }, true)
  return reference.between(new Date(from.getTime() - 3 * 86_400_000), new Date(to.getTime() + 3 * 86_400_000), true)
    .map((floating) => fromFloating(floating, timeZone).toJSDate())
    .filter((start) => start >= from && start < to)
    .map((start) => start.toISOString())
}

test('a series begun years ago expands to what rrule walks from its start, whatever the rule', async (t) => {
  const rules = [
    'RRULE:FREQ=HOURLY', 'RRULE:FREQ=HOURLY;INTERVAL=5', 'RRULE:FREQ=HOURLY;INTERVAL=7;BYDAY=MO,FR',
    'RRULE:FREQ=HOURLY;INTERVAL=3;BYHOUR=2,3,12,18', 'RRULE:FREQ=DAILY', 'RRULE:FREQ=DAILY;INTERVAL=3',
    'RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29', 'RRULE:FREQ=DAILY;BYHOUR=8,20;BYMINUTE=15',
    'RRULE:FREQ=WEEKLY', 'RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;WKST=SU', 'RRULE:FREQ=WEEKLY;INTERVAL=3;UNTIL=20270101T000000Z',
    'RRULE:FREQ=MONTHLY', 'RRULE:FREQ=MONTHLY;INTERVAL=5', 'RRULE:FREQ=MONTHLY;BYDAY=-1FR', 'RRULE:FREQ=MONTHLY;BYMONTHDAY=31',
    'RRULE:FREQ=MONTHLY;INTERVAL=2;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-2', 'RRULE:FREQ=YEARLY', 'RRULE:FREQ=YEARLY;INTERVAL=3',
    'RRULE:FREQ=YEARLY;BYWEEKNO=1,53;BYDAY=MO,SU', 'RRULE:FREQ=YEARLY;BYYEARDAY=1,-1,100', 'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU',
    'RRULE:FREQ=DAILY;COUNT=1500', 'RRULE:FREQ=WEEKLY;BYDAY=TU,TH;COUNT=900'
  ]
  const starts = ['2023-01-31T09:30:00+01:00', '2024-12-28T23:45:00+01:00']
  const windows: Array<[string, string]> = [['2025-12-20T00:00:00Z', '2026-01-12T00:00:00Z'], ['2026-02-25T00:00:00Z', '2026-04-03T00:00:00Z']]
  for (const rule of rules) {
    for (const startDate of starts) {
      const series = compileSeries({ startDate, endDate: startDate.replace(/T(\d\d):(\d\d)/, 'T$1:59'), isAllDay: false, timeZone: 'Europe/Berlin', rule: [rule] })
      for (const [from, to] of windows) {
        const range = [new Date(from), new Date(to)] as const
        const expected = walkedFromStart(rule, startDate, 'Europe/Berlin', ...range)
        const got = expandSeries(series, ...range, 100_000).map((o) => o.start.toISOString()).filter((start) => start >= range[0].toISOString())
        t.same(got, expected, `${rule} from ${startDate} over ${from}`)
      }
    }
  }
})

test('rules that would cost more than their budget are refused by name', async (t) => {
  const cases: Array<[string, string]> = [
    ['RRULE:FREQ=SECONDLY', 'RRULE_FREQUENCY_NOT_ALLOWED'],
    ['RRULE:FREQ=MINUTELY;INTERVAL=30', 'RRULE_FREQUENCY_NOT_ALLOWED'],
    ['RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30', 'RRULE_NO_OCCURRENCE'],
    ['RRULE:FREQ=YEARLY;BYMONTH=4;BYMONTHDAY=31', 'RRULE_NO_OCCURRENCE'],
    ['RRULE:FREQ=HOURLY;INTERVAL=24;BYHOUR=5', 'RRULE_NO_OCCURRENCE'],
    ['RRULE:FREQ=DAILY;COUNT=999999', 'RRULE_COUNT_TOO_LARGE'],
    ['RRULE:FREQ=MONTHLY;BYMONTHDAY=30;BYMONTH=2;COUNT=3', 'RRULE_COUNT_TOO_LARGE']
  ]
  for (const [rule, code] of cases) {
    t.throws(() => compileSeries({ ...weeklyBerlin, startDate: '1970-01-01T00:00:00Z', endDate: '1970-01-01T00:00:01Z', rule: [rule] }), { name: 'RecurrenceRuleError', code }, rule)
  }
  // Sparse but real: 29 February comes back within the budget.
  const leap = compileSeries({ ...weeklyBerlin, rule: ['RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29'] })
  t.equal(firstOccurrence(leap)?.startDate, '2028-02-29T09:00:00+01:00')
  t.same(expandSeries(compileSeries({ ...weeklyBerlin, rule: ['RRULE:FREQ=HOURLY;INTERVAL=24;BYHOUR=9'] }), new Date('2026-03-16T00:00:00Z'), new Date('2026-03-18T00:00:00Z'), 10)
    .map((o) => o.startDate), ['2026-03-16T09:00:00+01:00', '2026-03-17T09:00:00+01:00'])
})

test('an hourly series begun in 1970 answers for one occurrence and one week of 2026', async (t) => {
  const series = compileSeries({ startDate: '1970-01-01T00:00:00Z', endDate: '1970-01-01T00:30:00Z', isAllDay: false, timeZone: 'UTC', rule: ['RRULE:FREQ=HOURLY'] })
  t.ok(hasOccurrenceAt(series, new Date('2026-12-01T05:00:00Z')))
  t.notOk(hasOccurrenceAt(series, new Date('2026-12-01T05:30:00Z')))
  t.equal(expandSeries(series, new Date('2026-11-30T00:00:00Z'), new Date('2026-12-07T00:00:00Z'), 10_000).length, 7 * 24)
  t.equal(firstOccurrence(series)?.startDate, '1970-01-01T00:00:00Z')
  const excludedFirst = compileSeries({ startDate: '2026-01-01', endDate: '2026-01-02', isAllDay: true, timeZone: 'UTC', rule: ['RRULE:FREQ=DAILY;UNTIL=20260110', 'EXDATE;VALUE=DATE:20260101,20260102'] })
  t.equal(firstOccurrence(excludedFirst)?.startDate, '2026-01-03')
  t.same(seriesEnd(excludedFirst), new Date('2026-01-11T00:00:00Z'))
  t.notOk(hasOccurrenceAt(excludedFirst, new Date('2026-01-02T00:00:00Z')), 'an excluded day is no occurrence')
  t.ok(hasOccurrenceAt(excludedFirst, new Date('2026-01-03T00:00:00Z')))
  t.same(expandSeries(excludedFirst, new Date('2020-01-01T00:00:00Z'), new Date('2020-02-01T00:00:00Z'), 10), [], 'a range long before the series')
  const excludedAll = compileSeries({ startDate: '2026-01-01', endDate: '2026-01-02', isAllDay: true, timeZone: 'UTC', rule: ['RRULE:FREQ=DAILY;COUNT=2', 'EXDATE;VALUE=DATE:20260101,20260102'] })
  t.equal(firstOccurrence(excludedAll), null)
  t.same(expandSeries(excludedAll, new Date('2025-01-01T00:00:00Z'), new Date('2027-01-01T00:00:00Z'), 10), [])
})
