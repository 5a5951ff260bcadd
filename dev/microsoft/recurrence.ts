// Graph's recurrence model (a pattern and a range), checked as Graph checks it and expanded into
// occurrences. Expansion happens in "floating" time: the series' wall clock in its own zone,
// written as if it were UTC, so that a daily 09:00 stays 09:00 across a daylight-saving change.
import rrule from 'rrule'
import type { Options as RRuleOptions } from 'rrule'
import { graphErrors } from './errors.js'
import { ianaZone, wallToMillis } from './zones.js'
import type { Wall } from './zones.js'

const { RRule } = rrule

type PatternType = 'daily' | 'weekly' | 'absoluteMonthly' | 'relativeMonthly' | 'absoluteYearly' | 'relativeYearly'
type RangeType = 'endDate' | 'noEnd' | 'numbered'
type DayOfWeek = 'sunday' | 'monday' | 'tuesday' | 'wednesday' | 'thursday' | 'friday' | 'saturday'
type WeekIndex = 'first' | 'second' | 'third' | 'fourth' | 'last'

/** As Graph answers it: every property present, unused ones at their defaults (0, `0001-01-01`...). */
export interface Recurrence {
  pattern: {
    type: PatternType
    interval: number
    month: number
    dayOfMonth: number
    daysOfWeek: DayOfWeek[]
    firstDayOfWeek: DayOfWeek
    index: WeekIndex
  }
  range: {
    type: RangeType
    startDate: string
    endDate: string
    recurrenceTimeZone: string
    numberOfOccurrences: number
  }
}

const PATTERNS = new Set<string>(['daily', 'weekly', 'absoluteMonthly', 'relativeMonthly', 'absoluteYearly', 'relativeYearly'])
const RANGES = new Set<string>(['endDate', 'noEnd', 'numbered'])
const DAYS: DayOfWeek[] = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday']
const INDEXES: WeekIndex[] = ['first', 'second', 'third', 'fourth', 'last']
const DATE = /^\d{4}-\d{2}-\d{2}$/
const NO_DATE = '0001-01-01'

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function invalid (message: string): Error {
  return graphErrors.validation(`Recurrence: ${message}`)
}

function validDate (text: unknown): text is string {
  if (typeof text !== 'string' || !DATE.test(text)) return false
  const [y, m, d] = text.split('-').map(Number) as [number, number, number]
  const date = new Date(Date.UTC(y, m - 1, d))
  return date.getUTCMonth() === m - 1 && date.getUTCDate() === d
}

/** Reads a `recurrence` value; `defaultZone` names the series' start zone. Throws Graph's 400s. */
export function readRecurrence (value: unknown, defaultZone: string): Recurrence {
  if (!isRecord(value) || !isRecord(value['pattern']) || !isRecord(value['range'])) throw invalid('pattern and range are required.')
  const pattern = value['pattern']
  const range = value['range']
  const type = pattern['type']
  if (typeof type !== 'string' || !PATTERNS.has(type)) throw invalid(`pattern.type must be one of ${[...PATTERNS].join(', ')}.`)
  const interval = pattern['interval'] ?? 1
  if (!Number.isInteger(interval) || (interval as number) < 1 || (interval as number) > 99) throw invalid('pattern.interval must be a whole number from 1 to 99.')
  const daysOfWeek = pattern['daysOfWeek'] ?? []
  if (!Array.isArray(daysOfWeek) || !daysOfWeek.every((day): day is DayOfWeek => typeof day === 'string' && DAYS.includes(day as DayOfWeek))) {
    throw invalid('pattern.daysOfWeek must list days of the week (sunday ... saturday).')
  }
  const firstDayOfWeek = pattern['firstDayOfWeek'] ?? 'sunday'
  if (typeof firstDayOfWeek !== 'string' || !DAYS.includes(firstDayOfWeek as DayOfWeek)) throw invalid('pattern.firstDayOfWeek must be a day of the week.')
  const index = pattern['index'] ?? 'first'
  if (typeof index !== 'string' || !INDEXES.includes(index as WeekIndex)) throw invalid('pattern.index must be first, second, third, fourth or last.')
  const dayOfMonth = pattern['dayOfMonth'] ?? 0
  const month = pattern['month'] ?? 0
  if (!Number.isInteger(dayOfMonth) || (dayOfMonth as number) < 0 || (dayOfMonth as number) > 31) throw invalid('pattern.dayOfMonth must be from 1 to 31.')
  if (!Number.isInteger(month) || (month as number) < 0 || (month as number) > 12) throw invalid('pattern.month must be from 1 to 12.')
  if ((type === 'weekly' || type === 'relativeMonthly' || type === 'relativeYearly') && daysOfWeek.length === 0) {
    throw invalid(`pattern.daysOfWeek is required for a ${type} pattern.`)
  }
  if ((type === 'absoluteMonthly' || type === 'absoluteYearly') && dayOfMonth === 0) throw invalid(`pattern.dayOfMonth is required for a ${type} pattern.`)
  if ((type === 'absoluteYearly' || type === 'relativeYearly') && month === 0) throw invalid(`pattern.month is required for a ${type} pattern.`)

  const rangeType = range['type']
  if (typeof rangeType !== 'string' || !RANGES.has(rangeType)) throw invalid('range.type must be endDate, noEnd or numbered.')
  const startDate = range['startDate']
  if (!validDate(startDate)) throw invalid('range.startDate is required (YYYY-MM-DD).')
  let endDate = NO_DATE
  let numberOfOccurrences = 0
  if (rangeType === 'endDate') {
    if (!validDate(range['endDate'])) throw invalid('range.endDate is required for an endDate range (YYYY-MM-DD).')
    endDate = range['endDate']
    if (endDate < startDate) throw invalid('range.endDate must not be before range.startDate.')
  }
  if (rangeType === 'numbered') {
    const count = range['numberOfOccurrences']
    if (!Number.isInteger(count) || (count as number) < 1) throw invalid('range.numberOfOccurrences must be a positive whole number for a numbered range.')
    numberOfOccurrences = count as number
  }
  const recurrenceTimeZone = range['recurrenceTimeZone'] ?? defaultZone
  if (typeof recurrenceTimeZone !== 'string' || ianaZone(recurrenceTimeZone) === undefined) throw graphErrors.timeZone(String(recurrenceTimeZone))
  return {
    pattern: {
      type: type as PatternType,
      interval: interval as number,
      month: (type === 'absoluteYearly' || type === 'relativeYearly') ? month as number : 0,
      dayOfMonth: (type === 'absoluteMonthly' || type === 'absoluteYearly') ? dayOfMonth as number : 0,
      daysOfWeek: type === 'daily' || type === 'absoluteMonthly' || type === 'absoluteYearly' ? [] : [...daysOfWeek],
      firstDayOfWeek: firstDayOfWeek as DayOfWeek,
      index: index as WeekIndex
    },
    range: { type: rangeType as RangeType, startDate, endDate, recurrenceTimeZone, numberOfOccurrences }
  }
}

const WEEKDAYS = [RRule.SU, RRule.MO, RRule.TU, RRule.WE, RRule.TH, RRule.FR, RRule.SA]
const weekday = (day: DayOfWeek): (typeof WEEKDAYS)[number] => WEEKDAYS[DAYS.indexOf(day)] ?? RRule.MO
const SET_POSITION: Record<WeekIndex, number> = { first: 1, second: 2, third: 3, fourth: 4, last: -1 }

/** The series' first start as floating time: range.startDate at the time of day of the event's start. */
function floatingStart (recurrence: Recurrence, startWall: Wall): Date {
  const [y, m, d] = recurrence.range.startDate.split('-').map(Number) as [number, number, number]
  return new Date(Date.UTC(y, m - 1, d, startWall.h, startWall.min, startWall.s))
}

// Compiled rules are kept per series definition: a calendar view over many series would otherwise
// build the same rule again for every request.
const compiled = new Map<string, InstanceType<typeof RRule>>()

function ruleOf (recurrence: Recurrence, startWall: Wall): InstanceType<typeof RRule> {
  const key = `${JSON.stringify(recurrence)}|${startWall.h}:${startWall.min}:${startWall.s}`
  const cached = compiled.get(key)
  if (cached !== undefined) return cached
  const { pattern, range } = recurrence
  const options: Partial<RRuleOptions> = {
    dtstart: floatingStart(recurrence, startWall),
    interval: pattern.interval,
    wkst: weekday(pattern.firstDayOfWeek),
    tzid: null
  }
  switch (pattern.type) {
    case 'daily':
      options.freq = RRule.DAILY
      break
    case 'weekly':
      options.freq = RRule.WEEKLY
      options.byweekday = pattern.daysOfWeek.map(weekday)
      break
    case 'absoluteMonthly':
      options.freq = RRule.MONTHLY
      options.bymonthday = pattern.dayOfMonth
      break
    case 'relativeMonthly':
      options.freq = RRule.MONTHLY
      options.byweekday = pattern.daysOfWeek.map(weekday)
      options.bysetpos = SET_POSITION[pattern.index]
      break
    case 'absoluteYearly':
      options.freq = RRule.YEARLY
      options.bymonth = pattern.month
      options.bymonthday = pattern.dayOfMonth
      break
    case 'relativeYearly':
      options.freq = RRule.YEARLY
      options.bymonth = pattern.month
      options.byweekday = pattern.daysOfWeek.map(weekday)
      options.bysetpos = SET_POSITION[pattern.index]
      break
  }
  if (range.type === 'numbered') options.count = range.numberOfOccurrences
  if (range.type === 'endDate') {
    const [y, m, d] = range.endDate.split('-').map(Number) as [number, number, number]
    options.until = new Date(Date.UTC(y, m - 1, d, 23, 59, 59))
  }
  const rule = new RRule(options)
  if (compiled.size > 10_000) compiled.clear()
  compiled.set(key, rule)
  return rule
}

const toWall = (floating: Date): Wall => ({
  y: floating.getUTCFullYear(),
  m: floating.getUTCMonth() + 1,
  d: floating.getUTCDate(),
  h: floating.getUTCHours(),
  min: floating.getUTCMinutes(),
  s: floating.getUTCSeconds()
})

/**
 * Original starts (instants) of the occurrences whose span meets [fromMs, toMs): start before
 * `toMs` and end after `fromMs`. `zone` is the IANA zone of the series' start.
 */
export function occurrencesBetween (recurrence: Recurrence, startWall: Wall, zone: string, durationMs: number, fromMs: number, toMs: number): number[] {
  const rule = ruleOf(recurrence, startWall)
  // Floating bounds a day wider than the instants cover every offset a zone can have.
  const day = 86_400_000
  const floatingFrom = new Date(fromMs - durationMs - day)
  const floatingTo = new Date(toMs + day)
  const starts: number[] = []
  for (const floating of rule.between(floatingFrom, floatingTo, true)) {
    const ms = wallToMillis(zone, toWall(floating))
    if (ms < toMs && ms + Math.max(durationMs, 1) > fromMs) starts.push(ms)
  }
  return starts
}

/** Whether the instant is one of the series' occurrences. */
export function isOccurrence (recurrence: Recurrence, startWall: Wall, zone: string, instantMs: number): boolean {
  return occurrencesBetween(recurrence, startWall, zone, 1, instantMs, instantMs + 1).includes(instantMs)
}

/** The first occurrence's start, or undefined when the range holds none. */
export function firstOccurrence (recurrence: Recurrence, startWall: Wall, zone: string): number | undefined {
  const first = ruleOf(recurrence, startWall).after(new Date(floatingStart(recurrence, startWall).getTime() - 1), true)
  return first === null ? undefined : wallToMillis(zone, toWall(first))
}
