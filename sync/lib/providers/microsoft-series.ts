// Rules of Microsoft Graph's recurring series, over plain data: which occurrence an instance stands
// for, which occurrences Graph no longer lists (Graph keeps no list of deleted occurrences), and the
// range a calendar is synchronised over.
import { DateTime } from 'luxon'
import { compileSeries, expandSeries, RecurrenceRuleError } from '../../../lib/events/recurrence.js'
import { contentTiming, movedExclusions, seriesMove } from '../../../lib/events/series-move.js'
import type { EventContent } from '../../../schemas/sync/index.js'
import type { GraphEvent } from './microsoft-mapping.js'

export const DAY_MS = 24 * 60 * 60_000
/** The whole range an import and its delta cursor cover: a year back, two years ahead. */
export const FULL_RANGE = { beforeMs: 365 * DAY_MS, afterMs: 730 * DAY_MS }
/** Exceptions moved further than this from their original start may be taken for deleted occurrences. */
export const MOVED_EXCEPTION_MARGIN_MS = 31 * DAY_MS
/** The contract's recurrence holds at most 20 lines of at most 1024 characters, one of them the RRULE. */
const EXDATE_LINES_MAX = 19
const EXDATE_LINE_LENGTH = 1024
/** A daily series over the whole range has about 1,100 occurrences. */
const OCCURRENCES_MAX = 5000
/** An instance's original start (Graph writes it in UTC, without the Z). */
export function originalStartOf (instance: GraphEvent): number {
  const text = instance.originalStart ?? ''
  return new Date(/(Z|[+-]\d{2}:\d{2})$/.test(text) ? text : `${text}Z`).getTime()
}

/**
 * EXDATE lines for the occurrences of the rule, within the range the calendar is synchronised over,
 * that are not among the series' instances at Graph (`present`, by occurrenceKey), expanded as the
 * backend expands them.
 */
export function missingOccurrences (content: EventContent, present: Set<string>, now: Date): string[] {
  let series: ReturnType<typeof compileSeries>
  try {
    series = compileSeries({ startDate: content.startDate, endDate: content.endDate, isAllDay: content.isAllDay, timeZone: content.timeZone, rule: content.recurrence ?? [] })
  } catch (error) {
    // The backend refuses such a rule anyway; there is nothing to exclude from.
    if (error instanceof RecurrenceRuleError) return []
    throw error
  }
  // A series of N occurrences with N of them listed lacks none: the rule need not be expanded.
  const total = occurrenceCount(content.recurrence ?? [])
  if (total !== null && present.size >= total) return []
  const from = new Date(now.getTime() - FULL_RANGE.beforeMs)
  const to = new Date(now.getTime() + FULL_RANGE.afterMs)
  // Only occurrences wholly inside the range: Graph lists every such one that still exists.
  const expected = expandSeries(series, from, to, OCCURRENCES_MAX).filter((occurrence) => occurrence.start >= from && occurrence.end <= to)
  let missing = expected.filter((occurrence) => !present.has(content.isAllDay ? occurrence.startDate : String(occurrence.start.getTime())))
  if (missing.length === 0) return []
  const head = content.isAllDay ? 'EXDATE;VALUE=DATE' : 'EXDATE'
  const value = (start: Date, startDate: string): string => content.isAllDay
    ? startDate.replaceAll('-', '')
    : DateTime.fromJSDate(start).toUTC().toFormat("yyyyMMdd'T'HHmmss'Z'")
  const perLine = Math.floor((EXDATE_LINE_LENGTH - head.length) / (value(now, '2000-01-01').length + 1))
  if (missing.length > perLine * EXDATE_LINES_MAX) {
    // More than the contract holds: those nearest today matter most.
    const distance = (start: Date): number => Math.abs(start.getTime() - now.getTime())
    const kept = new Set([...missing].sort((a, b) => distance(a.start) - distance(b.start)).slice(0, perLine * EXDATE_LINES_MAX))
    missing = missing.filter((occurrence) => kept.has(occurrence))
  }
  return exdateLines(head, missing.map((occurrence) => value(occurrence.start, occurrence.startDate)))
}

/**
 * The occurrences of a series deleted at Graph before its pattern or times are written (missing
 * among its instances: Graph keeps no list of them, and brings them all back on such a write), as
 * EXDATE lines moved with the series to `to` (lib/events/series-move.ts), so they are deleted
 * again; `beyondRule`: some of them are not excluded by `to`'s own rule.
 */
export function stillDeleted (from: EventContent, instances: GraphEvent[], to: EventContent, now: Date): { lines: string[], beyondRule: boolean } {
  const present = new Set(instances.flatMap((instance) => occurrenceKey(instance, from) ?? []))
  const excluded = missingOccurrences(from, present, now)
  const move = seriesMove(from, to)
  if (excluded.length === 0 || move === null) return { lines: [], beyondRule: false }
  const lines = movedExclusions(contentTiming({ ...from, recurrence: [...from.recurrence ?? [], ...excluded] }), contentTiming(to), move)
  const occurrences = (rule: string[]): number => expandSeries(compileSeries({ startDate: to.startDate, endDate: to.endDate, isAllDay: to.isAllDay, timeZone: to.timeZone, rule }),
    new Date(now.getTime() - FULL_RANGE.beforeMs), new Date(now.getTime() + FULL_RANGE.afterMs), OCCURRENCES_MAX).length
  let beyondRule: boolean
  try {
    beyondRule = occurrences([...to.recurrence ?? [], ...lines]) !== occurrences(to.recurrence ?? [])
  } catch (error) {
    if (error instanceof RecurrenceRuleError) return { lines, beyondRule: false }
    throw error
  }
  return { lines, beyondRule }
}

/** Graph's UTC date-time (with or without its `Z`) as milliseconds; NaN when it is none. */
export function utcMs (value: string | null | undefined): number {
  if (!value) return Number.NaN
  return Date.parse(value.endsWith('Z') || /[+-]\d{2}:\d{2}$/.test(value) ? value : `${value}Z`)
}

/** The version Graph gives an instance: an occurrence carries its series master's, an exception its own. */
export function versionOf (instance: GraphEvent): string | null {
  return instance['@odata.etag'] ?? instance.changeKey ?? null
}

/**
 * Whether an instance may meet a calendar view's range. Graph's instance times are UTC, an all-day
 * one's its date at midnight: a day's margin on both sides takes in every instance the view may list
 * (and one without times counts as meeting it).
 */
export function meets (span: { startMs: number, endMs: number }, range: { fromMs: number, toMs: number }): boolean {
  return !(span.startMs >= range.toMs + DAY_MS) && !(span.endMs <= range.fromMs - DAY_MS)
}

/**
 * Which occurrence of the series an instance at Graph stands for: its original start (UTC), or for an
 * all-day series its date in the series' zone; an occurrence's own start is its original one.
 */
export function occurrenceKey (instance: GraphEvent, content: EventContent): string | null {
  if (content.isAllDay) {
    if (instance.type === 'occurrence' && instance.start?.dateTime) return instance.start.dateTime.slice(0, 10)
    const ms = utcMs(instance.originalStart)
    return Number.isNaN(ms) ? null : DateTime.fromMillis(ms, { zone: content.timeZone }).toISODate()
  }
  let ms = utcMs(instance.originalStart)
  if (Number.isNaN(ms) && instance.type === 'occurrence') ms = utcMs(instance.start?.dateTime)
  return Number.isNaN(ms) ? null : String(ms)
}

/** The number of occurrences of a rule of one RRULE with a COUNT (Graph's numbered range); null for any other. */
function occurrenceCount (rule: string[]): number | null {
  const count = rule.length === 1 ? /^RRULE:(?:.*;)?COUNT=(\d+)(?:;|$)/.exec(rule[0] ?? '')?.[1] : undefined
  return count === undefined ? null : Number(count)
}

/** EXDATE lines of the given values, as few as fit the contract's line length. */
function exdateLines (head: string, values: string[]): string[] {
  const lines: string[] = []
  let current: string[] = []
  for (const value of values) {
    if (current.length > 0 && head.length + 1 + [...current, value].join(',').length > EXDATE_LINE_LENGTH) {
      lines.push(`${head}:${current.join(',')}`)
      current = []
    }
    current.push(value)
  }
  if (current.length > 0) lines.push(`${head}:${current.join(',')}`)
  return lines
}
