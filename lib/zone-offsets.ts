// A zone's UTC offset at an instant, and the two conversions an import makes for every event, at
// the cost of a map lookup. Luxon asks Intl for the offset each time (formatToParts, the largest
// cost of mapping a provider page); here Luxon's own IANA offset is asked once per zone and UTC
// day, and kept for days on which the offset does not change. Anything outside the plain cases
// (a zone Luxon cannot read, offsets of seconds, years outside 1000-9999) answers null and the
// caller uses Luxon.
import { Info, type Zone } from 'luxon'

const MINUTE_MS = 60_000
const DAY_MS = 86_400_000
/** Kept day offsets over all zones; past it the cache starts again (a few years of each zone in use fit). */
const MAX_KEPT_DAYS = 100_000

const keptDays = new Map<string, Map<number, number>>()
let keptCount = 0
const readZones = new Map<string, Zone | null>()

/** The zone as Luxon reads it: an IANA zone, or a fixed offset (`UTC`, `UTC+5`); null when invalid. */
function zoneOf (zone: string): Zone | null {
  let found = readZones.get(zone)
  if (found === undefined) {
    const normalized = Info.normalizeZone(zone)
    found = normalized !== null && normalized.isValid && (normalized.type === 'iana' || normalized.type === 'fixed') ? normalized : null
    readZones.set(zone, found)
  }
  return found
}

/** Minutes east of UTC of `zone` at `ms`, as Luxon answers; null for a zone it cannot read. */
export function offsetMinutesAt (zone: string, ms: number): number | null {
  const iana = zoneOf(zone)
  if (iana === null) return null
  if (iana.isUniversal) return iana.offset(ms)
  const day = Math.floor(ms / DAY_MS)
  let days = keptDays.get(zone)
  const kept = days?.get(day)
  if (kept !== undefined) return kept
  const start = day * DAY_MS
  const atStart = iana.offset(start)
  // A day is kept only when its start, middle and last second agree: no zone changes its offset
  // twice within a day and back.
  if (atStart !== iana.offset(start + DAY_MS / 2) || atStart !== iana.offset(start + DAY_MS - 1000)) return iana.offset(ms)
  if (keptCount >= MAX_KEPT_DAYS) {
    keptDays.clear()
    keptCount = 0
  }
  if (days === undefined) {
    days = new Map()
    keptDays.set(zone, days)
  }
  days.set(day, atStart)
  keptCount += 1
  return atStart
}

const pad = (value: number, width = 2): string => String(value).padStart(width, '0')

/**
 * The instant `ms` as an ISO 8601 date-time with the offset of `zone` (milliseconds only when not
 * zero), as Luxon's `toISO({ suppressMilliseconds: true })` writes it; null where Luxon must.
 */
export function isoInZone (ms: number, zone: string): string | null {
  const offset = offsetMinutesAt(zone, ms)
  if (offset === null || !Number.isInteger(offset)) return null
  // Luxon writes a fixed zone of no offset (UTC) as `Z`, an IANA zone at offset 0 as `+00:00`.
  const utc = offset === 0 && zoneOf(zone)?.type === 'fixed'
  const wall = new Date(ms + offset * MINUTE_MS)
  const year = wall.getUTCFullYear()
  if (year < 1000 || year > 9999) return null
  const millis = wall.getUTCMilliseconds()
  const sign = offset < 0 ? '-' : '+'
  const size = Math.abs(offset)
  return `${year}-${pad(wall.getUTCMonth() + 1)}-${pad(wall.getUTCDate())}T${pad(wall.getUTCHours())}:${pad(wall.getUTCMinutes())}:${pad(wall.getUTCSeconds())}` +
    `${millis === 0 ? '' : `.${pad(millis, 3)}`}${utc ? 'Z' : `${sign}${pad(Math.floor(size / 60))}:${pad(size % 60)}`}`
}

const WALL_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$/

/**
 * The instant of a wall-clock time without offset (`2030-05-02T09:00:00.0000000`, as Graph writes
 * it) in `zone`; null where Luxon must read it. See localInstant for the times that occur twice or
 * not at all.
 */
export function wallInstant (wall: string, zone: string): number | null {
  const parts = WALL_TIME.exec(wall)
  if (parts === null) return null
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map((part) => Number(part ?? 0)) as [number, number, number, number, number, number]
  const millis = Math.floor(Number(`0.${parts[7] ?? '0'}`) * 1000)
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null
  const local = Date.UTC(year, month - 1, day, hour, minute, second, millis)
  if (new Date(local).getUTCDate() !== day) return null
  return localInstant(local, zone)
}

/**
 * The instant at which the wall clock of `zone` shows `local` (its fields read as UTC: floating
 * time); null where Luxon must answer. A time that occurs twice (the hour a clock is set back) is
 * its first occurrence, and a time that does not occur (the hour skipped) is read with the offset
 * before the change, as RFC 5545 (3.3.5) says.
 */
export function localInstant (local: number, zone: string): number | null {
  const year = new Date(local).getUTCFullYear()
  if (year < 1000 || year > 9999) return null
  const before = offsetMinutesAt(zone, local - DAY_MS)
  const after = offsetMinutesAt(zone, local + DAY_MS)
  if (before === null || after === null || !Number.isInteger(before) || !Number.isInteger(after)) return null
  const candidates = [local - before * MINUTE_MS, local - after * MINUTE_MS]
    .filter((instant) => offsetMinutesAt(zone, instant) === (local - instant) / MINUTE_MS)
  if (candidates.length === 0) return local - before * MINUTE_MS
  return Math.min(...candidates)
}
