// The geometry of the day, 4-day, week and month grids, in the user's time zone: which days a view shows,
// where a timed event sits in its day column (minutes from midnight, side by side when they
// overlap, the ones beyond a readable number of columns gathered as "+N more"), which events touch a
// day, the `?date=` of the address read or corrected, and the snapping of drags.
import { DateTime } from 'luxon'
import type { CalendarEvent } from './events.js'

export type View = 'day' | '4days' | 'week' | 'month' | 'agenda'
/** The days the agenda reads at a time, and shows first: a page of "Show more". */
export const AGENDA_DAYS = 30
/** The events API's widest read. */
export const MAX_READ_DAYS = 400
/** Days a view shows from its anchor, for the views that start on the shown date itself. */
const FROM_ANCHOR: Partial<Record<View, number>> = { day: 1, '4days': 4, agenda: AGENDA_DAYS }
export const SNAP_MINUTES = 15
export const DAY_MINUTES = 24 * 60

/** The first day (Monday 1 ... Sunday 7) of the week holding `day`, at midnight. */
function startOfWeek (day: DateTime, firstDay: number): DateTime {
  return day.startOf('day').minus({ days: (day.weekday - firstDay + 7) % 7 })
}

/**
 * The days a view shows around `anchor` (a week starts on `firstDay`, Monday 1 unless the person
 * chose Sunday 7 or Saturday 6; a month shows its whole weeks; the day, the 4-day view and the
 * agenda's first page start on the shown date).
 */
export function viewDays (anchor: DateTime, view: View, firstDay = 1): DateTime[] {
  const fromAnchor = FROM_ANCHOR[view]
  if (fromAnchor !== undefined) return Array.from({ length: fromAnchor }, (_, index) => anchor.startOf('day').plus({ days: index }))
  if (view === 'month') {
    const first = startOfWeek(anchor.startOf('month'), firstDay)
    const last = startOfWeek(anchor.endOf('month'), firstDay)
    const weeks = Math.round(last.diff(first, 'weeks').weeks) + 1
    return Array.from({ length: weeks * 7 }, (_, index) => first.plus({ days: index }))
  }
  const first = startOfWeek(anchor, firstDay)
  return Array.from({ length: 7 }, (_, index) => first.plus({ days: index }))
}

/** The [from, to) instants a view reads. */
export function viewRange (anchor: DateTime, view: View, firstDay = 1): { from: Date, to: Date } {
  const days = viewDays(anchor, view, firstDay)
  const first = days[0] as DateTime
  const last = days[days.length - 1] as DateTime
  return { from: first.toJSDate(), to: last.plus({ days: 1 }).toJSDate() }
}

/** The next or previous day, week or month; the 4-day view and the agenda move by the days they show. */
export function step (anchor: DateTime, view: View, direction: 1 | -1): DateTime {
  const fromAnchor = FROM_ANCHOR[view]
  if (fromAnchor !== undefined) return anchor.plus({ days: direction * fromAnchor })
  return anchor.plus(view === 'week' ? { weeks: direction } : { months: direction })
}

/** What the previous and next buttons move by, in their names ("Next 4 days"). */
export function stepUnit (view: View): string {
  return view === '4days' ? '4 days' : view === 'agenda' ? `${AGENDA_DAYS} days` : view
}

/** The toolbar's title of what is shown: a day, a span of days, or a month. */
export function viewTitle (anchor: DateTime, view: View, firstDay = 1): string {
  if (view === 'day') return anchor.toLocaleString(DateTime.DATE_HUGE)
  if (view === 'month') return anchor.toLocaleString({ month: 'long', year: 'numeric' })
  if (view === 'agenda') return `From ${anchor.toLocaleString(DateTime.DATE_MED)}`
  const days = viewDays(anchor, view, firstDay)
  return `${days[0]?.toLocaleString({ day: 'numeric', month: 'short' })} – ${days[days.length - 1]?.toLocaleString(DateTime.DATE_MED)}`
}

/**
 * The hour a new event takes when the view shows `anchor`: on today the next whole hour, unless that
 * is tomorrow already (late in the evening the event would land on a day the person does not see, so
 * it takes the hour under way); on any other day 09:00.
 */
export function newEventStart (anchor: DateTime, now: DateTime): DateTime {
  if (anchor.toISODate() !== now.toISODate()) return anchor.startOf('day').set({ hour: 9 })
  const nextHour = now.plus({ hours: 1 }).startOf('hour')
  return nextHour.toISODate() === now.toISODate() ? nextHour : now.startOf('hour')
}

export type DateParam =
  | { kind: 'absent' }
  | { kind: 'valid', date: DateTime }
  /** A calendar date that does not exist (2027-02-30): the last day of that month instead. */
  | { kind: 'corrected', date: DateTime, written: string }
  /** Not a date at all: today instead. */
  | { kind: 'invalid', written: string }

/** The `?date=` of the address, read in `zone`; a day past its month's end is brought back into it. */
export function readDateParam (value: string | null, zone: string): DateParam {
  if (value === null) return { kind: 'absent' }
  const parsed = DateTime.fromISO(value, { zone })
  if (parsed.isValid && /^\d{4}-\d{2}-\d{2}$/.test(value)) return { kind: 'valid', date: parsed.startOf('day') }
  const parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value)
  if (parts !== null) {
    const month = DateTime.fromObject({ year: Number(parts[1]), month: Number(parts[2]), day: 1 }, { zone })
    const day = Number(parts[3])
    if (month.isValid && day >= 1) return { kind: 'corrected', date: month.set({ day: Math.min(day, month.daysInMonth as number) }), written: value }
  }
  return { kind: 'invalid', written: value }
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

interface Timed {
  event: CalendarEvent
  start: number
  end: number
}

/** Each timed event's instants, read once. A timed event's dates carry their offset, so the instant needs no zone (nor luxon, which costs more than the layout itself). */
function timedOf (events: CalendarEvent[], _zone: string): Timed[] {
  return events
    .filter((event) => !event.isAllDay)
    .map((event) => ({ event, start: Date.parse(event.startDate), end: Date.parse(event.endDate) }))
    .sort((a, b) => a.start - b.start || b.end - a.end)
}

function layoutTimed (items: Timed[], day: DateTime, zone: string): Placed[] {
  const dayStart = day.setZone(zone).startOf('day')
  const from = dayStart.toMillis()
  const to = dayStart.plus({ days: 1 }).toMillis()
  // A day with a daylight-saving change is 23 or 25 hours long: minutes count from its midnight.
  const minutesOf = (millis: number) => (millis - from) / 60_000
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
    if (item.start >= to || item.end <= from) continue
    const top = Math.max(0, minutesOf(item.start))
    const bottom = Math.min(DAY_MINUTES, minutesOf(item.end))
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
      continuesBefore: item.start < from,
      continuesAfter: item.end > to
    }
    cluster.push(entry)
    placed.push(entry)
  }
  closeCluster()
  return placed
}

/** Timed events of one day, placed side by side where they overlap (greedy columns per cluster). */
export function layoutDay (events: CalendarEvent[], day: DateTime, zone: string): Placed[] {
  return layoutTimed(timedOf(events, zone), day, zone)
}

/** The same for each of `days`, reading every event's dates once. */
export function layoutDays (events: CalendarEvent[], days: DateTime[], zone: string): Placed[][] {
  const items = timedOf(events, zone)
  return days.map((day) => layoutTimed(items, day, zone))
}

export interface MoreBand {
  /** Minutes from the day's midnight of the first hidden event, and the span the band covers. */
  top: number
  height: number
  events: CalendarEvent[]
}

/**
 * At most `maxColumns` side by side: in a cluster wider than that, the events of the last columns
 * are gathered into "+N more" bands (one per hour they start in), drawn in the last column.
 */
export function limitColumns (placed: Placed[], maxColumns: number): { shown: Placed[], more: MoreBand[] } {
  const shown: Placed[] = []
  const bands = new Map<number, MoreBand>()
  for (const item of placed) {
    if (item.columns <= maxColumns) {
      shown.push(item)
    } else if (item.column < maxColumns - 1) {
      shown.push({ ...item, columns: maxColumns })
    } else {
      const hour = Math.floor(item.top / 60)
      const band = bands.get(hour) ?? { top: item.top, height: 0, events: [] }
      band.top = Math.min(band.top, item.top)
      band.events.push(item.event)
      bands.set(hour, band)
    }
  }
  const more = [...bands.values()].sort((a, b) => a.top - b.top)
  // Each band reaches the next one (or an hour past its start), so bands never overlap.
  more.forEach((band, index) => {
    const next = more[index + 1]?.top ?? DAY_MINUTES
    band.height = Math.max(SNAP_MINUTES, Math.min(next, band.top + 60) - band.top)
  })
  return { shown, more }
}

/** For each of `days`, every event touching it, all-day ones first, then by start: what a month cell lists. */
export function eventsByDay (events: CalendarEvent[], days: DateTime[], zone: string): CalendarEvent[][] {
  const timed = timedOf(events, zone)
  return days.map((day) => {
    const from = day.setZone(zone).startOf('day')
    const to = from.plus({ days: 1 }).toMillis()
    const allDay = allDayOn(events, from, zone)
    return [...allDay, ...timed.filter((item) => item.start < to && item.end > from.toMillis()).map((item) => item.event)]
  })
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

const timeFormats = new Map<string, Intl.DateTimeFormat>()

/**
 * "9:00 – 10:30" style label in the user's zone and locale. The formatter is made once per zone
 * and locale, and a timed event's dates carry their offset: the agenda labels hundreds of events
 * at once, where parsing each date with luxon cost more than drawing them.
 */
export function timeLabel (event: CalendarEvent, zone: string, locale?: string, hour12?: boolean): string {
  if (event.isAllDay) return 'All day'
  const key = `${zone} ${locale ?? 'en-GB'} ${String(hour12)}`
  let format = timeFormats.get(key)
  if (format === undefined) {
    // The hour as the language writes it on that clock ("9:00" in en-GB, "09:00" in en-US's 24-hour one).
    format = new Intl.DateTimeFormat(locale ?? 'en-GB', { hour: 'numeric', minute: '2-digit', timeZone: zone, ...(hour12 === undefined ? {} : { hourCycle: hour12 ? 'h12' : 'h23' }) })
    timeFormats.set(key, format)
  }
  return `${format.format(Date.parse(event.startDate))} – ${format.format(Date.parse(event.endDate))}`
}
