// Google Calendar events <-> the backend's event content, as pure functions. The adapter in
// sync/providers/google/ does the I/O; what a Google event means for us is decided here.
import { createHash } from 'node:crypto'
import type { calendar_v3 as CalendarV3 } from '@googleapis/calendar'
import type { EventContent, ProviderEvent } from '../../../schemas/sync/index.js'
import { utcIsoOf } from '../../../lib/events/time.js'
import { canonicalReminders, type Reminder } from '../../../lib/events/reminders.js'
import { colorOfGoogleId, googleColorIdOf } from '../../../lib/events/colors.js'

type GoogleEvent = CalendarV3.Schema$Event

const EPOCH = new Date(0).toISOString()

/** Private extended property that carries the backend's id of an event the Sync service wrote. */
export const EVENT_ID_PROPERTY = 'calendarEventId'

// The contract's limits (schemas/sync/provider-events.ts): a longer value would make the backend
// refuse the whole page, so it is cut here instead.
const LIMITS = { title: 1024, description: 8192, location: 1024, recurrenceLines: 20, id: 1024, etag: 256 }

function cut (value: string, max: number): string {
  return value.length > max ? value.slice(0, max) : value
}

/** Google's RFC 3339 `updated` as the contract's UTC instant; the epoch when Google gave none or no real time. */
function instant (value: string | null | undefined): string {
  return (value ? utcIsoOf(value) : null) ?? EPOCH
}

function dateOf (time: CalendarV3.Schema$EventDateTime | undefined): string | null {
  return time?.date ?? time?.dateTime ?? null
}

/**
 * Google's reminders as ours: the calendar's default stays absent; overrides are the popups
 * (an email is no notification this service shows, and stays at Google: see `googleRemindersOf`).
 */
function remindersOf (reminders: CalendarV3.Schema$Event['reminders']): { reminders?: Reminder[] } {
  if (reminders == null || reminders.useDefault !== false) return {}
  const popups = (reminders.overrides ?? []).filter((item) => item.method === 'popup' && typeof item.minutes === 'number')
  return { reminders: canonicalReminders(popups.map((item) => ({ minutes: item.minutes as number }))) }
}

/**
 * A calendar's default reminders (calendarList `defaultReminders`) as ours: the popups, as an
 * event's; nothing when the calendar has none this service shows.
 */
export function calendarDefaultRemindersOf (defaults: CalendarV3.Schema$CalendarListEntry['defaultReminders']): { defaultReminders?: Reminder[] } {
  const popups = (defaults ?? []).filter((item) => item.method === 'popup' && typeof item.minutes === 'number')
  const reminders = canonicalReminders(popups.map((item) => ({ minutes: item.minutes as number })))
  return reminders.length === 0 ? {} : { defaultReminders: reminders }
}

/**
 * Our reminders as Google's: absent is the calendar's default, else popup overrides beside the
 * email ones Google holds (`current`), at most Google's 5. `overrides: []` with the default, since a
 * patch merges the object and Google refuses the default together with overrides.
 */
function googleRemindersOf (reminders: Reminder[] | undefined, current?: CalendarV3.Schema$Event['reminders']): CalendarV3.Schema$Event['reminders'] {
  if (reminders === undefined) return { useDefault: true, overrides: [] }
  const emails = current?.useDefault === false ? (current.overrides ?? []).filter((item) => item.method === 'email') : []
  const popups = canonicalReminders(reminders).map((reminder) => ({ method: 'popup', minutes: reminder.minutes }))
  return { useDefault: false, overrides: [...popups, ...emails].slice(0, 5) }
}

/** Google's `colorId` (the event palette's 1 to 11) as our colour; none or another id: the calendar's. */
function colorOfGoogleEvent (colorId: string | null | undefined): Pick<EventContent, 'color'> {
  const color = colorOfGoogleId(colorId)
  return color === undefined ? {} : { color }
}

/** The content of a Google event, or null when it has no usable start and end. */
export function contentOf (event: GoogleEvent, calendarTimeZone: string): EventContent | null {
  const startDate = dateOf(event.start)
  const endDate = dateOf(event.end)
  if (startDate === null || endDate === null) return null
  const isAllDay = typeof event.start?.date === 'string'
  const timeZone = (isAllDay ? null : event.start?.timeZone) ?? calendarTimeZone
  const recurrence = (event.recurrence ?? []).filter((line) => line.length > 0 && line.length <= 1024).slice(0, LIMITS.recurrenceLines)
  return {
    title: cut(event.summary ?? '', LIMITS.title),
    ...(event.description ? { description: cut(event.description, LIMITS.description) } : {}),
    ...(event.location ? { location: cut(event.location, LIMITS.location) } : {}),
    ...remindersOf(event.reminders),
    ...colorOfGoogleEvent(event.colorId),
    startDate,
    endDate,
    isAllDay,
    timeZone,
    ...(recurrence.length > 0 ? { recurrence } : {})
  }
}

/** A Google event as the backend is told of it; null for an item that cannot be one (no id). */
export function toProviderEvent (event: GoogleEvent, calendarTimeZone: string): ProviderEvent | null {
  if (!event.id || event.id.length > LIMITS.id) return null
  const cancelled = event.status === 'cancelled'
  const content = cancelled ? null : contentOf(event, calendarTimeZone)
  // A live event without a start or end is nothing the backend can show; it is skipped, not invented.
  if (!cancelled && content === null) return null
  const originalStartDate = dateOf(event.originalStartTime)
  // An exception inherits its master's private properties, so the id found there names the
  // series, not the occurrence: passing it on would apply the occurrence onto its series.
  const eventId = event.recurringEventId ? undefined : event.extendedProperties?.private?.[EVENT_ID_PROPERTY]
  return {
    providerEventId: event.id,
    ...(event.iCalUID ? { iCalUID: cut(event.iCalUID, 1024) } : {}),
    ...(event.etag && event.etag.length <= LIMITS.etag ? { etag: event.etag } : {}),
    updated: instant(event.updated),
    status: cancelled ? 'cancelled' : 'confirmed',
    ...(content === null ? {} : { content }),
    ...(event.recurringEventId ? { recurringEventId: event.recurringEventId } : {}),
    ...(originalStartDate === null ? {} : { originalStartDate }),
    ...(eventId ? { eventId } : {})
  }
}

/**
 * The Google fields of our content; a patch sends every field so a cleared one is cleared there
 * too. `current`: Google's copy, whose email reminders are kept.
 */
export function googleFieldsOf (content: EventContent, current?: GoogleEvent | null): GoogleEvent {
  const time = (value: string): CalendarV3.Schema$EventDateTime => content.isAllDay
    ? { date: value.slice(0, 10), dateTime: null, timeZone: null }
    : { dateTime: value, date: null, timeZone: content.timeZone }
  return {
    summary: content.title,
    description: content.description ?? null,
    location: content.location ?? null,
    reminders: googleRemindersOf(content.reminders, current?.reminders),
    // null clears it in a patch: the calendar's colour.
    colorId: content.color === undefined ? null : googleColorIdOf(content.color),
    start: time(content.startDate),
    end: time(content.endDate),
    recurrence: content.recurrence ?? null
  }
}

/**
 * The id Google gives one occurrence of a series: `<seriesId>_<original start>`, the start in UTC
 * basic format (`20261121T090000Z`), or `_<YYYYMMDD>` for an all-day series.
 */
export function instanceId (seriesId: string, originalStartDate: string): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(originalStartDate)) return `${seriesId}_${originalStartDate.replaceAll('-', '')}`
  const utc = new Date(originalStartDate).toISOString().replace(/\.\d{3}Z$/, 'Z').replaceAll('-', '').replaceAll(':', '')
  return `${seriesId}_${utc}`
}

/**
 * The id an inserted event gets at Google, the same on every attempt, so a write retried after a
 * crash finds its first insert (409) instead of creating a copy. Hex digits are base32hex, as
 * Google requires of client-chosen ids.
 */
export function insertIdFor (connectionId: string, eventId: string): string {
  return createHash('sha256').update(`${connectionId}:${eventId}`).digest('hex').slice(0, 32)
}

/** Google's error reasons that mean "slow down" rather than "forbidden". */
const RATE_LIMIT_REASONS: ReadonlySet<string> = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'quotaExceeded'])

export interface GoogleFailure {
  status: number | null
  reason: string | null
  /** The OAuth error of a token request (`invalid_grant`). */
  oauthError: string | null
}

export type FailureKind = 'revoked' | 'cursorExpired' | 'unavailable' | 'notFound' | 'conflict' | 'gone' | 'duplicate' | 'other'

/** What a failed Google call means for the Sync service. */
export function classifyFailure (failure: GoogleFailure): FailureKind {
  const { status, reason, oauthError } = failure
  if (oauthError === 'invalid_grant') return 'revoked'
  if (status === 410 && reason === 'fullSyncRequired') return 'cursorExpired'
  if (status === null || status === 429 || status >= 500) return 'unavailable'
  if (status === 403 && reason !== null && RATE_LIMIT_REASONS.has(reason)) return 'unavailable'
  if (status === 404) return 'notFound'
  if (status === 410) return 'gone'
  if (status === 412) return 'conflict'
  if (status === 409) return 'duplicate'
  return 'other'
}
