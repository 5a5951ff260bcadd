// The geometry of the day and week grids, in the user's time zone: which days a view shows,
// where a timed event sits in its day column (minutes from midnight, side by side when they
// overlap), which all-day events touch a day, and the snapping of drags.
import { DateTime } from 'luxon'
import type { CalendarEvent } from './events.js'

export type View = 'day' | 'week'
export const SNAP_MINUTES = 15
export const DAY_MINUTES = 24 * 60

/** The days a view shows around `anchor` (a week starts on Monday). */
export function viewDays (anchor: DateTime, view: View): DateTime[] {
  const first = view === 'day' ? anchor.startOf('day') : anchor.startOf('week')
  return Array.from({ length: view === 'day' ? 1 : 7 }, (_, index) => first.plus({ days: index }))
}

/** The [from, to) instants a view reads. */
export function viewRange (anchor: DateTime, view: View): { from: Date, to: Date } {
  const days = viewDays(anchor, view)
  const first = days[0] as DateTime
  const last = days[days.length - 1] as DateTime
  return { from: first.toJSDate(), to: last.plus({ days: 1 }).toJSDate() }
}

/** The next or previous day or week. */
export function step (anchor: DateTime, view: View, direction: 1 | -1): DateTime {
  return anchor.plus(view === 'day' ? { days: direction } : { weeks: direction })
}

export function eventStart (event: CalendarEvent, zone: string): DateTime {
  return event.isAllDay ? DateTime.fromISO(event.startDate, { zone }) : DateTime.fromISO(event.startDate, { setZone: true }).setZone(zone)
}

export function eventEnd (event: CalendarEvent, zone: string): DateTime {
  return event.isAllDay ? DateTime.fromISO(event.endDate, { zone }) : DateTime.fromISO(event.endDate, { setZone: true }).setZone(zone)
}

export interface Placed {
  event: CalendarEvent
  /** Minutes from the day's midnight, clamped to the day. */
  top: number
  height: number
  column: number
  columns: number
  /** The event goes on before this day or after it. */
  continuesBefore: boolean
  continuesAfter: boolean
}

/** Timed events of one day, placed side by side where they overlap (greedy columns per cluster). */
export function layoutDay (events: CalendarEvent[], day: DateTime, zone: string): Placed[] {
  const dayStart = day.setZone(zone).startOf('day')
  const dayEnd = dayStart.plus({ days: 1 })
  const items = events
    .filter((event) => !event.isAllDay)
    .map((event) => ({ event, start: eventStart(event, zone), end: eventEnd(event, zone) }))
    .filter((item) => item.start < dayEnd && item.end > dayStart)
    .sort((a, b) => a.start.toMillis() - b.start.toMillis() || b.end.toMillis() - a.end.toMillis())
  const placed: Placed[] = []
  let cluster: Placed[] = []
  let clusterEnd = -Infinity
  let columnEnds: number[] = []
  const closeCluster = () => {
    for (const item of cluster) item.columns = columnEnds.length
    cluster = []
    columnEnds = []
  }
  for (const item of items) {
    const top = Math.max(0, item.start.diff(dayStart, 'minutes').minutes)
    const bottom = Math.min(DAY_MINUTES, item.end.diff(dayStart, 'minutes').minutes)
    if (top >= clusterEnd) closeCluster()
    let column = columnEnds.findIndex((end) => end <= top)
    if (column === -1) {
      column = columnEnds.length
      columnEnds.push(bottom)
    } else {
      columnEnds[column] = bottom
    }
    clusterEnd = Math.max(top >= clusterEnd ? -Infinity : clusterEnd, bottom)
    const entry: Placed = {
      event: item.event,
      top,
      height: Math.max(bottom - top, SNAP_MINUTES),
      column,
      columns: 1,
      continuesBefore: item.start < dayStart,
      continuesAfter: item.end > dayEnd
    }
    cluster.push(entry)
    placed.push(entry)
  }
  closeCluster()
  return placed
}

/** All-day events (and timed ones are not: they sit in the grid) touching `day`. */
export function allDayOn (events: CalendarEvent[], day: DateTime, zone: string): CalendarEvent[] {
  const date = day.setZone(zone).toISODate() as string
  return events.filter((event) => event.isAllDay && event.startDate <= date && event.endDate > date)
}

export function snap (minutes: number, to: number = SNAP_MINUTES): number {
  return Math.round(minutes / to) * to
}

/** An event's dates moved by `minutes` (or whole days for all-day events), in its own form. */
export function moveBy (event: CalendarEvent, startMinutes: number, endMinutes: number): { startDate: string, endDate: string } {
  if (event.isAllDay) {
    const days = Math.round(startMinutes / DAY_MINUTES)
    const endDays = Math.round(endMinutes / DAY_MINUTES)
    return {
      startDate: DateTime.fromISO(event.startDate).plus({ days }).toISODate() as string,
      endDate: DateTime.fromISO(event.endDate).plus({ days: endDays }).toISODate() as string
    }
  }
  const start = DateTime.fromISO(event.startDate, { setZone: true })
  const end = DateTime.fromISO(event.endDate, { setZone: true })
  return {
    startDate: start.plus({ minutes: startMinutes }).toISO({ suppressMilliseconds: true }) as string,
    endDate: end.plus({ minutes: endMinutes }).toISO({ suppressMilliseconds: true }) as string
  }
}

/** "9:00 – 10:30" style label in the user's zone and locale. */
export function timeLabel (event: CalendarEvent, zone: string, locale?: string): string {
  if (event.isAllDay) return 'All day'
  const options = { hour: 'numeric', minute: '2-digit' } as const
  const start = eventStart(event, zone).setLocale(locale ?? 'en-GB').toLocaleString(options)
  const end = eventEnd(event, zone).setLocale(locale ?? 'en-GB').toLocaleString(options)
  return `${start} – ${end}`
}
