import { test } from 'tap'
import { dateMillis, eventInstant, timedMillis } from '../../../lib/events/time.js'

test('an RFC 3339 date-time is read to the millisecond, with its offset', async (t) => {
  t.equal(timedMillis('2026-11-23T09:30:00Z'), Date.UTC(2026, 10, 23, 9, 30))
  t.equal(timedMillis('2026-11-23T09:30:00+01:00'), Date.UTC(2026, 10, 23, 8, 30))
  t.equal(timedMillis('2026-11-23T09:30:00-05:45'), Date.UTC(2026, 10, 23, 15, 15))
  t.equal(timedMillis('2026-11-23T09:30Z'), Date.UTC(2026, 10, 23, 9, 30), 'seconds may be left out')
  t.equal(timedMillis('2026-11-23T09:30:00.5Z'), Date.UTC(2026, 10, 23, 9, 30, 0, 500))
  t.equal(timedMillis('2026-11-23T09:30:00.123456789Z'), Date.UTC(2026, 10, 23, 9, 30, 0, 123), 'finer fractions are cut')
  t.equal(timedMillis('2026-11-23T24:00:00Z'), Date.UTC(2026, 10, 24), '24:00 ends the day')
})

test('what names no real time is refused', async (t) => {
  // RFC 3339 offsets have an hour of 00-23, so +24:00 is no offset.
  for (const value of ['2026-02-29T10:00:00Z', '2026-04-31T10:00:00Z', '2026-11-23T25:00:00Z', '2026-11-23T24:00:01Z', '2026-11-23T10:60:00Z', '2026-11-23T10:00:60Z', '2026-13-01T10:00:00Z', '2026-11-23T10:00:00', '2026-11-23T10:00:00+24:00', 'yesterday']) {
    t.equal(timedMillis(value), null, value)
  }
  t.equal(timedMillis('2028-02-29T10:00:00Z'), Date.UTC(2028, 1, 29, 10), 'a leap day is real in a leap year')
  t.equal(dateMillis('2028-02-29'), Date.UTC(2028, 1, 29))
  t.equal(dateMillis('2026-02-29'), null)
  t.equal(dateMillis('2026-11-23T00:00:00Z'), null, 'a date only')
})

test('an event\'s instant: timed values by their offset whatever the zone, all-day dates at midnight in the zone', async (t) => {
  t.same(eventInstant('2026-11-23T09:30:00+01:00', false, 'America/New_York'), new Date(Date.UTC(2026, 10, 23, 8, 30)))
  t.same(eventInstant('2026-11-23', true, 'Europe/Berlin'), new Date(Date.UTC(2026, 10, 22, 23)))
  t.same(eventInstant('2026-07-01', true, 'America/New_York'), new Date(Date.UTC(2026, 6, 1, 4)))
})
