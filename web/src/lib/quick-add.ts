// Quick add: "Lunch with Sam tomorrow 1pm" read as an event. The common English forms, one date
// and one time at most; what is left is the title. What it cannot read (no date or time in the
// text, a day that does not exist, no title left) is null, and the caller opens the form with the
// text as the title instead of guessing.
//
// What it reads, in the user's zone, relative to `now`:
// - days: `today`, `tonight` (today), `tomorrow`; a weekday (`friday`, `fri`, `on friday`, `this
//   friday`): the next such day, today included; `next friday`: the next such day after today;
//   `Dec 3`, `December 3rd`, `3 Dec`, `3rd of December`, with an optional year (`Dec 3 2027`),
//   without one this year's or, once it has passed, next year's; the one numeric form is ISO
//   `2026-12-03`. Slashed dates (`12/3`) are not read: they name different days in the US and in
//   Europe, so they stay in the title and the text opens the form.
// - times: `1pm`, `1 pm`, `9:30am`, `13:00`, `noon`, `midnight`, `at 3`; ranges `1-2pm`,
//   `10:30-11:30`, `1pm to 2:30pm`, `from 11 to 1pm`. An hour without am or pm (`at 3`, `3:30`)
//   from 1 to 6 is in the afternoon, from 7 to 12 as said; a leading zero (`09:30`) or an hour from
//   13 is the 24-hour clock. A range's end before its start is on the next day (`11pm-1am`).
// - a length: `for 30 min`, `for 45 minutes`, `for 2 hours`, `for 1.5 h`, `for an hour`, `for half
//   an hour` (without one, an hour; a range's end wins over it).
// - `all day` (or a day without a time): an all-day event.
import { DateTime } from 'luxon'
import type { EventDraft } from './series-edit.js'
import type { Reminder } from '../../../lib/events/reminders.js'

export interface QuickAdd {
  title: string
  isAllDay: boolean
  /** The start; for an all-day event, the start of its day. */
  start: DateTime
  /** The end; for an all-day event, the start of the day after it (the API's end). */
  end: DateTime
}

const WEEKDAY_NUMBERS: Record<string, number> = {
  monday: 1, mon: 1, tuesday: 2, tues: 2, tue: 2, wednesday: 3, wed: 3, thursday: 4, thurs: 4, thur: 4, thu: 4, friday: 5, fri: 5, saturday: 6, sat: 6, sunday: 7, sun: 7
}
const MONTH_NUMBERS: Record<string, number> = {
  january: 1,
  jan: 1,
  february: 2,
  feb: 2,
  march: 3,
  mar: 3,
  april: 4,
  apr: 4,
  may: 5,
  june: 6,
  jun: 6,
  july: 7,
  jul: 7,
  august: 8,
  aug: 8,
  september: 9,
  sept: 9,
  sep: 9,
  october: 10,
  oct: 10,
  november: 11,
  nov: 11,
  december: 12,
  dec: 12
}
// Longest first, so `tues` is not read as `tue` and a stray `s`.
const WEEKDAY = Object.keys(WEEKDAY_NUMBERS).sort((a, b) => b.length - a.length).join('|')
const FULL_WEEKDAY = Object.keys(WEEKDAY_NUMBERS).filter((name) => name.endsWith('day')).join('|')
const MONTH = Object.keys(MONTH_NUMBERS).sort((a, b) => b.length - a.length).join('|')
const ORDINAL = '(?:st|nd|rd|th)?'

interface Found { match: RegExpExecArray, value: DateTime | null }

/** Reads the first date form that matches, most explicit first; null value: a day that does not exist. */
function findDate (text: string, today: DateTime): Found | null {
  const forms: Array<[RegExp, (match: RegExpExecArray) => DateTime | null]> = [
    [/\b(?:on\s+)?(\d{4})-(\d{2})-(\d{2})\b/i, (m) => exactDay(today, Number(m[1]), Number(m[2]), Number(m[3]))],
    // Not "may 5pm": a number followed by a time's am, pm or minutes is the time.
    [new RegExp(`\\b(?:on\\s+)?(${MONTH})\\.?\\s+(\\d{1,2})${ORDINAL}(?![:\\d]|\\s*[ap]\\.?m\\b)(?:,?\\s+(\\d{4}))?\\b`, 'i'), (m) => monthDay(today, m[1] as string, Number(m[2]), m[3])],
    [new RegExp(`\\b(?:on\\s+)?(\\d{1,2})${ORDINAL}\\s+(?:of\\s+)?(${MONTH})\\b\\.?(?:,?\\s+(\\d{4})\\b)?`, 'i'), (m) => monthDay(today, m[2] as string, Number(m[1]), m[3])],
    [/\b(today|tonight|tomorrow)\b/i, (m) => (m[1] as string).toLowerCase() === 'tomorrow' ? today.plus({ days: 1 }) : today],
    [new RegExp(`\\b(?:on\\s+)?next\\s+(${WEEKDAY})\\b`, 'i'), (m) => weekday(today, m[1] as string, 1)],
    [new RegExp(`\\b(?:on\\s+|this\\s+)?(${FULL_WEEKDAY})\\b`, 'i'), (m) => weekday(today, m[1] as string, 0)],
    // "sun", "sat" and "wed" are words too: abbreviations only where a day is plainly meant.
    [new RegExp(`\\b(?:on|this)\\s+(${WEEKDAY})\\b`, 'i'), (m) => weekday(today, m[1] as string, 0)]
  ]
  for (const [pattern, read] of forms) {
    const match = pattern.exec(text)
    if (match !== null) return { match, value: read(match) }
  }
  return null
}

function exactDay (today: DateTime, year: number, month: number, day: number): DateTime | null {
  const date = DateTime.fromObject({ year, month, day }, { zone: today.zone })
  return date.isValid && date.month === month && date.day === day ? date.startOf('day') : null
}

function monthDay (today: DateTime, monthName: string, day: number, year: string | undefined): DateTime | null {
  const month = MONTH_NUMBERS[monthName.toLowerCase()] as number
  if (year !== undefined) return exactDay(today, Number(year), month, day)
  // The next such day from today on; 29 February may be up to eight years away (2096 to 2104).
  for (let year = today.year; year <= today.year + 8; year++) {
    const date = exactDay(today, year, month, day)
    if (date !== null && date >= today) return date
  }
  return null
}

/** The weekday on or after `today` (`from` 0) or after it (`from` 1). */
function weekday (today: DateTime, name: string, from: 0 | 1): DateTime {
  const wanted = WEEKDAY_NUMBERS[name.toLowerCase()] as number
  const ahead = (wanted - today.weekday + 7) % 7
  return today.plus({ days: ahead === 0 && from === 1 ? 7 : ahead })
}

interface Clock { hour: number, minute: number, meridiem: 'am' | 'pm' | null, literal: boolean }

const TIME = '(\\d{1,2})(?!\\d)(?::(\\d{2})(?!\\d))?(?:\\s*([ap])\\.?m\\b\\.?)?'

function clockOf (hour: string | undefined, minute: string | undefined, meridiem: string | undefined): Clock | null {
  const h = Number(hour)
  const m = minute === undefined ? 0 : Number(minute)
  const half = meridiem === undefined ? null : meridiem.toLowerCase() === 'a' ? 'am' : 'pm'
  if (m > 59 || (half !== null && (h < 1 || h > 12)) || h > 23) return null
  return { hour: h, minute: m, meridiem: half, literal: (hour?.length === 2 && hour.startsWith('0')) || h >= 13 || (h === 0) }
}

/** An hour without am or pm: 1 to 6 in the afternoon, 7 to 12 as said; the 24-hour clock as it is. */
function guessHour (clock: Clock): number {
  if (clock.meridiem === 'am') return clock.hour % 12
  if (clock.meridiem === 'pm') return clock.hour % 12 + 12
  if (clock.literal) return clock.hour
  return clock.hour <= 6 ? clock.hour + 12 : clock.hour
}

function withHalf (clock: Clock, half: 'am' | 'pm'): number {
  return guessHour({ ...clock, meridiem: half })
}

interface Times { start: number, end: number | null }

/** Minutes from midnight of a range's start and end: a side without am or pm takes the other's when it fits. */
function rangeOf (first: Clock, second: Clock): Times {
  let start: number
  let end: number
  if (first.meridiem === null && second.meridiem !== null && !first.literal) {
    end = guessHour(second) * 60 + second.minute
    const same = withHalf(first, second.meridiem) * 60 + first.minute
    start = same < end ? same : withHalf(first, second.meridiem === 'am' ? 'pm' : 'am') * 60 + first.minute
  } else {
    start = guessHour(first) * 60 + first.minute
    if (second.meridiem === null && !second.literal) {
      // The first such hour after the start: "1pm-2" ends at 14:00, "11am-1" at 13:00.
      const am = withHalf(second, 'am') * 60 + second.minute
      const pm = withHalf(second, 'pm') * 60 + second.minute
      end = am > start ? am : pm
    } else {
      end = guessHour(second) * 60 + second.minute
    }
  }
  return { start, end }
}

interface TimeFound { match: RegExpExecArray, times: Times | null }

function findTime (text: string): TimeFound | null {
  const range = new RegExp(`(?:\\bfrom\\s+|\\bat\\s+|\\b)${TIME}\\s*(?:-|–|—|\\bto\\b|\\buntil\\b|\\btill\\b)\\s*${TIME}`, 'i')
  const rangeMatch = range.exec(text)
  if (rangeMatch !== null) {
    const [, h1, m1, a1, h2, m2, a2] = rangeMatch
    const said = rangeMatch[0].toLowerCase()
    // Two bare numbers are a time only when something says so: "from", "at", am/pm or minutes.
    const timeLike = a1 !== undefined || a2 !== undefined || m1 !== undefined || m2 !== undefined || said.startsWith('from') || said.startsWith('at')
    if (timeLike) {
      const first = clockOf(h1, m1, a1)
      const second = clockOf(h2, m2, a2)
      return { match: rangeMatch, times: first === null || second === null ? null : rangeOf(first, second) }
    }
  }
  const named = /\b(?:at\s+)?(noon|midday|midnight)\b/i.exec(text)
  const single = new RegExp(`(?:\\bat\\s+|\\b)${TIME}`, 'gi')
  for (let match = single.exec(text); match !== null; match = single.exec(text)) {
    const [said, hour, minute, half] = match
    const timeLike = half !== undefined || minute !== undefined || /^at\s/i.test(said)
    if (!timeLike) continue
    if (named !== null && named.index < match.index) break
    const clock = clockOf(hour, minute, half)
    return { match, times: clock === null ? null : { start: guessHour(clock) * 60 + clock.minute, end: null } }
  }
  if (named !== null) return { match: named, times: { start: (named[1] as string).toLowerCase() === 'midnight' ? 0 : 12 * 60, end: null } }
  return null
}

function findLength (text: string): { match: RegExpExecArray, minutes: number } | null {
  const match = /\bfor\s+(?:(\d+(?:\.\d+)?)\s*(minutes?|mins?|m|hours?|hrs?|h)|(an?)\s+hour|(half)\s+an?\s+hour)\b/i.exec(text)
  if (match === null) return null
  if (match[3] !== undefined) return { match, minutes: 60 }
  if (match[4] !== undefined) return { match, minutes: 30 }
  const amount = Number(match[1])
  const minutes = /^h/i.test(match[2] as string) ? amount * 60 : amount
  return { match, minutes: Math.round(minutes) }
}

function cut (text: string, match: RegExpExecArray): string {
  return `${text.slice(0, match.index)} ${text.slice(match.index + match[0].length)}`
}

/** Words that joined the title to what was read ("Lunch at", "Call on", "Meeting -"). */
const DANGLING = /^(?:\s|,|-|–|at\b|on\b|from\b|for\b|this\b)+|(?:\s|,|-|–|\bat|\bon|\bfrom|\bfor|\bthis)+$/gi

/** The event the text describes, or null when it cannot be read (see the head of this file). */
export function parseQuickAdd (text: string, now: DateTime): QuickAdd | null {
  const today = now.startOf('day')
  let rest = text
  const date = findDate(rest, today)
  if (date !== null) {
    if (date.value === null) return null
    rest = cut(rest, date.match)
  }
  const allDayMatch = /\ball[\s-]day\b/i.exec(rest)
  if (allDayMatch !== null) rest = cut(rest, allDayMatch)
  const time = allDayMatch === null ? findTime(rest) : null
  if (time !== null) {
    if (time.times === null) return null
    rest = cut(rest, time.match)
  }
  const length = time !== null ? findLength(rest) : null
  if (length !== null) rest = cut(rest, length.match)
  if (date === null && time === null && allDayMatch === null) return null
  const title = rest.replace(/\s+/g, ' ').replace(DANGLING, '').trim()
  if (title === '') return null
  const day = date?.value ?? today
  if (time === null) return { title, isAllDay: true, start: day, end: day.plus({ days: 1 }) }
  // Set on the clock, not added: a day with a clock change has 23 or 25 hours.
  const at = (minutes: number) => day.set({ hour: Math.floor(minutes / 60), minute: minutes % 60 })
  const start = at(time.times?.start ?? 0)
  let end: DateTime
  if (time.times?.end !== null && time.times?.end !== undefined) {
    end = at(time.times.end)
    if (end <= start) end = end.plus({ days: 1 })
  } else {
    end = start.plus({ minutes: length === null || length.minutes <= 0 ? 60 : length.minutes })
  }
  return { title, isAllDay: false, start, end }
}

/**
 * The quick add as the event dialog's fields would give it, for the same create as its Save;
 * `reminders` as a new event starts with them there (web/src/lib/preferences.ts, newEventReminders).
 */
export function draftOfQuickAdd (added: QuickAdd, zone: string, reminders: Reminder[] | undefined): EventDraft {
  const common = { title: added.title, description: '', location: '', isAllDay: added.isAllDay, timeZone: zone, frequency: null, ...(reminders === undefined ? {} : { reminders }) }
  return added.isAllDay
    ? { ...common, startDate: added.start.toISODate() as string, endDate: added.end.toISODate() as string }
    : { ...common, startDate: added.start.toISO({ suppressMilliseconds: true }) as string, endDate: added.end.toISO({ suppressMilliseconds: true }) as string }
}
