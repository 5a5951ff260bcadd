import rrule from 'rrule'
import type { RRule as RRuleType, Options as RRuleOptions } from 'rrule'
import { DateTime } from 'luxon'
import { eventDateTime, toFloating, fromFloating, formatEventDate } from './time.js'
import { isoInZone, localInstant } from '../zone-offsets.js'

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
  /** The rule's first match (floating time, before EXDATE), or null when it has none. */
  first: Date | null
  /** With COUNT: the start of its last match (floating time). */
  lastStart: Date | null
  /** The rule's options with its DTSTART defaults written out and COUNT as UNTIL (see ruleFrom). */
  pinned: Partial<RRuleOptions>
}

/**
 * Why a rule is refused: `RRULE_INVALID` for what RFC 5545 or this service does not accept as
 * written; the other codes for a valid rule that asks more than an expansion may cost.
 */
export type RecurrenceRefusal = 'RRULE_INVALID' | 'RRULE_FREQUENCY_NOT_ALLOWED' | 'RRULE_NO_OCCURRENCE' | 'RRULE_COUNT_TOO_LARGE'

export class RecurrenceRuleError extends Error {
  override name = 'RecurrenceRuleError'
  readonly code: RecurrenceRefusal

  constructor (message: string, code: RecurrenceRefusal = 'RRULE_INVALID') {
    super(message)
    this.code = code
  }
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

/*
 * Expansion budget. rrule walks a rule period by period from its DTSTART and stops only at a
 * match past the asked range, at UNTIL/COUNT, or in the year 9999: a rule that never matches
 * (FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30) walks millions of periods, and a series begun long ago
 * walks every period since. So every walk here starts near the range asked (see ruleFrom) and
 * carries a budget of periods. rrule offers no such limit, but reads the rule's INTERVAL twice
 * per period (once to stop on INTERVAL=0, once to step the counter), so a counting getter on a
 * copy of the parsed options is the budget. A YEARLY period walks a whole year of days and costs
 * about eight times a period of any other frequency.
 */

/** Periods (YEARLY counting 8) a rule may walk at write time to find its first (and, with COUNT, last) match. */
const RULE_SEARCH_BUDGET = 2000
const YEARLY_PERIOD_WEIGHT = 8
/** Periods walked per piece of an expansion, so that a long range is expanded in short steps. */
const PERIODS_PER_PIECE = 100
/** Frequencies below HOURLY are refused: the calendars users sync with offer nothing below DAILY. */
const ALLOWED_FREQUENCIES = new Set<number>([RRule.YEARLY, RRule.MONTHLY, RRule.WEEKLY, RRule.DAILY, RRule.HOURLY])

const BUDGET_SPENT = Symbol('budget spent')

/**
 * Counts the periods (YEARLY counting 8) the walks of one piece of work take, so that a caller
 * that walks many series (a range read) can bound their total: each walk is bounded by itself,
 * but a thousand of them are not.
 */
export interface WalkMeter { periods: number }

/**
 * Visits the rule's matches in [from, to] (floating time) in order until `visit` returns false,
 * walking at most `periods` periods. Returns false when the budget ran out first.
 */
function walk (rule: RRuleType, from: Date, to: Date, periods: number, visit: (floating: Date) => boolean, meter?: WalkMeter): boolean {
  const options = { ...rule.options }
  const { interval } = options
  const weight = options.freq === RRule.YEARLY ? YEARLY_PERIOD_WEIGHT : 1
  let reads = 0
  const allowedReads = 2 * Math.floor(periods / weight) + 1
  Object.defineProperty(options, 'interval', {
    enumerable: true,
    get () {
      reads += 1
      // Thrown through rrule's loop: nothing of the walk is kept but what `visit` saw.
      if (reads > allowedReads) throw BUDGET_SPENT
      return interval
    }
  })
  const budgeted = Object.create(rule, { options: { value: options } }) as RRuleType
  try {
    budgeted.between(from, to, true, (floating) => visit(floating))
    return true
  } catch (error) {
    if (error === BUDGET_SPENT) return false
    throw error
  } finally {
    if (meter !== undefined) meter.periods += Math.ceil(reads / 2) * weight
  }
}

const HOUR_MS = 3_600_000
const FIXED_PERIOD_MS = new Map<number, number>([[RRule.HOURLY, HOUR_MS], [RRule.DAILY, 24 * HOUR_MS], [RRule.WEEKLY, 7 * 24 * HOUR_MS]])

interface RuleBounds {
  /** The first match (floating), before EXDATE. */
  first: Date | null
  /** With COUNT: the start of the last match (floating), so that COUNT becomes an UNTIL. */
  lastStart: Date | null
}

function greatestCommonDivisor (a: number, b: number): number {
  return b === 0 ? a : greatestCommonDivisor(b, a % b)
}

/** Checks what a rule may ask of rrule, and finds its first (and with COUNT its last) match within the budget. */
function ruleBounds (rule: RRuleType, meter: WalkMeter | undefined): RuleBounds {
  const { freq, interval, count, dtstart, byhour } = rule.options
  if (!ALLOWED_FREQUENCIES.has(freq)) {
    throw new RecurrenceRuleError(`FREQ=${RRule.FREQUENCIES[freq] ?? freq} is not allowed: a series repeats at most hourly`, 'RRULE_FREQUENCY_NOT_ALLOWED')
  }
  // rrule steps an HOURLY counter until it lands on a BYHOUR, forever if none can be reached.
  if (freq === RRule.HOURLY && byhour !== null && byhour.length > 0) {
    const step = greatestCommonDivisor(interval % 24 === 0 ? 24 : interval % 24, 24)
    if (!byhour.some((hour) => (hour - dtstart.getUTCHours()) % step === 0)) {
      throw new RecurrenceRuleError(`no BYHOUR is ever reached every ${interval} hours from the start`, 'RRULE_NO_OCCURRENCE')
    }
  }
  let first: Date | null = null
  let last: Date | null = null
  let found = 0
  const completed = walk(rule, dtstart, new Date(MAX_FLOATING), RULE_SEARCH_BUDGET, (floating) => {
    first ??= floating
    last = floating
    found += 1
    return count !== null && found < count
  }, meter)
  if (count !== null && !completed) {
    throw new RecurrenceRuleError(`COUNT=${count} is not reached within ${RULE_SEARCH_BUDGET} periods; end the series with UNTIL instead`, 'RRULE_COUNT_TOO_LARGE')
  }
  if (first === null && !completed) {
    throw new RecurrenceRuleError(`the rule has no occurrence within ${RULE_SEARCH_BUDGET} periods of its start`, 'RRULE_NO_OCCURRENCE')
  }
  return { first, lastStart: count === null ? null : last }
}

const MAX_FLOATING = Date.UTC(9999, 11, 31, 23, 59, 59)

/**
 * The rule's options with every default rrule takes from DTSTART written out, so the same rule
 * can restart from another DTSTART. COUNT becomes UNTIL at its last match.
 */
function pinnedOptions (rule: RRuleType, lastStart: Date | null): Partial<RRuleOptions> {
  const given = rule.origOptions
  const parsed = rule.options
  const pinned: Partial<RRuleOptions> = { ...given, tzid: null, count: null }
  if (lastStart !== null) pinned.until = lastStart
  // rrule leaves a part it did not default as null, whatever its type says.
  const defaulted = (part: number[] | null): part is number[] => part !== null && part.length > 0
  if (given.byhour == null && defaulted(parsed.byhour)) pinned.byhour = parsed.byhour
  if (given.byminute == null && defaulted(parsed.byminute)) pinned.byminute = parsed.byminute
  if (given.bysecond == null && defaulted(parsed.bysecond)) pinned.bysecond = parsed.bysecond
  const dayChosen = [given.byweekno, given.byyearday, given.bymonthday, given.byweekday, given.byeaster].some((part) => part != null)
  if (!dayChosen) {
    if (parsed.freq === RRule.YEARLY) {
      pinned.bymonth = parsed.bymonth
      pinned.bymonthday = parsed.bymonthday
    } else if (parsed.freq === RRule.MONTHLY) {
      pinned.bymonthday = parsed.bymonthday
    } else if (parsed.freq === RRule.WEEKLY) {
      pinned.byweekday = parsed.byweekday
    }
  }
  return pinned
}

/**
 * A rule with the same matches from `point` on (floating time), started a whole number of its
 * periods after the series' own start, at or before `point`: what lets an expansion cost the
 * range asked, never the years since the series began.
 */
function ruleFrom (series: CompiledSeries, point: Date): RRuleType {
  const { freq, interval, dtstart } = series.rule.options
  const fixed = FIXED_PERIOD_MS.get(freq)
  let start: number
  if (fixed !== undefined) {
    const step = fixed * interval
    const periods = Math.floor((point.getTime() - dtstart.getTime()) / step)
    if (periods < 1) return series.rule
    start = dtstart.getTime() + periods * step
  } else if (freq === RRule.MONTHLY) {
    const months = (point.getUTCFullYear() - dtstart.getUTCFullYear()) * 12 + point.getUTCMonth() - dtstart.getUTCMonth()
    const periods = Math.floor(months / interval)
    if (periods < 1) return series.rule
    start = Date.UTC(dtstart.getUTCFullYear(), dtstart.getUTCMonth() + periods * interval, 1)
  } else {
    // One year more: a year's BYWEEKNO weeks may run into the next January.
    const periods = Math.floor((point.getUTCFullYear() - dtstart.getUTCFullYear()) / interval) - 1
    if (periods < 1) return series.rule
    start = Date.UTC(dtstart.getUTCFullYear() + periods * interval, 0, 1)
  }
  return new RRule({ ...series.pinned, dtstart: new Date(start) }, true)
}

/** At most how many periods a walk from `rule`'s start to `to` takes. */
function periodsUntil (rule: RRuleType, to: Date): number {
  const { freq, interval, dtstart } = rule.options
  const fixed = FIXED_PERIOD_MS.get(freq)
  const span = Math.max(0, to.getTime() - dtstart.getTime())
  if (fixed !== undefined) return Math.ceil(span / (fixed * interval)) + 2
  const months = (to.getUTCFullYear() - dtstart.getUTCFullYear()) * 12 + to.getUTCMonth() - dtstart.getUTCMonth()
  if (freq === RRule.MONTHLY) return Math.ceil(Math.max(0, months) / interval) + 2
  return (Math.ceil(Math.max(0, months) / 12 / interval) + 2) * YEARLY_PERIOD_WEIGHT
}

/**
 * Every match of the series in [after, before] (floating), in order, visited piece by piece;
 * `visit` returns false to stop. The walk of each piece starts at the piece and is budgeted to
 * the periods the piece spans: a budget spent means the walk has passed the piece's end, so
 * nothing in it was missed.
 */
function matchesBetween (series: CompiledSeries, after: Date, before: Date, visit: (floating: Date) => boolean, meter?: WalkMeter): void {
  const fixed = FIXED_PERIOD_MS.get(series.rule.options.freq)
  const pieceMs = fixed === undefined ? Infinity : fixed * series.rule.options.interval * PERIODS_PER_PIECE
  for (let pieceStart = after.getTime(); pieceStart <= before.getTime(); pieceStart += pieceMs) {
    const pieceEnd = new Date(Math.min(before.getTime(), pieceStart + pieceMs - 1))
    const rule = ruleFrom(series, new Date(pieceStart))
    let stopped = false
    walk(rule, new Date(pieceStart), pieceEnd, periodsUntil(rule, pieceEnd), (floating) => {
      stopped = !visit(floating)
      return !stopped
    }, meter)
    if (stopped) return
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

/** Whether `originalStartDate` is one of the series' occurrences. */
export function hasOccurrenceAt (series: CompiledSeries, originalStart: Date): boolean {
  const wallClock = DateTime.fromJSDate(originalStart).setZone(series.shape.timeZone)
  const floating = series.shape.isAllDay
    ? new Date(Date.UTC(wallClock.year, wallClock.month - 1, wallClock.day))
    : toFloating(wallClock)
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
