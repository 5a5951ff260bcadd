import rrule from 'rrule'
import type { RRule as RRuleType, Options as RRuleOptions } from 'rrule'
import { DateTime } from 'luxon'
import { eventDateTime, toFloating, fromFloating, formatEventDate } from './time.js'

const { RRule } = rrule

const RRULE_LINE = /^RRULE:[A-Z]+=[^;=]+(;[A-Z]+=[^;=]+)*$/
const EXDATE_LINE = /^EXDATE(;[A-Z-]+=[^;:]+)*:[0-9TZ,]+$/
const POSITIVE_INTEGER = /^[1-9]\d{0,5}$/
const UNTIL_VALUE = /UNTIL=(\d{8})(T\d{6}Z?)?/

/** What a series needs to be expanded: its start, length and rule, in the event's own zone. */
export interface SeriesShape {
  startDate: string
  endDate: string
  isAllDay: boolean
  timeZone: string
  rule: string[]
}

export interface CompiledSeries {
  shape: SeriesShape
  rule: RRuleType
  excluded: Set<number>
  /** Length of one occurrence: milliseconds for timed events, days for all-day events. */
  length: number
}

export class RecurrenceRuleError extends Error {
  override name = 'RecurrenceRuleError'
}

function parseExdateValues (line: string, shape: SeriesShape): number[] {
  const [head, values] = line.split(':') as [string, string]
  const tzid = /;TZID=([^;:]+)/.exec(head)?.[1]
  return values.split(',').map((value) => {
    let wallClock: DateTime
    if (/^\d{8}$/.test(value)) {
      wallClock = DateTime.fromFormat(value, 'yyyyMMdd', { zone: 'UTC' })
    } else if (value.endsWith('Z')) {
      wallClock = DateTime.fromFormat(value, "yyyyMMdd'T'HHmmss'Z'", { zone: 'UTC' }).setZone(shape.timeZone)
    } else {
      wallClock = DateTime.fromFormat(value, "yyyyMMdd'T'HHmmss", { zone: tzid ?? shape.timeZone }).setZone(shape.timeZone)
    }
    if (!wallClock.isValid) throw new RecurrenceRuleError(`EXDATE value ${value} is not a date`)
    return shape.isAllDay ? Date.UTC(wallClock.year, wallClock.month - 1, wallClock.day) : toFloating(wallClock).getTime()
  })
}

function ruleOptions (line: string, shape: SeriesShape, dtstart: Date): Partial<RRuleOptions> {
  if (!RRULE_LINE.test(line)) throw new RecurrenceRuleError(`"${line}" is not an RRULE line`)
  const parts = new Map(line.slice('RRULE:'.length).split(';').map((part) => part.split('=') as [string, string]))
  if (parts.has('DTSTART')) throw new RecurrenceRuleError('the series start comes from startDate, not DTSTART')
  if (!parts.has('FREQ')) throw new RecurrenceRuleError('RRULE needs FREQ')
  for (const key of ['COUNT', 'INTERVAL']) {
    const value = parts.get(key)
    if (value !== undefined && !POSITIVE_INTEGER.test(value)) throw new RecurrenceRuleError(`RRULE ${key} must be a positive integer`)
  }
  if (parts.has('COUNT') && parts.has('UNTIL')) throw new RecurrenceRuleError('RRULE cannot have both COUNT and UNTIL')
  let options: Partial<RRuleOptions>
  try {
    options = RRule.parseString(line)
  } catch (error) {
    throw new RecurrenceRuleError((error as Error).message)
  }
  const until = UNTIL_VALUE.exec(line)
  if (until && options.until) {
    // A UTC UNTIL is an instant; in floating time it must be the owner's wall clock at that instant.
    if (until[2]?.endsWith('Z') === true && !shape.isAllDay) {
      options.until = toFloating(DateTime.fromJSDate(options.until).setZone(shape.timeZone))
    } else if (shape.isAllDay) {
      const untilDay = DateTime.fromJSDate(options.until, { zone: until[2]?.endsWith('Z') === true ? shape.timeZone : 'UTC' })
      options.until = new Date(Date.UTC(untilDay.year, untilDay.month - 1, untilDay.day, 23, 59, 59))
    }
  }
  return { ...options, dtstart, tzid: null }
}

// A series is compiled when its change is checked and again when it is stored or read; an import
// does both for every series of a page. The compiled rule is immutable (RRule without its result
// cache), so one compilation serves every caller with the same shape.
const COMPILED_SERIES_KEPT = 2000
const compiledSeries = new Map<string, CompiledSeries>()
const seriesEnds = new WeakMap<CompiledSeries, Map<number, Date | null>>()

/** Parses and checks a series' rule lines against its start; throws RecurrenceRuleError. */
export function compileSeries (shape: SeriesShape): CompiledSeries {
  const key = JSON.stringify([shape.startDate, shape.endDate, shape.isAllDay, shape.timeZone, shape.rule])
  const known = compiledSeries.get(key)
  if (known !== undefined) return known
  const compiled = compileFresh(shape)
  if (compiledSeries.size >= COMPILED_SERIES_KEPT) compiledSeries.delete(compiledSeries.keys().next().value as string)
  compiledSeries.set(key, compiled)
  return compiled
}

function compileFresh (shape: SeriesShape): CompiledSeries {
  const start = eventDateTime(shape.startDate, shape.isAllDay, shape.timeZone)
  const end = eventDateTime(shape.endDate, shape.isAllDay, shape.timeZone)
  const dtstart = shape.isAllDay ? new Date(Date.UTC(start.year, start.month - 1, start.day)) : toFloating(start)
  const ruleLines = shape.rule.filter((line) => line.startsWith('RRULE'))
  if (ruleLines.length !== 1) throw new RecurrenceRuleError('a series needs exactly one RRULE line')
  const excluded = new Set<number>()
  for (const line of shape.rule) {
    if (line.startsWith('RRULE')) continue
    if (!EXDATE_LINE.test(line)) throw new RecurrenceRuleError(`"${line}" is not an RRULE or EXDATE line`)
    for (const value of parseExdateValues(line, shape)) excluded.add(value)
  }
  let rule: RRuleType
  try {
    rule = new RRule(ruleOptions(ruleLines[0] as string, shape, dtstart), true)
    rule.after(dtstart, true)
  } catch (error) {
    if (error instanceof RecurrenceRuleError) throw error
    throw new RecurrenceRuleError(`RRULE cannot be expanded: ${(error as Error).message}`)
  }
  const length = shape.isAllDay
    ? Math.round(end.diff(start, 'days').days)
    : end.toMillis() - start.toMillis()
  // Only the shape is kept, not the whole event it may have come with.
  const { startDate, endDate, isAllDay, timeZone } = shape
  return { shape: { startDate, endDate, isAllDay, timeZone, rule: shape.rule }, rule, excluded, length }
}

export interface Occurrence {
  /** Original start, formatted like the series' startDate. */
  startDate: string
  endDate: string
  start: Date
  end: Date
}

function occurrenceFromFloating (series: CompiledSeries, floating: Date): Occurrence {
  const { isAllDay, timeZone } = series.shape
  const startLocal = fromFloating(floating, timeZone)
  const endLocal = isAllDay ? startLocal.plus({ days: series.length }) : startLocal.plus({ milliseconds: series.length })
  return {
    startDate: formatEventDate(startLocal, isAllDay),
    endDate: formatEventDate(endLocal, isAllDay),
    start: startLocal.toJSDate(),
    end: endLocal.toJSDate()
  }
}

const DAY_MS = 86_400_000

/**
 * Every occurrence overlapping [from, to), in order, at most `limit` of them. The rule is
 * walked in floating time with a day of margin on both sides (no zone is more than 14 hours
 * from UTC), then each candidate is placed in the event's zone and checked exactly.
 */
export function expandSeries (series: CompiledSeries, from: Date, to: Date, limit: number): Occurrence[] {
  const lengthMs = series.shape.isAllDay ? series.length * DAY_MS : series.length
  const after = new Date(from.getTime() - lengthMs - 2 * DAY_MS)
  const before = new Date(to.getTime() + 2 * DAY_MS)
  const occurrences: Occurrence[] = []
  series.rule.between(after, before, true, (floating) => {
    if (series.excluded.has(floating.getTime())) return true
    const occurrence = occurrenceFromFloating(series, floating)
    if (occurrence.start < to && occurrence.end > from) occurrences.push(occurrence)
    return occurrences.length < limit
  })
  return occurrences
}

/** The first occurrence (the series may exclude or not match its own start). */
export function firstOccurrence (series: CompiledSeries): Occurrence | null {
  let floating = series.rule.after(new Date(series.rule.options.dtstart.getTime() - 1), true)
  for (let guard = 0; floating && guard < 1000; guard++) {
    if (!series.excluded.has(floating.getTime())) return occurrenceFromFloating(series, floating)
    floating = series.rule.after(floating, false)
  }
  return null
}

/** When the last occurrence ends, or null for a series without end (or with more than `limit`). */
export function seriesEnd (series: CompiledSeries, limit: number): Date | null {
  const ends = seriesEnds.get(series) ?? new Map<number, Date | null>()
  seriesEnds.set(series, ends)
  if (!ends.has(limit)) ends.set(limit, lastOccurrenceEnd(series, limit))
  return ends.get(limit) ?? null
}

function lastOccurrenceEnd (series: CompiledSeries, limit: number): Date | null {
  const { count, until } = series.rule.options
  if (count === null && until === null) return null
  let last: Date | undefined
  let truncated = false
  series.rule.all((floating, index) => {
    if (index >= limit) {
      truncated = true
      return false
    }
    last = floating
    return true
  })
  // Past the limit the end is unknown: an open end keeps the series in every later range read.
  if (truncated) return null
  if (last === undefined) return occurrenceFromFloating(series, series.rule.options.dtstart).end
  return occurrenceFromFloating(series, last).end
}

/** Whether `originalStartDate` is one of the series' occurrences. */
export function hasOccurrenceAt (series: CompiledSeries, originalStart: Date): boolean {
  const wallClock = DateTime.fromJSDate(originalStart).setZone(series.shape.timeZone)
  const floating = series.shape.isAllDay
    ? new Date(Date.UTC(wallClock.year, wallClock.month - 1, wallClock.day))
    : toFloating(wallClock)
  if (series.excluded.has(floating.getTime())) return false
  const found = series.rule.after(floating, true)
  return found !== null && found.getTime() === floating.getTime()
}

/**
 * The rule lines of a series cut so that its last occurrence is the one before `occurrenceStart`
 * ("delete this and following"). COUNT gives way to UNTIL, which RFC 5545 forbids combining.
 */
export function truncateRule (series: CompiledSeries, occurrenceStart: Date): string[] {
  const untilInstant = DateTime.fromJSDate(new Date(occurrenceStart.getTime() - 1000)).setZone(series.shape.timeZone)
  const until = series.shape.isAllDay
    ? untilInstant.toFormat('yyyyMMdd')
    : untilInstant.toUTC().toFormat("yyyyMMdd'T'HHmmss'Z'")
  return series.shape.rule.map((line) => {
    if (!line.startsWith('RRULE:')) return line
    const parts = line.slice('RRULE:'.length).split(';').filter((part) => !part.startsWith('COUNT=') && !part.startsWith('UNTIL='))
    return `RRULE:${[...parts, `UNTIL=${until}`].join(';')}`
  })
}
