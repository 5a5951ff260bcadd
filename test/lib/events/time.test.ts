import { test } from 'tap'
import { dateMillis, eventInstant, timedMillis, utcIsoOf } from '../../../lib/events/time.js'

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

test('a date-time read character by character answers what the RFC 3339 pattern reads, for any text near one', async (t) => {
  // The pattern the reading replaced, kept here as the reference.
  const pattern = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):(\d{2}))$/
  const reference = (value: string): number | null => {
    const parts = pattern.exec(value)
    if (parts === null) return null
    const [, year, month, day, hour, minute, second, fraction, zone, sign, offsetHours, offsetMinutes] = parts
    const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second ?? '0'].map(Number) as [number, number, number, number, number, number]
    const ms = Number((fraction ?? '0').padEnd(3, '0').slice(0, 3))
    const endOfDay = h === 24 && mi === 0 && s === 0 && ms === 0
    if ((h > 23 && !endOfDay) || mi > 59 || s > 59) return null
    const local = Date.UTC(y, mo - 1, d, endOfDay ? 0 : h, mi, s, ms)
    const check = new Date(local)
    if (check.getUTCFullYear() !== y || check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d) return null
    const at = endOfDay ? local + 86_400_000 : local
    if (zone === 'Z') return at
    if (Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return null
    const offset = (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000
    return sign === '+' ? at - offset : at + offset
  }
  const seeds = ['2026-11-23T09:30:00Z', '2026-11-23T09:30:00.123+05:45', '2026-03-29T02:30-01:00', '2028-02-29T24:00:00Z', '1999-12-31T23:59:59.999999999-12:00', '0001-01-01T00:00:00Z']
  const alphabet = '0123456789-:.+TZtz x'
  let state = 7
  const next = (below: number): number => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648
    return state % below
  }
  let compared = 0
  let differing: string[] = []
  for (const seed of seeds) {
    for (let round = 0; round < 3000; round++) {
      // One to three edits of a valid value: a character changed, removed or added.
      let value = seed
      for (let edit = 0; edit <= next(3); edit++) {
        const at = next(value.length + 1)
        const character = alphabet[next(alphabet.length)] ?? '0'
        const kind = next(3)
        value = kind === 0 ? value.slice(0, at) + character + value.slice(at + 1) : kind === 1 ? value.slice(0, at) + value.slice(at + 1) : value.slice(0, at) + character + value.slice(at)
      }
      for (const candidate of [seed, value]) {
        compared++
        if (timedMillis(candidate) !== reference(candidate)) differing = [...differing, candidate]
      }
    }
  }
  t.same(differing, [], `${compared} values read alike`)
})

test('a date-time as UTC with milliseconds: a provider\'s UTC version time cut as written, any other form read', async (t) => {
  t.equal(utcIsoOf('2026-11-20T08:00:00.123Z'), '2026-11-20T08:00:00.123Z')
  t.equal(utcIsoOf('2026-11-20T08:00:00.1234567Z'), '2026-11-20T08:00:00.123Z', 'Graph\'s seven digits are cut, not rounded')
  t.equal(utcIsoOf('2026-11-20T08:00:00.9999999Z'), '2026-11-20T08:00:00.999Z')
  t.equal(utcIsoOf('2026-11-20T08:00:00Z'), '2026-11-20T08:00:00.000Z')
  t.equal(utcIsoOf('2026-11-20T08:00Z'), '2026-11-20T08:00:00.000Z')
  t.equal(utcIsoOf('2026-11-20T09:30:00.5+01:30'), '2026-11-20T08:00:00.500Z')
  t.equal(utcIsoOf('2026-11-20T24:00:00.000Z'), '2026-11-21T00:00:00.000Z', 'the end of a day is the next day\'s start')
  for (const unreal of ['2026-02-30T08:00:00.000Z', '2026-11-20T25:00:00.000Z', '2026-11-20T08:60:00.000Z', '2026-11-20T08:00:00.0000000000Z', '2026-11-20 08:00:00.000Z', 'yesterday', '']) {
    t.equal(utcIsoOf(unreal), null, `${unreal}: no real time`)
  }
  // Every form the pattern takes, against reading it whole and writing it again.
  for (let i = 0; i < 500; i++) {
    const millis = Date.UTC(1970 + (i % 130), i % 12, 1 + (i % 28), i % 24, (i * 7) % 60, (i * 13) % 60, (i * 37) % 1000)
    const written = new Date(millis).toISOString()
    const longer = `${written.slice(0, 23)}${String(i % 10000).padStart(4, '0')}Z`
    t.equal(utcIsoOf(written), written)
    t.equal(utcIsoOf(longer), new Date(timedMillis(longer) as number).toISOString())
  }
})
