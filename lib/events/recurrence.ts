// A series's rule lines read and compiled (RRULE and EXDATE, checked against its start), and its
// occurrences expanded over a range a piece at a time; the bounded walks are in series-rule.ts.
import rrule from 'rrule'
import type { RRule as RRuleType, Options as RRuleOptions } from 'rrule'
import { DateTime } from 'luxon'
import { eventDateTime, toFloating, fromFloating, formatEventDate } from './time.js'
import { isoInZone, localInstant } from '../zone-offsets.js'
import {
  FIXED_PERIOD_MS, MAX_FLOATING, PERIODS_PER_PIECE, RULE_SEARCH_BUDGET, RecurrenceRuleError, matchesBetween, pinnedOptions, ruleBounds, walk,
  type CompiledSeries, type RuleBounds, type SeriesShape, type WalkMeter
} from './series-rule.js'

export { RecurrenceRuleError, type CompiledSeries, type SeriesShape, type WalkMeter } from './series-rule.js'

const { RRule } = rrule

const RRULE_LINE = /^RRULE:[A-Z]+=[^;=]+(;[A-Z]+=[^;=]+)*$/
const EXDATE_LINE = /^EXDATE(;[A-Z-]+=[^;:]+)*:[0-9TZ,]+$/
const POSITIVE_INTEGER = /^[1-9]\d{0,5}$/
const UNTIL_VALUE = /UNTIL=(\d{8})(T\d{6}Z?)?/

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

/**
 * The rule lines of a series' part from `cut` on ("this and following"): its EXDATE values before
 * the cut are dropped (they name occurrences of the part before it), those from it on are kept so
 * what was deleted there stays deleted; an EXDATE line left without a value goes. RRULE as it is.
 */
export function exclusionsFrom (shape: SeriesShape, cut: Date): string[] {
  const from = toFloating(DateTime.fromJSDate(cut, { zone: shape.timeZone })).getTime()
  return shape.rule.flatMap((line) => {
    if (!line.startsWith('EXDATE')) return [line]
    const split = line.indexOf(':')
    const head = line.slice(0, split)
    const kept = line.slice(split + 1).split(',').filter((value) => (parseExdateValues(`${head}:${value}`, shape)[0] as number) >= from)
    return kept.length === 0 ? [] : [`${head}:${kept.join(',')}`]
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

/** Parses and checks a series' rule lines against its start; throws RecurrenceRuleError. */
export function compileSeries (shape: SeriesShape, meter?: WalkMeter): CompiledSeries {
  const key = JSON.stringify([shape.startDate, shape.endDate, shape.isAllDay, shape.timeZone, shape.rule])
  const known = compiledSeries.get(key)
  if (known !== undefined) return known
  const compiled = compileFresh(shape, meter)
  if (compiledSeries.size >= COMPILED_SERIES_KEPT) compiledSeries.delete(compiledSeries.keys().next().value as string)
  compiledSeries.set(key, compiled)
  return compiled
}

function compileFresh (shape: SeriesShape, meter: WalkMeter | undefined): CompiledSeries {
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
  const options = ruleOptions(ruleLines[0] as string, shape, dtstart)
  let rule: RRuleType
  let bounds: RuleBounds
  try {
    rule = new RRule(options, true)
    bounds = ruleBounds(rule, meter)
  } catch (error) {
    if (error instanceof RecurrenceRuleError) throw error
    throw new RecurrenceRuleError(`RRULE cannot be expanded: ${(error as Error).message}`)
  }
  const length = shape.isAllDay
    ? Math.round(end.diff(start, 'days').days)
    : end.toMillis() - start.toMillis()
  // Only the shape is kept, not the whole event it may have come with.
  const { startDate, endDate, isAllDay, timeZone } = shape
  return {
    shape: { startDate, endDate, isAllDay, timeZone, rule: shape.rule },
    rule,
    excluded,
    length,
    first: bounds.first,
    lastStart: bounds.lastStart,
    pinned: pinnedOptions(rule, bounds.lastStart)
  }
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
  if (!isAllDay) {
    // Every occurrence of every range read and import comes here: the cached zone arithmetic
    // first, Luxon where it cannot answer.
    const start = localInstant(floating.getTime(), timeZone)
    const end = start === null ? null : start + series.length
    const startDate = start === null ? null : isoInZone(start, timeZone)
    const endDate = end === null ? null : isoInZone(end, timeZone)
    if (start !== null && end !== null && startDate !== null && endDate !== null) {
      return { startDate, endDate, start: new Date(start), end: new Date(end) }
    }
  }
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
/** More than any zone's distance from UTC (+14 h to -12 h), with a DST shift on top. */
const ZONE_MARGIN_MS = 16 * 3_600_000

/**
 * Every occurrence overlapping [from, to), in order, at most `limit` of them. The rule is
 * walked in floating time with a day of margin on both sides (no zone is more than 14 hours
 * from UTC), then each candidate is placed in the event's zone and checked exactly. The cost
 * follows the range and the answer, never the age of the series.
 */
export function expandSeries (series: CompiledSeries, from: Date, to: Date, limit: number): Occurrence[] {
  const occurrences: Occurrence[] = []
  for (const piece of expansionPieces(series, from, to)) {
    for (const occurrence of piece) {
      occurrences.push(occurrence)
      if (occurrences.length >= limit) return occurrences
    }
  }
  return occurrences
}

/**
 * The occurrences overlapping [from, to) in pieces of a bounded walk each, so that a caller can
 * let other work run between pieces (and read `meter` to bound the walks' total).
 */
export function * expansionPieces (series: CompiledSeries, from: Date, to: Date, meter?: WalkMeter): Generator<Occurrence[]> {
  const lengthMs = series.shape.isAllDay ? series.length * DAY_MS : series.length
  const after = new Date(Math.max(from.getTime() - lengthMs - 2 * DAY_MS, series.rule.options.dtstart.getTime()))
  const before = new Date(Math.min(to.getTime() + 2 * DAY_MS, MAX_FLOATING))
  if (after > before) return
  const fixed = FIXED_PERIOD_MS.get(series.rule.options.freq)
  const pieceMs = fixed === undefined ? before.getTime() - after.getTime() + 1 : fixed * series.rule.options.interval * PERIODS_PER_PIECE
  for (let pieceStart = after.getTime(); pieceStart <= before.getTime(); pieceStart += pieceMs) {
    const piece: Occurrence[] = []
    matchesBetween(series, new Date(pieceStart), new Date(Math.min(before.getTime(), pieceStart + pieceMs - 1)), (floating) => {
      // Placing a candidate in its zone is the costly part; one that cannot overlap the range
      // whatever the zone's offset is left out before.
      if (series.excluded.has(floating.getTime()) || floating.getTime() + lengthMs + ZONE_MARGIN_MS <= from.getTime() ||
        floating.getTime() - ZONE_MARGIN_MS >= to.getTime()) return true
      const occurrence = occurrenceFromFloating(series, floating)
      if (occurrence.start < to && occurrence.end > from) piece.push(occurrence)
      return true
    }, meter)
    yield piece
  }
}

/** The first occurrence (the series may exclude or not match its own start). */
export function firstOccurrence (series: CompiledSeries): Occurrence | null {
  if (series.first === null) return null
  if (!series.excluded.has(series.first.getTime())) return occurrenceFromFloating(series, series.first)
  let found: Date | null = null
  walk(series.rule, series.first, new Date(MAX_FLOATING), RULE_SEARCH_BUDGET, (floating) => {
    if (series.excluded.has(floating.getTime())) return true
    found = floating
    return false
  })
  return found === null ? null : occurrenceFromFloating(series, found)
}

/**
 * When the last occurrence ends at the latest, or null for a series without end. With UNTIL it
 * is when an occurrence starting at UNTIL would end: range reads use it only to leave out
 * series that are over, so an end a little late costs nothing but a walk that finds nothing.
 */
export function seriesEnd (series: CompiledSeries): Date | null {
  const { until } = series.rule.options
  const lastStart = series.lastStart ?? until
  if (lastStart === null) return null
  const start = series.shape.isAllDay
    ? new Date(Date.UTC(lastStart.getUTCFullYear(), lastStart.getUTCMonth(), lastStart.getUTCDate()))
    : lastStart
  return occurrenceFromFloating(series, start).end
}

/** An instant as the series' rule counts it: its wall time in the series' zone (its day, all day). */
function floatingOf (series: CompiledSeries, instant: Date): Date {
  const wallClock = DateTime.fromJSDate(instant).setZone(series.shape.timeZone)
  return series.shape.isAllDay
    ? new Date(Date.UTC(wallClock.year, wallClock.month - 1, wallClock.day))
    : toFloating(wallClock)
}

/** Whether the series' EXDATEs exclude the occurrence that begins at `originalStart`. */
export function excludesOccurrenceAt (series: CompiledSeries, originalStart: Date): boolean {
  return series.excluded.has(floatingOf(series, originalStart).getTime())
}

/** Whether `originalStartDate` is one of the series' occurrences. */
export function hasOccurrenceAt (series: CompiledSeries, originalStart: Date): boolean {
  const floating = floatingOf(series, originalStart)
  if (series.excluded.has(floating.getTime())) return false
  let found = false
  matchesBetween(series, floating, floating, (match) => {
    found = match.getTime() === floating.getTime()
    return false
  })
  return found
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
