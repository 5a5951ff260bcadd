// A series' rule as rrule walks it, with a budget: what a compiled series holds, the refusals of a
// rule that asks more than an expansion may cost, and the bounded walks that find its matches.
import rrule from 'rrule'
import type { RRule as RRuleType, Options as RRuleOptions } from 'rrule'

const { RRule } = rrule

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
export const RULE_SEARCH_BUDGET = 2000
const YEARLY_PERIOD_WEIGHT = 8
/** Periods walked per piece of an expansion, so that a long range is expanded in short steps. */
export const PERIODS_PER_PIECE = 100
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
export function walk (rule: RRuleType, from: Date, to: Date, periods: number, visit: (floating: Date) => boolean, meter?: WalkMeter): boolean {
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
export const FIXED_PERIOD_MS = new Map<number, number>([[RRule.HOURLY, HOUR_MS], [RRule.DAILY, 24 * HOUR_MS], [RRule.WEEKLY, 7 * 24 * HOUR_MS]])

export interface RuleBounds {
  /** The first match (floating), before EXDATE. */
  first: Date | null
  /** With COUNT: the start of the last match (floating), so that COUNT becomes an UNTIL. */
  lastStart: Date | null
}

function greatestCommonDivisor (a: number, b: number): number {
  return b === 0 ? a : greatestCommonDivisor(b, a % b)
}

/** Checks what a rule may ask of rrule, and finds its first (and with COUNT its last) match within the budget. */
export function ruleBounds (rule: RRuleType, meter: WalkMeter | undefined): RuleBounds {
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

export const MAX_FLOATING = Date.UTC(9999, 11, 31, 23, 59, 59)

/**
 * The rule's options with every default rrule takes from DTSTART written out, so the same rule
 * can restart from another DTSTART. COUNT becomes UNTIL at its last match.
 */
export function pinnedOptions (rule: RRuleType, lastStart: Date | null): Partial<RRuleOptions> {
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
export function matchesBetween (series: CompiledSeries, after: Date, before: Date, visit: (floating: Date) => boolean, meter?: WalkMeter): void {
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
