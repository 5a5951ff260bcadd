// Search as GET /api/events/search answers it (lib/events/search.ts on the server), for the
// signed-out calendar in browser storage and for the results list: words are folded (any case,
// accents dropped) and an event matches when it holds a word beginning with each query word, so
// "stand berl" finds "Stand-up in Berlin" and "tand" finds nothing. The words are the server's own
// (lib/events/search-words.ts), so both find the same events.
import { DateTime } from 'luxon'
import { compileSeries, firstOccurrence } from '../../../lib/events/recurrence.js'
import { eventInstant, occurrenceKey } from '../../../lib/events/time.js'
import type { CalendarEvent } from './events.js'
import { queryWordsOf, searchWordsOf } from '../../../lib/events/search-words.js'

export { SEARCH_QUERY_WORDS } from '../../../lib/events/search-words.js'
import type { LocalData } from './local-events.js'

/** The server's page size when the client names none. */
const SEARCH_PAGE_SIZE = 25

/** A query's distinct words, each the beginning of a word to find (none: nothing to search for). */
export const searchTermsOf = queryWordsOf

export function matchesSearch (event: Pick<CalendarEvent, 'title' | 'location' | 'description'>, terms: readonly string[]): boolean {
  if (terms.length === 0) return false
  const words = searchWordsOf(event)
  return terms.every((term) => words.some((word) => word.startsWith(term)))
}

export interface SearchPage {
  events: CalendarEvent[]
  next: string | null
}

/**
 * The signed-out calendar searched as the server searches an account: single events, a series as
 * one result at its start, a changed occurrence as one of its own, no cancelled ones; in start
 * order, a page at a time (the cursor is where the page ended in that order).
 */
export function searchLocal (data: LocalData, query: string, page: { limit?: number, cursor?: string | null } = {}): SearchPage {
  const terms = searchTermsOf(query)
  const limit = page.limit ?? SEARCH_PAGE_SIZE
  const found = data.entries
    .map((entry) => entry.event)
    .filter((event) => event.status === 'confirmed' && matchesSearch(event, terms))
    .map((event) => ({ event, startsAt: eventInstant(event.startDate, event.isAllDay, event.timeZone).getTime() }))
    .sort((a, b) => a.startsAt - b.startsAt || (a.event._id < b.event._id ? -1 : a.event._id > b.event._id ? 1 : 0))
  const from = page.cursor === undefined || page.cursor === null ? 0 : Math.max(0, Number.parseInt(page.cursor, 10) || 0)
  const events = found.slice(from, from + limit).map((item) => item.event)
  return { events, next: from + limit < found.length ? String(from + limit) : null }
}

/**
 * What choosing a result opens: the event itself, or for a series its first occurrence, as the
 * grid shows it on that day, so the dialog asks whether a change is for this event, the following
 * ones or all of them.
 */
export function eventToOpen (found: CalendarEvent): CalendarEvent {
  const rule = found.recurrence?.rule
  if (rule === undefined) return found
  let first: ReturnType<typeof firstOccurrence>
  try {
    first = firstOccurrence(compileSeries({ ...found, rule }))
  } catch {
    // A rule this client cannot expand: the series opens as it is stored.
    return found
  }
  if (first === null) return found
  const { recurrence: _rule, ...fields } = found
  return {
    ...fields,
    _id: `${found._id}_${occurrenceKey(first.startDate, found.isAllDay, found.timeZone)}`,
    recurrence: { eventId: found._id },
    originalStartDate: first.startDate,
    startDate: first.startDate,
    endDate: first.endDate
  }
}

export interface SearchDay {
  /** The day's date in the zone, YYYY-MM-DD. */
  day: string
  events: CalendarEvent[]
}

/** Results under the day each starts on in the zone, in the order they came (start order). */
export function groupByDay (events: readonly CalendarEvent[], zone: string): SearchDay[] {
  const days: SearchDay[] = []
  for (const event of events) {
    const start = event.isAllDay ? DateTime.fromISO(event.startDate, { zone }) : DateTime.fromISO(event.startDate, { setZone: true }).setZone(zone)
    const day = start.toISODate() as string
    const last = days.at(-1)
    if (last?.day === day) last.events.push(event)
    else days.push({ day, events: [event] })
  }
  return days
}
