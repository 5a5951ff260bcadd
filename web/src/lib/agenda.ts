// The agenda (Google's "schedule"): the events from the shown date onwards, listed by day. It reads
// the same range API as the grids, a page of AGENDA_DAYS at a time (each read well within the API's
// MAX_READ_DAYS), so "Show more" adds a read instead of reading everything again. A day lists every
// event touching it, so an event over several days is under each of them, as in Google's list.
import { DateTime } from 'luxon'
import { AGENDA_DAYS, MAX_READ_DAYS } from './grid.js'
import type { CalendarEvent } from './events.js'

export interface AgendaPage {
  /** The page's first day, in the user's zone. */
  first: DateTime
  days: number
  /** The [from, to) instants read for it. */
  from: Date
  to: Date
}

/** The first `pages` pages from `anchor`'s day, one after the other. */
export function agendaPages (anchor: DateTime, pages: number, days: number = AGENDA_DAYS): AgendaPage[] {
  if (days < 1 || days > MAX_READ_DAYS) throw new RangeError(`an agenda page is 1 to ${MAX_READ_DAYS} days, not ${days}`)
  const start = anchor.startOf('day')
  return Array.from({ length: Math.max(1, pages) }, (_, index) => {
    const first = start.plus({ days: index * days })
    return { first, days, from: first.toJSDate(), to: first.plus({ days }).toJSDate() }
  })
}

export interface AgendaDay {
  /** YYYY-MM-DD in the user's zone. */
  date: string
  day: DateTime
  today: boolean
  /** All-day events first, then by start (an event going on from the day before first of all). */
  events: CalendarEvent[]
}

interface Entry {
  event: CalendarEvent
  allDay: boolean
  /** When the event starts on this day: its start, or the day's midnight when it began before. */
  from: number
  end: number
}

/**
 * The days of `page` that have events, in order, each with the events touching it. `today` is
 * today's date in the user's zone (the list marks it). A timed event's dates carry their offset and
 * an all-day event's are dates, so neither is parsed with luxon: the agenda groups hundreds at once.
 */
export function agendaDays (events: readonly CalendarEvent[], page: Pick<AgendaPage, 'first' | 'days'>, zone: string, today: string): AgendaDay[] {
  const first = page.first.setZone(zone).startOf('day')
  const dates = Array.from({ length: page.days + 1 }, (_, index) => first.plus({ days: index }))
  const starts = dates.map((day) => day.toMillis())
  const isoDates = dates.map((day) => day.toISODate() as string)
  const byDay = new Map<number, Entry[]>()
  const add = (index: number, entry: Entry) => {
    const list = byDay.get(index)
    if (list === undefined) byDay.set(index, [entry])
    else list.push(entry)
  }
  for (const event of events) {
    if (event.isAllDay) {
      for (let index = 0; index < page.days; index++) {
        const date = isoDates[index] as string
        if (event.startDate <= date && event.endDate > date) add(index, { event, allDay: true, from: starts[index] as number, end: 0 })
      }
      continue
    }
    const start = Date.parse(event.startDate)
    const end = Date.parse(event.endDate)
    // An event of no length still belongs to the day it is at.
    const last = Math.max(end, start + 1)
    for (let index = 0; index < page.days; index++) {
      const dayStart = starts[index] as number
      if (start < (starts[index + 1] as number) && last > dayStart) add(index, { event, allDay: false, from: Math.max(start, dayStart), end })
    }
  }
  return [...byDay.entries()].sort(([a], [b]) => a - b).map(([index, entries]) => {
    const date = isoDates[index] as string
    entries.sort((a, b) => Number(b.allDay) - Number(a.allDay) || a.from - b.from || a.end - b.end || a.event.title.localeCompare(b.event.title))
    return { date, day: dates[index] as DateTime, today: date === today, events: entries.map((entry) => entry.event) }
  })
}
