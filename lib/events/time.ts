import { DateTime, IANAZone } from 'luxon'

export const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/
export const DATE_TIME_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/

// Asking Intl about a zone costs tens of microseconds on every write; the answers never change.
const zoneValidity = new Map<string, boolean>()

export function isValidTimeZone (zone: string): boolean {
  let valid = zoneValidity.get(zone)
  if (valid === undefined) {
    valid = IANAZone.isValidZone(zone)
    if (zoneValidity.size < 1000) zoneValidity.set(zone, valid)
  }
  return valid
}

/**
 * The instant an event date stands for. A timed value carries its own offset; an all-day date
 * begins at midnight in the event's time zone (that is what "all day" means to its owner).
 */
export function eventDateTime (value: string, isAllDay: boolean, timeZone: string): DateTime {
  return isAllDay
    ? DateTime.fromISO(value, { zone: timeZone })
    : DateTime.fromISO(value, { setZone: true }).setZone(timeZone)
}

const DATE_PARTS = /^(\d{4})-(\d{2})-(\d{2})$/

function utcMillis (year: number, month: number, day: number, hour = 0, minute = 0, second = 0, millisecond = 0): number | null {
  // 24:00 is the end of the day (ISO 8601), as the DateTime parser used elsewhere reads it.
  const endOfDay = hour === 24 && minute === 0 && second === 0 && millisecond === 0
  if ((hour > 23 && !endOfDay) || minute > 59 || second > 59) return null
  const millis = Date.UTC(year, month - 1, day, endOfDay ? 0 : hour, minute, second, millisecond)
  const check = new Date(millis)
  // Date.UTC rolls 31 April over into May; a real calendar date comes back unchanged.
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return null
  return endOfDay ? millis + 86_400_000 : millis
}

/** The number written by the ASCII digits of `value` from `at` to before `end`, or -1 where one is not a digit. */
function digitsAt (value: string, at: number, end: number): number {
  let number = 0
  for (let index = at; index < end; index++) {
    const digit = value.charCodeAt(index) - 48
    // Past the end charCodeAt answers NaN, which no comparison takes for a digit.
    if (!(digit >= 0 && digit <= 9)) return -1
    number = number * 10 + digit
  }
  return number
}

const charAt = (value: string, at: number): number => value.charCodeAt(at)
const [DASH, COLON, DOT, PLUS, MINUS, LETTER_T, LETTER_Z] = ['-', ':', '.', '+', '-', 'T', 'Z'].map((character) => character.charCodeAt(0)) as [number, number, number, number, number, number, number]

/**
 * The instant of an RFC 3339 date-time with offset (`YYYY-MM-DDTHH:MM[:SS[.fraction]](Z|±HH:MM)`),
 * in milliseconds (fractions beyond them cut), or null when it is not one or names no real time.
 * Provider imports parse every event's dates several times over; read character by character, a
 * date costs about a third less than with a pattern of twelve captures (that pattern is kept in
 * test/lib/events/time.test.ts as the reference this reading must agree with).
 */
export function timedMillis (value: string): number | null {
  const length = value.length
  if (length < 17 || charAt(value, 4) !== DASH || charAt(value, 7) !== DASH || charAt(value, 10) !== LETTER_T || charAt(value, 13) !== COLON) return null
  const [year, month, day, hour, minute] = [digitsAt(value, 0, 4), digitsAt(value, 5, 7), digitsAt(value, 8, 10), digitsAt(value, 11, 13), digitsAt(value, 14, 16)]
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0) return null
  let at = 16
  let second = 0
  let millisecond = 0
  if (charAt(value, at) === COLON) {
    second = digitsAt(value, at + 1, at + 3)
    if (second < 0 || at + 3 > length) return null
    at += 3
    if (charAt(value, at) === DOT) {
      const from = at + 1
      let end = from
      while (end < length && end - from < 10 && digitsAt(value, end, end + 1) >= 0) end++
      if (end === from || end - from > 9) return null
      // The first three digits are the milliseconds ('.5' is 500); the rest are cut.
      const kept = Math.min(end - from, 3)
      millisecond = digitsAt(value, from, from + kept) * 10 ** (3 - kept)
      at = end
    }
  }
  const local = utcMillis(year, month, day, hour, minute, second, millisecond)
  if (local === null) return null
  const sign = charAt(value, at)
  if (sign === LETTER_Z) return at + 1 === length ? local : null
  if ((sign !== PLUS && sign !== MINUS) || at + 6 !== length || charAt(value, at + 3) !== COLON) return null
  const [offsetHours, offsetMinutes] = [digitsAt(value, at + 1, at + 3), digitsAt(value, at + 4, at + 6)]
  if (offsetHours < 0 || offsetMinutes < 0 || offsetHours > 23 || offsetMinutes > 59) return null
  const offset = (offsetHours * 60 + offsetMinutes) * 60_000
  return sign === PLUS ? local - offset : local + offset
}

const UTC_WITH_FRACTION = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3,9}Z$/

/**
 * An RFC 3339 date-time as UTC with milliseconds (the form of `toISOString`), or null when it names
 * no real time. Providers write their version times in UTC with a fraction already: such a value is
 * cut to milliseconds as written, a third of the cost of reading and writing it again (an import
 * does it for every event). 24:00 is a real time, written as the next day's 00:00.
 */
export function utcIsoOf (value: string): string | null {
  if (UTC_WITH_FRACTION.test(value) && !value.startsWith('24', 11) && timedMillis(value) !== null) {
    return value.length === 24 ? value : `${value.slice(0, 23)}Z`
  }
  const millis = timedMillis(value)
  return millis === null ? null : new Date(millis).toISOString()
}

/** A YYYY-MM-DD date as the instant of its midnight in UTC, or null when it is no real date. */
export function dateMillis (value: string): number | null {
  const parts = DATE_PARTS.exec(value)
  return parts === null ? null : utcMillis(Number(parts[1]), Number(parts[2]), Number(parts[3]))
}

// Midnight of a date in a zone takes a DateTime to find; imports meet the same days over and over.
const ALL_DAY_INSTANTS_KEPT = 10_000
const allDayInstants = new Map<string, number>()

function allDayMillis (value: string, timeZone: string): number {
  const key = `${value} ${timeZone}`
  let millis = allDayInstants.get(key)
  if (millis === undefined) {
    millis = eventDateTime(value, true, timeZone).toMillis()
    if (allDayInstants.size >= ALL_DAY_INSTANTS_KEPT) allDayInstants.clear()
    allDayInstants.set(key, millis)
  }
  return millis
}

export function eventInstant (value: string, isAllDay: boolean, timeZone: string): Date {
  if (isAllDay) return new Date(allDayMillis(value, timeZone))
  // A timed value carries its own offset, so its zone cannot move it.
  const timed = timedMillis(value)
  return timed !== null ? new Date(timed) : eventDateTime(value, false, timeZone).toJSDate()
}

export function formatEventDate (dateTime: DateTime, isAllDay: boolean): string {
  if (isAllDay) return dateTime.toISODate() as string
  return dateTime.toISO({ suppressMilliseconds: true }) as string
}

/**
 * The key of one occurrence within its series: the original start as UTC `YYYYMMDDTHHMMSSZ`
 * (timed) or `YYYYMMDD` (all-day). It is stable whatever offset the client wrote the date with.
 */
export function occurrenceKey (originalStartDate: string, isAllDay: boolean, timeZone: string): string {
  if (isAllDay) return originalStartDate.replaceAll('-', '')
  return DateTime.fromISO(originalStartDate, { setZone: true }).toUTC().toFormat("yyyyMMdd'T'HHmmss'Z'")
}

// rrule computes in "floating" time: wall-clock fields stored in a UTC Date. Converting to and
// from the event's zone around it is what keeps a 09:00 meeting at 09:00 across DST changes.
export function toFloating (dateTime: DateTime): Date {
  return new Date(Date.UTC(dateTime.year, dateTime.month - 1, dateTime.day,
    dateTime.hour, dateTime.minute, dateTime.second, dateTime.millisecond))
}

export function fromFloating (floating: Date, timeZone: string): DateTime {
  return DateTime.fromObject({
    year: floating.getUTCFullYear(),
    month: floating.getUTCMonth() + 1,
    day: floating.getUTCDate(),
    hour: floating.getUTCHours(),
    minute: floating.getUTCMinutes(),
    second: floating.getUTCSeconds(),
    millisecond: floating.getUTCMilliseconds()
  }, { zone: timeZone })
}
