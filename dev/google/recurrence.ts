// Just enough recurrence to answer as Google does for a series it stores whole
// (`singleEvents=false`): whether a rule is well-formed, how far a series reaches (for
// timeMin/timeMax), and whether an instance id names a real occurrence. Occurrences are computed
// in "floating" time: the series' wall clock in its own zone, written as if it were UTC, so that a
// daily 09:00 stays 09:00 across a daylight-saving change, as RFC 5545 requires.
import rrule from 'rrule'
import type { Options as RRuleOptions, RRuleSet as RRuleSetType } from 'rrule'
import { DateTime } from 'luxon'
import { apiErrors } from './errors.js'

const { RRule, RRuleSet } = rrule

const LINE = /^(RRULE|EXRULE|RDATE|EXDATE)([;:])/
const DATE_VALUE = /^\d{8}$/
const DATE_TIME_VALUE = /^\d{8}T\d{6}Z?$/

export interface SeriesStart {
  /** The first occurrence's instant (all-day: midnight in `zone`). */
  ms: number
  allDay: boolean
  zone: string
}

/** Checks the lines of an event's `recurrence`; throws Google's 400 for anything malformed. */
export function checkRecurrence (lines: unknown): string[] {
  if (!Array.isArray(lines) || !lines.every((line): line is string => typeof line === 'string')) {
    throw apiErrors.invalid('Invalid recurrence rule.')
  }
  for (const line of lines) {
    const match = LINE.exec(line)
    if (match === null) throw apiErrors.invalid('Invalid recurrence rule.')
    if (match[1] === 'RRULE' || match[1] === 'EXRULE') {
      try {
        const options = RRule.parseString(line.slice(match[1].length + 1))
        if (options.freq === undefined) throw new Error('FREQ missing')
      } catch {
        throw apiErrors.invalid('Invalid recurrence rule.')
      }
    } else {
      const values = line.slice(line.indexOf(':') + 1).split(',')
      if (!values.every((value) => DATE_VALUE.test(value) || DATE_TIME_VALUE.test(value))) {
        throw apiErrors.invalid('Invalid recurrence rule.')
      }
    }
  }
  return lines
}

const toFloating = (wall: DateTime): Date =>
  new Date(Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second))

const fromFloating = (floating: Date, zone: string): number =>
  DateTime.fromObject({
    year: floating.getUTCFullYear(),
    month: floating.getUTCMonth() + 1,
    day: floating.getUTCDate(),
    hour: floating.getUTCHours(),
    minute: floating.getUTCMinutes(),
    second: floating.getUTCSeconds()
  }, { zone }).toMillis()

function parseDateValue (value: string, tzid: string | undefined, start: SeriesStart): Date {
  if (DATE_VALUE.test(value)) {
    return new Date(Date.UTC(Number(value.slice(0, 4)), Number(value.slice(4, 6)) - 1, Number(value.slice(6, 8))))
  }
  const zone = value.endsWith('Z') ? 'UTC' : (tzid ?? start.zone)
  const parsed = DateTime.fromFormat(value.replace(/Z$/, ''), "yyyyMMdd'T'HHmmss", { zone })
  const wall = parsed.setZone(start.zone)
  return start.allDay ? new Date(Date.UTC(wall.year, wall.month - 1, wall.day)) : toFloating(wall)
}

function ruleFrom (text: string, dtstart: Date, start: SeriesStart): InstanceType<typeof RRule> {
  const options: Partial<RRuleOptions> = RRule.parseString(text)
  const until = /UNTIL=(\d{8}(T\d{6}Z?)?)/.exec(text)?.[1]
  if (until !== undefined) options.until = parseDateValue(until, undefined, start)
  return new RRule({ ...options, dtstart, tzid: null })
}

function compile (lines: string[], start: SeriesStart): { set: RRuleSetType, bounded: boolean } {
  const wallStart = DateTime.fromMillis(start.ms, { zone: start.zone })
  const dtstart = start.allDay ? new Date(Date.UTC(wallStart.year, wallStart.month - 1, wallStart.day)) : toFloating(wallStart)
  const set = new RRuleSet()
  let bounded = true
  for (const line of lines) {
    const colon = line.indexOf(':')
    const head = line.slice(0, colon)
    const body = line.slice(colon + 1)
    const tzid = /;TZID=([^;:]+)/.exec(head)?.[1]
    if (head === 'RRULE') {
      const rule = ruleFrom(body, dtstart, start)
      if (rule.options.until === null && rule.options.count === null) bounded = false
      set.rrule(rule)
    } else if (head === 'EXRULE') {
      set.exrule(ruleFrom(body, dtstart, start))
    } else if (head.startsWith('RDATE')) {
      for (const value of body.split(',')) set.rdate(parseDateValue(value, tzid, start))
    } else if (head.startsWith('EXDATE')) {
      for (const value of body.split(',')) set.exdate(parseDateValue(value, tzid, start))
    }
  }
  // The first occurrence is the event's own start even when the rule would not produce it.
  set.rdate(dtstart)
  return { set, bounded }
}

/** The start of the series' last occurrence, or Infinity for a rule without UNTIL or COUNT. */
export function lastOccurrenceStart (lines: string[], start: SeriesStart): number {
  const { set, bounded } = compile(lines, start)
  if (!bounded) return Infinity
  const all = set.all()
  const last = all[all.length - 1]
  if (last === undefined) return start.ms
  return start.allDay
    ? DateTime.fromObject({ year: last.getUTCFullYear(), month: last.getUTCMonth() + 1, day: last.getUTCDate() }, { zone: start.zone }).toMillis()
    : fromFloating(last, start.zone)
}

/** Whether the instant (or, for all-day series, the day) is one of the series' occurrences. */
export function isOccurrence (lines: string[], start: SeriesStart, instantMs: number): boolean {
  const { set } = compile(lines, start)
  const wall = DateTime.fromMillis(instantMs, { zone: start.zone })
  const floating = start.allDay ? new Date(Date.UTC(wall.year, wall.month - 1, wall.day)) : toFloating(wall)
  return set.between(new Date(floating.getTime() - 1000), new Date(floating.getTime() + 1000), true)
    .some((occurrence) => occurrence.getTime() === floating.getTime())
}
