// The event as the client reads and writes it: the API's own types (schemas/event.ts), so the
// client and the backend cannot drift, and the few rules the client needs about ids.
import type { EventChangeInput, EventView } from '../../../schemas/event.js'

export type CalendarEvent = Omit<EventView, 'user' | 'lastUpdated'> & { user?: string, lastUpdated?: string }
export type EventChange = EventChangeInput
export type ApplyTo = 'this' | 'thisAndFollowing' | 'all'

const OCCURRENCE_ID = /^([0-9a-f]{24})_(\d{8}(?:T\d{6}Z)?)$/

/** A 24-hex id in the ObjectId layout (seconds, then random bytes), chosen by the client. */
export function newEventId (now: number = Date.now(), random: (bytes: Uint8Array) => Uint8Array = (bytes) => globalThis.crypto.getRandomValues(bytes)): string {
  const seconds = Math.floor(now / 1000).toString(16).padStart(8, '0').slice(-8)
  const rest = [...random(new Uint8Array(8))].map((byte) => byte.toString(16).padStart(2, '0')).join('')
  return seconds + rest
}

/** `<seriesId>_<key>` of a never-edited occurrence, or null for a stored id. */
export function parseOccurrenceId (id: string): { seriesId: string, key: string } | null {
  const match = OCCURRENCE_ID.exec(id)
  return match === null ? null : { seriesId: match[1] as string, key: match[2] as string }
}

/** The series an event belongs to (an occurrence, edited or not), or null for a single event. */
export function seriesIdOf (event: Pick<CalendarEvent, '_id' | 'recurrence'>): string | null {
  return event.recurrence?.eventId?.replace(/^optimistic-/, '') ?? parseOccurrenceId(event._id)?.seriesId ?? null
}

export function isOccurrence (event: Pick<CalendarEvent, '_id' | 'recurrence'>): boolean {
  return seriesIdOf(event) !== null
}

/** The fields a write sends: what was read, less what the server owns or a PUT may not change. */
export function changeOf (event: CalendarEvent): EventChange {
  const { user: _user, lastUpdated: _lastUpdated, ...fields } = event
  return fields
}

export const FREQUENCIES = ['DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY'] as const
export type Frequency = typeof FREQUENCIES[number]

/** The frequency a series repeats with, from its RRULE line (null: not a series, or one the dialog cannot show). */
export function frequencyOf (rule: string[] | undefined): Frequency | null {
  const line = rule?.find((item) => item.startsWith('RRULE:'))
  const frequency = line === undefined ? undefined : /FREQ=([A-Z]+)/.exec(line)?.[1]
  return (FREQUENCIES as readonly string[]).includes(frequency ?? '') ? frequency as Frequency : null
}
