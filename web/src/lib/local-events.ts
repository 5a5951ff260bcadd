// Signed out, the calendar lives in browser storage. Seeded demo events are marked only here
// (specification, "Event record"): the marker sits beside the event, never inside it, so no
// request can carry it. After any sign-in the user-created local events go to the account, demo
// events skipped even when edited (specification, "Local events at sign-in").
import { DateTime } from 'luxon'
import { readJson, type KeyValueStore } from './storage.js'
import { newEventId, seriesIdOf, type CalendarEvent, type EventChange } from './events.js'

const LOCAL_EVENTS_KEY = 'localEvents'

export interface LocalEntry {
  event: CalendarEvent
  /** Seeded by the client; only ever stored here. */
  demo?: true
}

export interface LocalData {
  version: 1
  /** Demo events are seeded once per browser, even if the user deletes them all. */
  seeded: boolean
  entries: LocalEntry[]
}

export function loadLocalData (store: KeyValueStore): LocalData {
  const data = readJson<LocalData>(store, LOCAL_EVENTS_KEY)
  if (data === null || data.version !== 1 || !Array.isArray(data.entries)) return { version: 1, seeded: false, entries: [] }
  return data
}

export function saveLocalData (store: KeyValueStore, data: LocalData): void {
  store.setItem(LOCAL_EVENTS_KEY, JSON.stringify(data))
}

/** A few events around today so a first visit shows a calendar that is in use. */
export function demoEvents (today: DateTime, timeZone: string, id: () => string = () => newEventId()): CalendarEvent[] {
  const at = (days: number, hour: number, minute = 0) =>
    today.setZone(timeZone).startOf('day').plus({ days }).set({ hour, minute }).toISO({ suppressMilliseconds: true }) as string
  const date = (days: number) => today.setZone(timeZone).startOf('day').plus({ days }).toISODate() as string
  const base = { timeZone, status: 'confirmed' as const, origin: 'compass' as const, priority: 'unassigned' as const }
  return [
    { ...base, _id: id(), title: 'Morning planning', startDate: at(0, 9), endDate: at(0, 9, 30), isAllDay: false, recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR'] } },
    { ...base, _id: id(), title: 'Lunch with Sam', startDate: at(0, 12, 30), endDate: at(0, 13, 30), isAllDay: false, location: 'Corner café' },
    { ...base, _id: id(), title: 'Deep work', startDate: at(0, 14), endDate: at(0, 16), isAllDay: false, priority: 'work' },
    { ...base, _id: id(), title: 'Gym', startDate: at(1, 18), endDate: at(1, 19), isAllDay: false, priority: 'self' },
    { ...base, _id: id(), title: 'Conference', startDate: date(2), endDate: date(4), isAllDay: true }
  ]
}

export function withDemoSeed (data: LocalData, events: CalendarEvent[]): LocalData {
  if (data.seeded) return data
  return { version: 1, seeded: true, entries: [...data.entries, ...events.map((event) => ({ event, demo: true as const }))] }
}

/**
 * The events to send after a sign-in, in two batches: single events and series first, then the
 * occurrences (edited or cancelled) of those series, which the account can take only once their
 * series is there. Demo events are skipped, edited or not, and so are occurrences of a demo series.
 */
export function carrySelection (data: LocalData): EventChange[][] {
  const demoIds = new Set(data.entries.filter((entry) => entry.demo === true).map((entry) => entry.event._id))
  const own = data.entries.filter((entry) => entry.demo !== true).map((entry) => entry.event)
  const keptIds = new Set(own.map((event) => event._id))
  const first: EventChange[] = []
  const second: EventChange[] = []
  for (const event of own) {
    const { user: _user, lastUpdated: _lastUpdated, ...change } = event
    const seriesId = event.recurrence?.eventId === undefined ? null : seriesIdOf(event)
    if (seriesId === null) {
      first.push(change)
    } else if (!demoIds.has(seriesId) && keptIds.has(seriesId)) {
      second.push(change)
    }
  }
  return [first, second].filter((batch) => batch.length > 0)
}

/** What stays in the browser once the user's events are in the account: the demo events. */
export function afterCarry (data: LocalData): LocalData {
  return { ...data, entries: data.entries.filter((entry) => entry.demo === true) }
}
