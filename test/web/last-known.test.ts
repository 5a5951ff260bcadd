// The rules of the events kept for an offline reload, without a browser: one copy per account, the
// newest ranges first within the bounds, a day found in a week kept, nothing for another account,
// and a storage that refuses the copy.
import { test } from 'tap'
import {
  EMPTY_LAST_KNOWN, MAX_RANGES, forgetLastKnown, keepRange, lastKnownFor, lastKnownKey, loadLastKnown, saveLastKnown
} from '../../web/src/lib/last-known.js'
import { memoryStore } from '../../web/src/lib/storage.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'

const zone = 'Europe/Berlin'
const A = 'aaaaaaaaaaaaaaaaaaaaaaaa'
const B = 'bbbbbbbbbbbbbbbbbbbbbbbb'

function event (title: string, start: string, end: string, isAllDay = false): CalendarEvent {
  return { _id: title, title, startDate: start, endDate: end, isAllDay, timeZone: zone, status: 'confirmed', origin: 'compass', priority: 'unassigned' }
}

// Monday 2 March 2026 to Monday 9 March, midnights in Berlin; and its Wednesday.
const week = { from: new Date('2026-03-01T23:00:00Z'), to: new Date('2026-03-08T23:00:00Z') }
const wednesday = { from: new Date('2026-03-03T23:00:00Z'), to: new Date('2026-03-04T23:00:00Z') }
const dentist = event('Dentist', '2026-03-02T09:00:00+01:00', '2026-03-02T10:00:00+01:00')
const board = event('Board', '2026-03-04T23:30:00+01:00', '2026-03-05T01:00:00+01:00')
const conference = event('Conference', '2026-03-04', '2026-03-06', true)
const lateTuesday = event('Late', '2026-03-03T23:00:00+01:00', '2026-03-04T00:00:00+01:00')

test('a range read is kept for its account and found again, whole or as a day of it', async (t) => {
  const data = keepRange(EMPTY_LAST_KNOWN, week, [dentist, board, conference, lateTuesday], 1000)
  t.same(lastKnownFor(data, week, zone), { events: [dentist, board, conference, lateTuesday], readAt: 1000 }, 'the range as it was read')
  t.same(lastKnownFor(data, wednesday, zone)?.events.map((e) => e.title), ['Board', 'Conference'], 'a day of a week seen: the events touching that day only')
  t.equal(lastKnownFor(data, { from: week.to, to: new Date('2026-03-15T23:00:00Z') }, zone), null, 'a week never read: nothing')

  const store = memoryStore()
  t.ok(saveLastKnown(store, A, data))
  t.same(loadLastKnown(store, A), data, 'kept under the account')
  t.same(Object.keys(store.entries()), [lastKnownKey(A)], `one key: ${lastKnownKey(A)}`)
  t.same(loadLastKnown(store, B), EMPTY_LAST_KNOWN, 'another account finds nothing')
  forgetLastKnown(store, A)
  t.same(store.entries(), {}, 'forgotten at sign-out')
  store.setItem(lastKnownKey(A), '{"version":2}')
  t.same(loadLastKnown(store, A), EMPTY_LAST_KNOWN, 'an unknown shape is not read')
})

test('bounded: the newest ranges, within the count and the size', async (t) => {
  let data = EMPTY_LAST_KNOWN
  for (let index = 0; index < MAX_RANGES + 3; index++) {
    const from = new Date(Date.UTC(2026, 2, 1 + index * 7))
    data = keepRange(data, { from, to: new Date(from.getTime() + 7 * 86_400_000) }, [dentist], index)
  }
  t.equal(data.ranges.length, MAX_RANGES, `at most ${MAX_RANGES} ranges`)
  t.same(data.ranges.map((range) => range.readAt), Array.from({ length: MAX_RANGES }, (_, index) => MAX_RANGES + 2 - index), 'the newest, newest first')
  const again = keepRange(data, { from: new Date(data.ranges[3]?.from ?? ''), to: new Date(data.ranges[3]?.to ?? '') }, [board], 99)
  t.equal(again.ranges.length, MAX_RANGES, 'a range read again replaces its older read')
  t.same(again.ranges[0]?.events, [board])
  const size = JSON.stringify(keepRange(EMPTY_LAST_KNOWN, week, [dentist], 1).ranges[0]).length
  const small = keepRange(keepRange(EMPTY_LAST_KNOWN, wednesday, [dentist], 1), week, [dentist], 2, { ranges: 8, chars: size + 10 })
  t.same(small.ranges.map((range) => range.readAt), [2], 'past the size, the oldest go')
  t.same(keepRange(EMPTY_LAST_KNOWN, week, [dentist, board], 1, { ranges: 8, chars: 10 }).ranges, [], 'a read larger than the bound is not kept')

  const full = { ...memoryStore(), setItem: () => { throw new Error('QuotaExceededError') } }
  t.equal(saveLastKnown(full, A, data), false, 'a full storage keeps nothing, and says so')
})
