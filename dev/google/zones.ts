// Wall-clock arithmetic in IANA zones, fast enough to write 10,000 events a second (offsets are
// cached, see dev/stand-in/zones.ts).
import { cachedZoneOffsets } from '../stand-in/zones.js'

/** The zone's offset from UTC at the instant, in minutes. */
const offsetMinutes = cachedZoneOffsets(100_000)

function offsetText (minutes: number): string {
  if (minutes === 0) return 'Z'
  const sign = minutes < 0 ? '-' : '+'
  const absolute = Math.abs(minutes)
  return `${sign}${String(Math.floor(absolute / 60)).padStart(2, '0')}:${String(absolute % 60).padStart(2, '0')}`
}

/** RFC 3339 in the zone's local time with its offset, whole seconds: `2030-05-02T10:00:00+02:00`. */
export function formatDateTime (ms: number, zone: string): string {
  const offset = offsetMinutes(zone, ms)
  const local = new Date(ms + offset * 60_000).toISOString().slice(0, 19)
  return local + offsetText(offset)
}

/** The instant of a wall-clock time in the zone (the later reading of a repeated hour, as luxon). */
export function wallClockToMillis (zone: string, year: number, month: number, day: number, hour = 0, minute = 0): number {
  const asUtc = Date.UTC(year, month - 1, day, hour, minute)
  const guess = asUtc - offsetMinutes(zone, asUtc) * 60_000
  return asUtc - offsetMinutes(zone, guess) * 60_000
}

/** `YYYY-MM-DDTHH:mm:ss` of a wall-clock time, without offset (with a timeZone beside it, as Google takes). */
export function wallClockText (year: number, month: number, day: number, hour = 0, minute = 0): string {
  return new Date(Date.UTC(year, month - 1, day, hour, minute)).toISOString().slice(0, 19)
}
