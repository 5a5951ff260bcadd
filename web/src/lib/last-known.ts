// The account's events as the server last gave them, per range read, kept in browser storage so
// that a reload without a connection still shows the calendar (marked as last seen). One entry per
// account (`lastEvents:<userId>`), read only for that account and removed at its sign-out; bounded
// to the latest MAX_RANGES ranges and MAX_CHARS characters, the oldest going first.
import { DateTime } from 'luxon'
import { readJson, type KeyValueStore } from './storage.js'
import type { CalendarEvent } from './events.js'

const LAST_KNOWN_PREFIX = 'lastEvents:'
export const MAX_RANGES = 8
/** Characters of JSON (local storage holds about 5 million per site, shared with everything else). */
const MAX_CHARS = 750_000

interface KeptRange {
  /** The range read, as ISO instants (the query's own bounds). */
  from: string
  to: string
  /** When the server gave it (milliseconds since the epoch). */
  readAt: number
  events: CalendarEvent[]
}

export interface LastKnown {
  version: 1
  /** Newest first. */
  ranges: KeptRange[]
}

export const EMPTY_LAST_KNOWN: LastKnown = { version: 1, ranges: [] }

export function lastKnownKey (userId: string): string {
  return `${LAST_KNOWN_PREFIX}${userId}`
}

export function loadLastKnown (store: KeyValueStore, userId: string): LastKnown {
  const data = readJson<LastKnown>(store, lastKnownKey(userId))
  if (data === null || data.version !== 1 || !Array.isArray(data.ranges)) return EMPTY_LAST_KNOWN
  return data
}

/** False when the browser would not take it (full or refused storage): then nothing is kept for the account. */
export function saveLastKnown (store: KeyValueStore, userId: string, data: LastKnown): boolean {
  try {
    if (data.ranges.length === 0) store.removeItem(lastKnownKey(userId))
    else store.setItem(lastKnownKey(userId), JSON.stringify(data))
    return true
  } catch {
    try {
      store.removeItem(lastKnownKey(userId))
    } catch {
      // Nothing more to do: the copy is only a convenience.
    }
    return false
  }
}

export function forgetLastKnown (store: KeyValueStore, userId: string): void {
  store.removeItem(lastKnownKey(userId))
}

/** The range just read goes first (replacing an older read of the same range); the oldest go past the bounds. */
export function keepRange (data: LastKnown, range: { from: Date, to: Date }, events: CalendarEvent[], readAt: number, limits = { ranges: MAX_RANGES, chars: MAX_CHARS }): LastKnown {
  const from = range.from.toISOString()
  const to = range.to.toISOString()
  const ranges = [{ from, to, readAt, events }, ...data.ranges.filter((kept) => kept.from !== from || kept.to !== to)].slice(0, limits.ranges)
  const kept: KeptRange[] = []
  let chars = 0
  for (const entry of ranges) {
    chars += JSON.stringify(entry).length + 1
    if (chars > limits.chars) break
    kept.push(entry)
  }
  return { version: 1, ranges: kept }
}

function overlaps (event: CalendarEvent, from: Date, to: Date, zone: string): boolean {
  if (event.isAllDay) {
    // All-day dates are days of the user's zone, as the range's bounds are midnights there.
    const first = DateTime.fromJSDate(from, { zone }).toISODate() as string
    const last = DateTime.fromJSDate(to, { zone }).toISODate() as string
    return event.startDate < last && event.endDate > first
  }
  return Date.parse(event.startDate) < to.getTime() && Date.parse(event.endDate) > from.getTime()
}

/**
 * The events of [from, to) as last read: the newest kept range that holds it (that range's own
 * read, or a week seen for one of its days, cut to the day). Null when none was kept.
 */
export function lastKnownFor (data: LastKnown, range: { from: Date, to: Date }, zone: string): { events: CalendarEvent[], readAt: number } | null {
  const from = range.from.getTime()
  const to = range.to.getTime()
  const holding = data.ranges.find((kept) => Date.parse(kept.from) <= from && Date.parse(kept.to) >= to)
  if (holding === undefined) return null
  const exact = Date.parse(holding.from) === from && Date.parse(holding.to) === to
  return { events: exact ? holding.events : holding.events.filter((event) => overlaps(event, range.from, range.to, zone)), readAt: holding.readAt }
}
