// Events laid out across a row of days (a month's week, the week's or the day's all-day row), as
// Google Calendar draws them: an event over several days is one bar from its first day to its
// last in the row (cut at the row's edges, going on in the next row), every event on a lane of its
// own so that two which share a day never cover each other, and past the lanes that fit, a
// "+N more" in the cell of each day that has events left out.
import type { DateTime } from 'luxon'
import type { CalendarEvent } from './events.js'

export interface Span {
  event: CalendarEvent
  /** The first and last day of the row it covers (indexes into the row's days, inclusive). */
  first: number
  last: number
  /** It began before the row's first day, or goes on after its last. */
  continuesBefore: boolean
  continuesAfter: boolean
}

export interface Laned extends Span {
  lane: number
}

export interface DayMore {
  day: number
  /** The events of that day left out of the lanes shown. */
  events: CalendarEvent[]
}

/**
 * The part of each event that falls within `days` (consecutive days in `zone`): all-day events by
 * their dates (the end date is the day after the last), timed ones by their instants (one ending
 * at midnight does not touch the next day).
 */
export function spansOf (events: CalendarEvent[], days: DateTime[], zone: string): Span[] {
  if (days.length === 0) return []
  const dates = days.map((day) => day.setZone(zone).toISODate() as string)
  const dayAfter = (days[days.length - 1] as DateTime).setZone(zone).startOf('day').plus({ days: 1 })
  const dateAfter = dayAfter.toISODate() as string
  // Midnights as instants, read once per row: the events' own instants need no luxon.
  const midnights = [...days.map((day) => day.setZone(zone).startOf('day').toMillis()), dayAfter.toMillis()]
  const spans: Span[] = []
  for (const event of events) {
    if (event.isAllDay) {
      if (event.startDate >= dateAfter || event.endDate <= (dates[0] as string)) continue
      const first = event.startDate <= (dates[0] as string) ? 0 : dates.findIndex((date) => date >= event.startDate)
      // The last day shown before the (exclusive) end date.
      let last = dates.length - 1
      while (last > first && (dates[last] as string) >= event.endDate) last--
      spans.push({ event, first, last, continuesBefore: event.startDate < (dates[0] as string), continuesAfter: event.endDate > dateAfter })
      continue
    }
    const start = Date.parse(event.startDate)
    // An event of no length still shows on the day it happens.
    const end = Math.max(Date.parse(event.endDate), start + 1)
    const from = midnights[0] as number
    const to = midnights[midnights.length - 1] as number
    if (start >= to || end <= from) continue
    let first = 0
    while (first < days.length - 1 && (midnights[first + 1] as number) <= start) first++
    let last = first
    while (last < days.length - 1 && (midnights[last + 1] as number) < end) last++
    spans.push({ event, first, last, continuesBefore: start < from, continuesAfter: end > to })
  }
  return spans
}

function order (a: Span, b: Span): number {
  // Left to right; on the same day the longer first (bars on top, as Google draws them), then
  // all-day before timed, then by start and title, so a row is laid out the same every time.
  return a.first - b.first ||
    (b.last - b.first) - (a.last - a.first) ||
    Number(b.event.isAllDay) - Number(a.event.isAllDay) ||
    (a.event.startDate < b.event.startDate ? -1 : a.event.startDate > b.event.startDate ? 1 : 0) ||
    a.event.title.localeCompare(b.event.title) ||
    (a.event._id < b.event._id ? -1 : a.event._id > b.event._id ? 1 : 0)
}

/** Each span on the first lane free on all of its days: overlapping spans never share a lane. */
export function assignLanes (spans: Span[]): Laned[] {
  // For each lane, the last day it is taken up to.
  const laneEnds: number[] = []
  return [...spans].sort(order).map((span) => {
    let lane = laneEnds.findIndex((end) => end < span.first)
    if (lane === -1) lane = laneEnds.length
    laneEnds[lane] = span.last
    return { ...span, lane }
  })
}

/**
 * At most `maxLanes` lanes in each day's cell. A day whose events need more keeps its last lane
 * for "+N more"; an event is shown only if its lane is shown on every day it covers (a bar is not
 * cut in the middle), and is counted in "+N more" on each of its days otherwise.
 */
export function limitLanes (laned: Laned[], days: number, maxLanes: number): { shown: Laned[], more: DayMore[] } {
  const lanes = Math.max(1, maxLanes)
  const overflows = Array.from({ length: days }, () => false)
  for (const item of laned) {
    if (item.lane < lanes) continue
    for (let day = item.first; day <= item.last; day++) overflows[day] = true
  }
  const shown: Laned[] = []
  const hidden: CalendarEvent[][] = Array.from({ length: days }, () => [])
  for (const item of laned) {
    let fits = true
    for (let day = item.first; day <= item.last && fits; day++) fits = item.lane < (overflows[day] === true ? lanes - 1 : lanes)
    if (fits) {
      shown.push(item)
      continue
    }
    for (let day = item.first; day <= item.last; day++) hidden[day]?.push(item.event)
  }
  const more = hidden.flatMap((events, day) => events.length === 0 ? [] : [{ day, events }])
  return { shown, more }
}

/** The lanes a row draws: one past the highest lane shown, and one for "+N more" if any. */
export function lanesUsed (shown: Laned[], more: DayMore[], maxLanes: number): number {
  const top = shown.reduce((highest, item) => Math.max(highest, item.lane + 1), 0)
  return more.length === 0 ? top : Math.max(top, Math.max(1, maxLanes))
}
