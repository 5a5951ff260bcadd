// Both sides of a synced calendar as the person sees them: every occurrence in a window as
// `start|end|title` (instants in UTC), so a test can ask whether the two sides converged.
import type { FastifyInstance } from 'fastify'
import { compileSeries, expandSeries } from '../../lib/events/recurrence.js'
import { eventInstant } from '../../lib/events/time.js'
import ICAL from 'ical.js'
import { waitFor } from '../processes.js'

export interface Window { from: string, to: string }

interface Listed { title: string, startDate: string, endDate: string, isAllDay?: boolean, timeZone?: string }

function line (start: Date, end: Date, title: string): string {
  return `${start.toISOString()}|${end.toISOString()}|${title}`
}

function sorted (lines: string[]): string[] {
  return [...lines].sort()
}

/** The backend's range read over the window. */
export async function ourOccurrences (app: FastifyInstance, headers: Record<string, string>, window: Window): Promise<string[]> {
  const answer = await app.inject({ method: 'GET', url: `/api/event?start=${window.from}&end=${window.to}`, headers })
  if (answer.statusCode !== 200) throw new Error(`range read answered ${answer.statusCode}`)
  return sorted(answer.json<Listed[]>().map((event) => {
    const zone = event.timeZone ?? 'UTC'
    const isAllDay = event.isAllDay === true
    return line(eventInstant(event.startDate, isAllDay, zone), eventInstant(event.endDate, isAllDay, zone), event.title)
  }))
}

/** A provider event reduced to what expansion needs. */
export interface ProviderItem {
  id: string
  status: 'confirmed' | 'cancelled'
  title: string
  start: Date
  end: Date
  /** On a master: its zone, wall-clock start and end, and RRULE/EXDATE lines. */
  series?: { startDate: string, endDate: string, timeZone: string, rule: string[] }
  /** On an exception: its master's id and the original start. */
  seriesId?: string
  originalStart?: Date
}

/**
 * A provider's events expanded over the window as the provider shows them: every occurrence of
 * each master, an exception replacing (or, cancelled, removing) the occurrence at its original start.
 * The stand-ins expand no series themselves (Google's singleEvents is not served), so the expansion
 * is the backend's rule set, which its own tests hold to RFC 5545.
 */
export function providerOccurrences (items: ProviderItem[], window: Window): string[] {
  const from = new Date(window.from)
  const to = new Date(window.to)
  const exceptions = new Map<string, ProviderItem>()
  for (const item of items) {
    if (item.seriesId !== undefined && item.originalStart !== undefined) exceptions.set(`${item.seriesId}|${item.originalStart.getTime()}`, item)
  }
  const lines: string[] = []
  for (const item of items) {
    if (item.status === 'cancelled' || item.seriesId !== undefined) continue
    if (item.series === undefined) {
      if (item.start < to && item.end > from) lines.push(line(item.start, item.end, item.title))
      continue
    }
    const compiled = compileSeries({ ...item.series, isAllDay: false })
    for (const occurrence of expandSeries(compiled, new Date(from.getTime() - 86_400_000 * 7), to, 2000)) {
      const exception = exceptions.get(`${item.id}|${occurrence.start.getTime()}`)
      if (exception !== undefined) continue
      if (occurrence.start < to && occurrence.end > from) lines.push(line(occurrence.start, occurrence.end, item.title))
    }
  }
  for (const exception of exceptions.values()) {
    if (exception.status === 'cancelled') continue
    if (exception.start < to && exception.end > from) lines.push(line(exception.start, exception.end, exception.title))
  }
  return sorted(lines)
}

interface GoogleTime { date?: string, dateTime?: string, timeZone?: string }

/** Google's stored events (the stand-in's control surface) as provider items; timed events only. */
export function googleItems (stored: Array<Record<string, unknown>>): ProviderItem[] {
  return stored.flatMap((event): ProviderItem[] => {
    const start = event['start'] as GoogleTime | undefined
    const end = event['end'] as GoogleTime | undefined
    const original = event['originalStartTime'] as GoogleTime | undefined
    const recurrence = event['recurrence'] as string[] | undefined
    const item: ProviderItem = {
      id: String(event['id']),
      status: event['status'] === 'cancelled' ? 'cancelled' : 'confirmed',
      title: String(event['summary'] ?? ''),
      start: new Date(start?.dateTime ?? start?.date ?? 0),
      end: new Date(end?.dateTime ?? end?.date ?? 0)
    }
    if (recurrence !== undefined && start?.dateTime !== undefined && end?.dateTime !== undefined) {
      item.series = { startDate: start.dateTime, endDate: end.dateTime, timeZone: start.timeZone ?? 'UTC', rule: recurrence }
    }
    if (typeof event['recurringEventId'] === 'string') {
      item.seriesId = event['recurringEventId']
      item.originalStart = new Date(original?.dateTime ?? original?.date ?? 0)
    }
    return [item]
  })
}

interface GraphInstance { subject?: string, isCancelled?: boolean, start?: { dateTime: string, timeZone?: string }, end?: { dateTime: string, timeZone?: string } }

/** What Microsoft shows over the window: Graph's own calendar view (series expanded by Graph), read as any client reads it. */
export async function microsoftOccurrences (graph: { get: <T>(pathOrLink: string) => Promise<T> }, window: Window): Promise<string[]> {
  const lines: string[] = []
  let next: string | undefined = `/me/calendarView?${new URLSearchParams({ startDateTime: window.from, endDateTime: window.to }).toString()}`
  while (next !== undefined) {
    const page: { value: GraphInstance[], '@odata.nextLink'?: string } = await graph.get(next)
    for (const instance of page.value) {
      if (instance.isCancelled === true || instance.start === undefined || instance.end === undefined) continue
      // Graph answers in UTC unless asked otherwise; its date-times carry no offset.
      const instant = (value: string) => new Date(/(Z|[+-]\d{2}:\d{2})$/.test(value) ? value : `${value}Z`)
      lines.push(line(instant(instance.start.dateTime), instant(instance.end.dateTime), instance.subject ?? ''))
    }
    next = page['@odata.nextLink']
  }
  return sorted(lines)
}

/**
 * What a CalDAV server shows over the window: the collection's events (a GET of the collection, as
 * Radicale answers it: every resource in one VCALENDAR) expanded by ical.js, another client's
 * library, RECURRENCE-ID overrides and EXDATEs included. Date-times in UTC or with a VTIMEZONE.
 */
export function caldavOccurrences (collection: string, window: Window): string[] {
  const from = ICAL.Time.fromJSDate(new Date(window.from), true)
  const to = new Date(window.to)
  const calendar = new ICAL.Component(ICAL.parse(collection))
  const byUid = new Map<string, ICAL.Component[]>()
  for (const vevent of calendar.getAllSubcomponents('vevent')) {
    const uid = String(vevent.getFirstPropertyValue('uid'))
    byUid.set(uid, [...byUid.get(uid) ?? [], vevent])
  }
  const lines: string[] = []
  for (const components of byUid.values()) {
    const master = components.find((component) => !component.hasProperty('recurrence-id'))
    if (master === undefined) continue
    const event = new ICAL.Event(master)
    for (const component of components) if (component !== master) event.relateException(component)
    if (!event.isRecurring()) {
      if (event.startDate.toJSDate() < to && event.endDate.toJSDate() > new Date(window.from)) lines.push(line(event.startDate.toJSDate(), event.endDate.toJSDate(), event.summary ?? ''))
      continue
    }
    const iterator = event.iterator()
    for (let next = iterator.next(); next !== null && next !== undefined && next.toJSDate() < to; next = iterator.next()) {
      const details = event.getOccurrenceDetails(next)
      const start = details.startDate.toJSDate()
      const end = details.endDate.toJSDate()
      if (start < to && end > from.toJSDate()) lines.push(line(start, end, details.item.summary ?? ''))
    }
  }
  return sorted(lines)
}

/**
 * Waits until both sides list the same occurrences (each poll may first nudge sync along); when they
 * do not within 20 s, fails with both lists side by side.
 */
export async function waitConverged (
  ours: () => Promise<string[]>, theirs: () => string[] | Promise<string[]>, what: string, beforeEachPoll: () => Promise<unknown> = async () => {},
  explain: () => Promise<string> = async () => ''
): Promise<void> {
  const same = async () => {
    await beforeEachPoll()
    return JSON.stringify(await ours()) === JSON.stringify(await theirs())
  }
  if (await waitFor(same, 20_000)) return
  // What each side stores, for the one who reads a failure that the machine's timing caused.
  throw new Error(`gave up waiting for ${what}\nhere:  ${(await ours()).join('\n       ')}\nthere: ${(await theirs()).join('\n       ')}\n${await explain()}`)
}
