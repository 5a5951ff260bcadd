// The signed-out calendar: the same operations as the events API (range read, create, PUT by id
// or occurrence id, DELETE with applyTo), applied to the local data with the backend's own
// recurrence rules (lib/events), so an event behaves the same before and after it is carried
// into an account.
import { compileSeries, expandSeries, firstOccurrence, truncateRule } from '../../../lib/events/recurrence.js'
import { eventInstant, occurrenceKey } from '../../../lib/events/time.js'
import { newEventId, parseOccurrenceId, type ApplyTo, type CalendarEvent, type EventChange } from './events.js'
import type { LocalData, LocalEntry } from './local-events.js'

const OCCURRENCE_LIMIT = 2000

class LocalEventError extends Error {
  constructor (readonly code: 'EVENT_NOT_FOUND' | 'EVENT_INVALID', message: string) {
    super(message)
  }
}

function complete (change: EventChange, id: string): CalendarEvent {
  const { user: _user, lastUpdated: _lastUpdated, _id: _ignored, ...fields } = change
  return {
    title: '',
    isAllDay: false,
    timeZone: 'UTC',
    status: 'confirmed',
    origin: 'compass',
    priority: 'unassigned',
    ...fields,
    _id: id
  }
}

function isSeries (event: CalendarEvent): boolean {
  return event.recurrence?.rule !== undefined
}

function startOf (event: CalendarEvent): number {
  return eventInstant(event.startDate, event.isAllDay, event.timeZone).getTime()
}

function endOf (event: CalendarEvent): number {
  return eventInstant(event.endDate, event.isAllDay, event.timeZone).getTime()
}

function compiled (series: CalendarEvent) {
  return compileSeries({ ...series, rule: series.recurrence?.rule ?? [] })
}

function checked (event: CalendarEvent): CalendarEvent {
  if (endOf(event) <= startOf(event)) throw new LocalEventError('EVENT_INVALID', 'The end must be after the start')
  if (isSeries(event)) {
    try {
      compiled(event)
    } catch (error) {
      throw new LocalEventError('EVENT_INVALID', (error as Error).message)
    }
  }
  return event
}

function keyOf (edit: CalendarEvent, series: CalendarEvent): string | null {
  return edit.originalStartDate === undefined ? null : occurrenceKey(edit.originalStartDate, series.isAllDay, series.timeZone)
}

/** Every event and occurrence overlapping [from, to), in start order, like GET /api/event. */
export function localRange (data: LocalData, from: Date, to: Date): CalendarEvent[] {
  const all = data.entries.map((entry) => entry.event)
  const result: CalendarEvent[] = []
  for (const event of all) {
    if (isSeries(event) || event.status !== 'confirmed') continue
    if (startOf(event) < to.getTime() && endOf(event) > from.getTime()) result.push(event)
  }
  for (const series of all.filter(isSeries)) {
    const edited = new Set(all.filter((event) => event.recurrence?.eventId === series._id).map((edit) => keyOf(edit, series)))
    for (const occurrence of expandSeries(compiled(series), from, to, OCCURRENCE_LIMIT)) {
      const key = occurrenceKey(occurrence.startDate, series.isAllDay, series.timeZone)
      if (edited.has(key)) continue
      const { recurrence: _rule, ...fields } = series
      result.push({
        ...fields,
        _id: `${series._id}_${key}`,
        recurrence: { eventId: series._id },
        originalStartDate: occurrence.startDate,
        startDate: occurrence.startDate,
        endDate: occurrence.endDate
      })
    }
  }
  return result.sort((a, b) => startOf(a) - startOf(b) || endOf(a) - endOf(b) || (a._id < b._id ? -1 : 1))
}

function entryIndex (data: LocalData, id: string): number {
  return data.entries.findIndex((entry) => entry.event._id === id)
}

interface Resolved {
  series: LocalEntry | null
  /** The stored event (single, series, or an occurrence's stored edit). */
  stored: LocalEntry | null
  /** For an occurrence: its original start. */
  originalStartDate?: string
}

function resolve (data: LocalData, id: string): Resolved {
  const occurrence = parseOccurrenceId(id)
  if (occurrence === null) {
    const stored = data.entries[entryIndex(data, id)] ?? null
    if (stored === null) throw new LocalEventError('EVENT_NOT_FOUND', 'Event not found')
    const seriesId = stored.event.recurrence?.eventId
    const series = seriesId === undefined ? null : data.entries[entryIndex(data, seriesId)] ?? null
    return { series, stored, ...(stored.event.originalStartDate !== undefined ? { originalStartDate: stored.event.originalStartDate } : {}) }
  }
  const series = data.entries[entryIndex(data, occurrence.seriesId)]
  if (series === undefined || !isSeries(series.event)) throw new LocalEventError('EVENT_NOT_FOUND', 'Event not found')
  const stored = data.entries.find((entry) => entry.event.recurrence?.eventId === series.event._id && keyOf(entry.event, series.event) === occurrence.key) ?? null
  const start = expandSeries(compiled(series.event), keyStart(occurrence.key, series.event), new Date(keyStart(occurrence.key, series.event).getTime() + 1), 1)[0]
  if (start === undefined) throw new LocalEventError('EVENT_NOT_FOUND', 'Event not found')
  return { series, stored, originalStartDate: start.startDate }
}

function keyStart (key: string, series: CalendarEvent): Date {
  if (key.length === 8) return eventInstant(`${key.slice(0, 4)}-${key.slice(4, 6)}-${key.slice(6, 8)}`, true, series.timeZone)
  return new Date(`${key.slice(0, 4)}-${key.slice(4, 6)}-${key.slice(6, 8)}T${key.slice(9, 11)}:${key.slice(11, 13)}:${key.slice(13, 15)}Z`)
}

function timingOf (event: CalendarEvent): string {
  return JSON.stringify([event.startDate, event.endDate, event.isAllDay, event.timeZone, event.recurrence?.rule])
}

/** POST: a new event, or a whole replacement when the id exists. */
export function localCreate (data: LocalData, change: EventChange, now: number = Date.now(), options: { demo?: boolean } = {}): LocalData {
  const id = change._id?.replace(/^optimistic-/, '') ?? newEventId(now)
  const event = checked(complete(change, id))
  const index = entryIndex(data, id)
  const entries = [...data.entries]
  if (index >= 0) entries[index] = { ...entries[index], event } as LocalEntry
  else entries.push({ event, ...(options.demo === true ? { demo: true as const } : {}) })
  return { ...data, entries }
}

/** PUT /api/event/:id, including `<seriesId>_<key>`, which stores an edit of that occurrence. */
export function localReplace (data: LocalData, id: string, change: EventChange, now: number = Date.now()): LocalData {
  const target = resolve(data, id)
  let entries = [...data.entries]
  if (target.series !== null && target.originalStartDate !== undefined) {
    const editId = target.stored?.event._id ?? newEventId(now)
    const event = checked({
      ...complete(change, editId),
      recurrence: { eventId: target.series.event._id },
      originalStartDate: target.stored?.event.originalStartDate ?? target.originalStartDate
    })
    const entry: LocalEntry = { event, ...(target.series.demo === true ? { demo: true as const } : {}) }
    if (target.stored === null) entries.push(entry)
    else entries[entryIndex(data, editId)] = entry
    return { ...data, entries }
  }
  const stored = target.stored as LocalEntry
  const event = checked(complete(change, stored.event._id))
  entries[entryIndex(data, stored.event._id)] = { ...stored, event }
  // A series whose timing changed (or that stopped repeating) drops its edited occurrences, as the backend does.
  if (isSeries(stored.event) && timingOf(stored.event) !== timingOf(event)) {
    entries = entries.filter((entry) => entry.event.recurrence?.eventId !== stored.event._id)
  }
  return { ...data, entries }
}

/** DELETE /api/event/:id?applyTo=...: this occurrence, this and the following ones, or all. */
export function localDelete (data: LocalData, id: string, applyTo: ApplyTo = 'this', now: number = Date.now()): LocalData {
  const target = resolve(data, id)
  if (target.series === null) {
    return { ...data, entries: data.entries.filter((entry) => entry.event._id !== target.stored?.event._id) }
  }
  const series = target.series.event
  const withoutSeries = () => data.entries.filter((entry) => entry.event._id !== series._id && entry.event.recurrence?.eventId !== series._id)
  if (applyTo === 'all') return { ...data, entries: withoutSeries() }
  const originalStartDate = target.originalStartDate as string
  if (applyTo === 'this') {
    if (target.stored !== null) {
      const entries = [...data.entries]
      entries[entryIndex(data, target.stored.event._id)] = { ...target.stored, event: { ...target.stored.event, status: 'cancelled' } }
      return { ...data, entries }
    }
    const tombstone: CalendarEvent = {
      ...complete({ ...series, recurrence: { eventId: series._id }, originalStartDate, startDate: originalStartDate, endDate: originalStartDate }, newEventId(now)),
      status: 'cancelled'
    }
    return { ...data, entries: [...data.entries, { event: tombstone, ...(target.series.demo === true ? { demo: true as const } : {}) }] }
  }
  const cut = eventInstant(originalStartDate, series.isAllDay, series.timeZone)
  const compiledSeries = compiled(series)
  const first = firstOccurrence(compiledSeries)
  if (first === null || cut <= first.start) return { ...data, entries: withoutSeries() }
  const truncated: CalendarEvent = { ...series, recurrence: { rule: truncateRule(compiledSeries, cut) } }
  const entries = data.entries
    .filter((entry) => {
      const edit = entry.event
      if (edit.recurrence?.eventId !== series._id || edit.originalStartDate === undefined) return true
      return eventInstant(edit.originalStartDate, series.isAllDay, series.timeZone) < cut
    })
    .map((entry) => entry.event._id === series._id ? { ...entry, event: truncated } : entry)
  return { ...data, entries }
}

/** GET /api/event/:id for a stored event (the series base, for "all" edits). */
export function localGet (data: LocalData, id: string): CalendarEvent {
  const index = entryIndex(data, id)
  const entry = data.entries[index]
  if (entry === undefined || entry.event.status === 'cancelled') throw new LocalEventError('EVENT_NOT_FOUND', 'Event not found')
  return entry.event
}

/** Whether the local event is a demo event (or derived from one). */
export function isLocalDemo (data: LocalData, id: string): boolean {
  const seriesId = parseOccurrenceId(id)?.seriesId ?? id
  return data.entries.some((entry) => entry.event._id === seriesId && entry.demo === true)
}
