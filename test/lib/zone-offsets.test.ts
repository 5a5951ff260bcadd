// The cached zone arithmetic answers exactly what Luxon answers, around every change of offset of
// zones with odd rules, and resolves a doubled or skipped wall-clock time as RFC 5545 says.
import { test } from 'tap'
import { DateTime } from 'luxon'
import { isoInZone, offsetMinutesAt, wallInstant } from '../../lib/zone-offsets.js'

const ZONES = [
  'Europe/Berlin', 'America/New_York', 'Europe/London', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'America/St_Johns',
  'Pacific/Chatham', 'Pacific/Apia', 'Africa/Casablanca', 'America/Santiago', 'Asia/Tokyo', 'Etc/UTC', 'UTC'
]
const HOUR = 3_600_000

/** Every instant in [from, to) at which `zone`'s offset changes, to the second. */
function changes (zone: string, from: number, to: number): number[] {
  const found: number[] = []
  const offset = (ms: number) => DateTime.fromMillis(ms, { zone }).offset
  for (let at = from; at < to; at += 12 * HOUR) {
    if (offset(at) === offset(at + 12 * HOUR)) continue
    let [low, high] = [at, at + 12 * HOUR]
    while (high - low > 1000) {
      const middle = low + Math.floor((high - low) / 2000) * 1000
      if (offset(middle) === offset(low)) low = middle
      else high = middle
    }
    found.push(high)
  }
  return found
}

/** A deterministic spread of numbers (the same every run). */
function * spread (seed: number, count: number): Generator<number> {
  let state = seed
  for (let index = 0; index < count; index++) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648
    yield state / 2_147_483_648
  }
}

test('an instant written in a zone: the same text as Luxon, at every change of offset and in between', async (t) => {
  const from = Date.UTC(2018, 0, 1)
  const to = Date.UTC(2030, 0, 1)
  let compared = 0
  for (const zone of ZONES) {
    const instants = [...changes(zone, from, to).flatMap((at) => [at - 1000, at, at + 1000, at - HOUR, at + HOUR]), ...[...spread(zone.length, 400)].map((x) => from + Math.floor(x * (to - from)))]
    for (const ms of instants) {
      const fast = isoInZone(ms, zone)
      const luxon = DateTime.fromMillis(ms, { zone }).toISO({ suppressMilliseconds: true })
      if (fast !== luxon) t.fail(`${zone} at ${new Date(ms).toISOString()}: ${String(fast)}, Luxon ${String(luxon)}`)
      compared++
    }
  }
  t.ok(compared > 5000, `${compared} instants compared`)
  t.equal(isoInZone(Date.UTC(2026, 0, 1, 9, 30, 0, 250), 'UTC'), '2026-01-01T09:30:00.250Z', 'UTC, as Luxon writes its fixed zone')
  t.equal(isoInZone(Date.UTC(2026, 0, 1, 9, 30), 'Etc/UTC'), '2026-01-01T09:30:00+00:00')
  t.equal(isoInZone(Date.UTC(2026, 0, 1), 'Not/AZone'), null, 'a zone Luxon cannot read: left to the caller')
  t.equal(isoInZone(Date.UTC(1880, 0, 1), 'Europe/Berlin'), null, 'an offset of minutes and seconds (local mean time): left to Luxon')
})

test('a wall-clock time in a zone: Luxon\'s instant, and RFC 5545\'s where the time occurs twice', async (t) => {
  const from = Date.UTC(2018, 0, 1)
  const to = Date.UTC(2030, 0, 1)
  const wallOf = (ms: number, zone: string) => DateTime.fromMillis(ms, { zone }).toFormat("yyyy-MM-dd'T'HH:mm:ss.SSS")
  let doubled = 0
  let compared = 0
  for (const zone of ZONES) {
    const instants = [...changes(zone, from, to).flatMap((at) => [-90, -60, -45, -30, -1, 0, 1, 15, 30, 45, 60, 90].map((minutes) => at + minutes * 60_000)), ...[...spread(zone.length * 7, 300)].map((x) => from + Math.floor(x * (to - from)))]
    for (const ms of instants) {
      // Wall times just around each change, including the skipped and the doubled ones.
      for (const wall of [wallOf(ms, zone), wallOf(ms, 'UTC')]) {
        const graphWall = `${wall}0000`
        const luxon = DateTime.fromISO(graphWall, { zone }).toMillis()
        // The other instant with the same wall clock, if the time occurs twice.
        const twin = [-2, -1, -0.5, 0.5, 1, 2].map((hours) => luxon + hours * HOUR).find((other) => wallOf(other, zone) === wall)
        const expected = twin === undefined ? luxon : Math.min(luxon, twin)
        if (twin !== undefined) doubled++
        const fast = wallInstant(graphWall, zone)
        if (fast !== expected) t.fail(`${zone} ${graphWall}: ${String(fast)}, expected ${expected} (Luxon ${luxon})`)
        compared++
      }
    }
  }
  t.ok(compared > 5000 && doubled > 50, `${compared} wall times compared, ${doubled} of them doubled`)
  t.equal(wallInstant('2026-11-01T01:30:00.0000000', 'America/New_York'), Date.UTC(2026, 10, 1, 5, 30), 'New York\'s doubled 01:30: the first, in daylight time')
  t.equal(wallInstant('2026-10-25T02:30:00', 'Europe/Berlin'), Date.UTC(2026, 9, 25, 0, 30), 'Berlin\'s doubled 02:30: the first')
  t.equal(wallInstant('2026-03-08T02:30:00', 'America/New_York'), Date.UTC(2026, 2, 8, 7, 30), 'New York\'s skipped 02:30: read with the offset before, so 03:30 daylight time')
  t.equal(wallInstant('2026-04-05T01:45:00', 'Australia/Lord_Howe'), Date.UTC(2026, 3, 4, 14, 45), 'Lord Howe\'s doubled half hour: the first')
  t.equal(wallInstant('2026-02-30T10:00:00', 'Europe/Berlin'), null, 'a date that does not exist: left to Luxon')
  t.equal(wallInstant('2026-02-03T10:00:00Z', 'Europe/Berlin'), null, 'a time with its own offset: left to Luxon')
  t.equal(offsetMinutesAt('Asia/Kathmandu', Date.UTC(2026, 0, 1)), 345)
})
