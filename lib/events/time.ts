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

export function eventInstant (value: string, isAllDay: boolean, timeZone: string): Date {
  return eventDateTime(value, isAllDay, timeZone).toJSDate()
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
