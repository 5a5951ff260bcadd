// What becomes of a series' exceptions when the series itself changes ("all events" moved from
// 10:00 to 14:00, or to another day, or renamed). One rule, the same here and at every provider.
// A title, description or location the series changes reaches each exception that had not changed
// that field itself (followedFields). For its timing:
// each exception moves with its series by the same wall-clock shift, in the series' zone. A
// cancelled occurrence stays cancelled at its new time, a changed one keeps its changes there (and
// its own time, when it had been moved; otherwise it moves too). An exception whose new time is no
// occurrence of the changed series (its rule changed) is dropped. A series that changes its zone or
// becomes all-day (or timed) keeps none: its occurrences cannot be matched one to one.
import { DateTime } from 'luxon'
import type { EventRecord } from './record.js'
import type { EventContent } from '../../schemas/sync/index.js'
import { compileSeries, hasOccurrenceAt, RecurrenceRuleError, type CompiledSeries } from './recurrence.js'
import { eventDateTime, eventInstant, formatEventDate, occurrenceKey } from './time.js'
import { occurrenceId } from './ids.js'
import { sameReminders } from './reminders.js'

/** A series' start moved by whole days and a wall-clock time of day, in its zone. */
export interface SeriesMove {
  days: number
  minutes: number
}

/** How the series' start moved; null when its exceptions cannot move with it (zone or all-day changed). */
export function seriesMove (before: Pick<EventRecord, 'startDate' | 'isAllDay' | 'timeZone'>, after: Pick<EventRecord, 'startDate' | 'isAllDay' | 'timeZone'>): SeriesMove | null {
  if (before.isAllDay !== after.isAllDay || before.timeZone !== after.timeZone) return null
  const from = eventDateTime(before.startDate, before.isAllDay, before.timeZone)
  const to = eventDateTime(after.startDate, after.isAllDay, after.timeZone)
  const days = Math.round(to.startOf('day').diff(from.startOf('day'), 'days').days)
  const minutes = after.isAllDay ? 0 : (to.hour * 60 + to.minute) - (from.hour * 60 + from.minute)
  return { days, minutes }
}

export function isStill (move: SeriesMove): boolean {
  return move.days === 0 && move.minutes === 0
}

/** A wall-clock time of the series moved as its start moved: by the days, then to the shifted time of day, whatever the offset does between. */
function shifted (dateTime: DateTime, move: SeriesMove): DateTime {
  const minutes = dateTime.hour * 60 + dateTime.minute + move.minutes
  const carry = Math.floor(minutes / 1440)
  const timeOfDay = minutes - carry * 1440
  return dateTime.plus({ days: move.days + carry }).set({ hour: Math.floor(timeOfDay / 60), minute: timeOfDay % 60 })
}

/** An event date of the series (an original start, an occurrence's start) moved with it. */
function movedDate (value: string, series: Pick<EventRecord, 'isAllDay' | 'timeZone'>, move: SeriesMove): string {
  return formatEventDate(shifted(eventDateTime(value, series.isAllDay, series.timeZone), move), series.isAllDay)
}

/** A series as far as its timing goes, in the backend's terms and in a provider's alike. */
export interface SeriesTiming {
  startDate: string
  endDate: string
  isAllDay: boolean
  timeZone: string
  rule: string[]
}

export function timingOf (series: EventRecord): SeriesTiming {
  return { startDate: series.startDate, endDate: series.endDate, isAllDay: series.isAllDay, timeZone: series.timeZone, rule: series.recurrence?.rule ?? [] }
}

export function sameTiming (a: SeriesTiming, b: SeriesTiming): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** The same of a series as the Sync contract carries it (a provider's version, or the backend's change). */
export function contentTiming (content: EventContent): SeriesTiming {
  return { startDate: content.startDate, endDate: content.endDate, isAllDay: content.isAllDay, timeZone: content.timeZone, rule: content.recurrence ?? [] }
}

/** The changed series without its EXDATE lines: where an occurrence may stand, cancelled or not. */
function slotsOf (series: SeriesTiming): CompiledSeries | null {
  const rule = series.rule.filter((line) => !line.startsWith('EXDATE'))
  if (rule.length === 0) return null
  try {
    return compileSeries({ ...series, rule })
  } catch (error) {
    if (error instanceof RecurrenceRuleError) return null
    throw error
  }
}

/** Whether an occurrence of the series stands at `originalStartDate` (cancelled or not). */
export function slotChecker (series: SeriesTiming): (originalStartDate: string) => boolean {
  const slots = slotsOf(series)
  return (originalStartDate) => slots !== null && hasOccurrenceAt(slots, eventInstant(originalStartDate, series.isAllDay, series.timeZone))
}

/** The start and end of the series' occurrence at `originalStartDate`, as never edited. */
export function occurrenceTimes (series: SeriesTiming, originalStartDate: string): { startDate: string, endDate: string } {
  const seriesStart = eventDateTime(series.startDate, series.isAllDay, series.timeZone)
  const length = eventDateTime(series.endDate, series.isAllDay, series.timeZone).diff(seriesStart)
  const start = eventDateTime(originalStartDate, series.isAllDay, series.timeZone)
  return { startDate: formatEventDate(start, series.isAllDay), endDate: formatEventDate(start.plus(length), series.isAllDay) }
}

/** An exception of a series: the occurrence it stands for, and when it is. */
export interface ExceptionTiming {
  originalStartDate: string
  startDate: string
  endDate: string
}

/**
 * Where each exception of a series goes once the series changed from `before` to `after`: its new
 * original start, and its new start and end when it was still at its own occurrence's time (one
 * moved on its own keeps its time); null when it goes. Null as a whole when none can stay (the zone
 * or all-day changed, or the rule cannot be read). A series whose timing is the same keeps each as it is.
 */
export function exceptionMover (before: SeriesTiming, after: SeriesTiming): ((exception: ExceptionTiming) => ExceptionTiming | null) | null {
  if (sameTiming(before, after)) return (exception) => exception
  const move = seriesMove(before, after)
  const slots = move === null ? null : slotsOf(after)
  if (move === null || slots === null) return null
  return (exception) => {
    const originalStartDate = movedDate(exception.originalStartDate, after, move)
    if (!hasOccurrenceAt(slots, eventInstant(originalStartDate, after.isAllDay, after.timeZone))) return null
    const atItsSlot = eventInstant(exception.startDate, after.isAllDay, after.timeZone).getTime() === eventInstant(exception.originalStartDate, before.isAllDay, before.timeZone).getTime()
    return atItsSlot
      ? { originalStartDate, startDate: movedDate(exception.startDate, after, move), endDate: movedDate(exception.endDate, after, move) }
      : { originalStartDate, startDate: exception.startDate, endDate: exception.endDate }
  }
}

/** What a series' change of content reaches in its exceptions. */
const FOLLOWED_TEXT = ['title', 'description', 'location'] as const
export type FollowedFields = Partial<Record<typeof FOLLOWED_TEXT[number], string>> & Pick<EventRecord, 'color' | 'reminders'>

/**
 * The title, description, location, colour and reminders an exception takes from its series'
 * change: each the series changed, where the exception still had the series' old value (its own
 * change of that field stays). As Google Calendar applies an "all events" edit to the occurrences
 * changed before. A text or colour the series cleared comes as '' (a record stores no such field);
 * reminders back to the calendar's default come as undefined, which differs from none ([]).
 */
export function followedFields (before: FollowedFields, after: FollowedFields, exception: FollowedFields): FollowedFields {
  const followed: FollowedFields = {}
  for (const field of FOLLOWED_TEXT) {
    const was = before[field] ?? ''
    const now = after[field] ?? ''
    if (was !== now && (exception[field] ?? '') === was) followed[field] = now
  }
  if (before.color !== after.color && exception.color === before.color) followed.color = after.color
  if (!sameReminders(before.reminders, after.reminders) && sameReminders(exception.reminders, before.reminders)) followed.reminders = after.reminders
  return followed
}

const EXDATE = /^EXDATE((?:;[A-Z-]+=[^;:]+)*):([0-9TZ,]+)$/

/**
 * The EXDATE lines of `before` moved with the series, keeping those still on an occurrence of
 * `after`. Each value keeps its form (a date, UTC, or a TZID's local time).
 */
export function movedExclusions (before: SeriesTiming, after: SeriesTiming, move: SeriesMove): string[] {
  const slots = slotsOf(after)
  if (slots === null) return []
  const lines: string[] = []
  for (const line of before.rule) {
    const match = EXDATE.exec(line)
    if (match === null) continue
    const params = match[1] ?? ''
    const tzid = /;TZID=([^;:]+)/.exec(params)?.[1]
    const values = (match[2] ?? '').split(',').flatMap((value) => {
      let wallClock: DateTime
      if (value.length === 8) wallClock = DateTime.fromFormat(value, 'yyyyMMdd', { zone: before.timeZone })
      else if (value.endsWith('Z')) wallClock = DateTime.fromFormat(value, "yyyyMMdd'T'HHmmss'Z'", { zone: 'UTC' }).setZone(before.timeZone)
      else wallClock = DateTime.fromFormat(value, "yyyyMMdd'T'HHmmss", { zone: tzid ?? before.timeZone }).setZone(before.timeZone)
      if (!wallClock.isValid) return []
      const moved = shifted(wallClock, move)
      if (!hasOccurrenceAt(slots, moved.toJSDate())) return []
      if (value.length === 8) return [moved.toFormat('yyyyMMdd')]
      if (value.endsWith('Z')) return [moved.toUTC().toFormat("yyyyMMdd'T'HHmmss'Z'")]
      return [moved.setZone(tzid ?? before.timeZone).toFormat("yyyyMMdd'T'HHmmss")]
    })
    if (values.length > 0) lines.push(`EXDATE${params}:${values.join(',')}`)
  }
  return lines
}

/**
 * The stored exceptions (changed or cancelled occurrences) of a series as they stand once the
 * series changed from `before` to `after`: moved to their new original start. Their provider id named the old occurrence, so it goes: Sync links each again
 * by series and original start. Exceptions the rule leaves without an occurrence are not returned.
 */
export function movedExceptions (before: EventRecord, after: EventRecord, exceptions: EventRecord[], now: Date): EventRecord[] {
  const mover = exceptionMover(timingOf(before), timingOf(after))
  if (mover === null) return []
  return exceptions.flatMap((exception) => {
    if (exception.originalStartDate === undefined) return []
    const moved = mover({ originalStartDate: exception.originalStartDate, startDate: exception.startDate, endDate: exception.endDate })
    if (moved === null) return []
    // A provider id names the occurrence's slot there: it stays with an exception that did not move.
    const moves = moved.originalStartDate !== exception.originalStartDate
    const { providerEventId: slot, ...rest } = exception as EventRecord & { providerEventId?: string }
    const kept = moves || slot === undefined ? rest : { ...rest, providerEventId: slot }
    // An edit keeps its own id; one stored under its occurrence's id (a cancellation) takes the new occurrence's.
    const slotId = occurrenceId(before._id, occurrenceKey(exception.originalStartDate, before.isAllDay, before.timeZone))
    const retimed = moves || moved.startDate !== exception.startDate || moved.endDate !== exception.endDate
    const followed: EventRecord = {
      ...kept,
      ...followedFields(before, after, exception),
      ...moved,
      _id: exception._id === slotId ? occurrenceId(after._id, occurrenceKey(moved.originalStartDate, after.isAllDay, after.timeZone)) : exception._id,
      // Only a move is a change of the occurrence's own. Taking the series' new title (or room,
      // colour, reminders) is not: the provider's copy of the occurrence does the same with the
      // series, and a change of the occurrence's own there, or its deletion there (Google's carry no
      // time), must not count older than it.
      lastUpdated: retimed ? now.toISOString() : exception.lastUpdated
    }
    // A description, location, colour or reminders the series cleared is no field, as a change without it stores it.
    if (followed.description === '') delete followed.description
    if (followed.location === '') delete followed.location
    if (followed.color === undefined) delete followed.color
    if (followed.reminders === undefined) delete followed.reminders
    return [followed]
  })
}
