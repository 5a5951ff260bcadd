// When an event's reminders are due, what a notification says, and who may ask for the permission:
// plain functions over events and instants, so the rules are tested without a browser
// (test/web/reminders-rules.test.ts). data/reminders.ts does the timers, the Notification API and
// the lock between tabs.
import { DateTime } from 'luxon'
import { canonicalReminders, type Reminder } from '../../../lib/events/reminders.js'
import { EVENT_LIMITS } from '../../../schemas/event.js'
import type { CalendarEvent } from './events.js'

export type { Reminder }

/** The choices of the form besides a custom number of minutes. */
export const REMINDER_PRESETS = [5, 10, 30, 60, 1440] as const
export const MAX_REMINDERS = EVENT_LIMITS.reminders
export const MAX_REMINDER_MINUTES = EVENT_LIMITS.reminderMinutes

/**
 * How late a reminder is still shown: a tab opened, or a laptop woken, a little after its time
 * still tells; one from hours ago would only be noise.
 */
export const LATE_GRACE_MS = 5 * 60_000

/** How far ahead the events are read: the longest reminder (4 weeks) and a day. */
export const LOOKAHEAD_MS = (MAX_REMINDER_MINUTES + 24 * 60) * 60_000

/** "10 minutes before, 1 hour before": an event's reminders in the order they come, for reading. */
export function remindersInWords (reminders: readonly Reminder[]): string {
  return canonicalReminders(reminders).map((reminder) => reminderLabel(reminder.minutes)).join(', ')
}

/** "10 minutes before", "1 hour before", "1 day before", "At the start". */
export function reminderLabel (minutes: number): string {
  if (minutes === 0) return 'At the start'
  const [count, unit] = minutes % 10_080 === 0
    ? [minutes / 10_080, 'week']
    : minutes % 1440 === 0 ? [minutes / 1440, 'day'] : minutes % 60 === 0 ? [minutes / 60, 'hour'] : [minutes, 'minute']
  return `${count} ${unit}${count === 1 ? '' : 's'} before`
}

/** A custom number of minutes as typed, or null when it is no whole number in range. */
export function customMinutes (text: string): number | null {
  if (!/^\d{1,5}$/.test(text.trim())) return null
  const minutes = Number(text)
  return minutes <= MAX_REMINDER_MINUTES ? minutes : null
}

/** The list with one more reminder: the first preset not in it yet, none past the limit. */
export function withAnotherReminder (reminders: Reminder[]): Reminder[] {
  if (reminders.length >= MAX_REMINDERS) return reminders
  const taken = new Set(reminders.map((reminder) => reminder.minutes))
  const minutes = REMINDER_PRESETS.find((preset) => !taken.has(preset)) ?? 0
  return [...reminders, { minutes }]
}

/** One reminder of one event (or occurrence) at one time. */
export interface DueReminder {
  /** The same in every tab: names the notification and its lock. */
  key: string
  eventId: string
  title: string
  location?: string
  /** The event's start and the reminder's time, in epoch milliseconds. */
  start: number
  at: number
  isAllDay: boolean
}

/** An event's start as an instant; an all-day event starts at midnight where the person is. */
function startOf (event: Pick<CalendarEvent, 'startDate' | 'isAllDay'>, zone: string): number {
  return event.isAllDay ? DateTime.fromISO(event.startDate, { zone }).toMillis() : Date.parse(event.startDate)
}

/** The provider calendars' default reminders (`GET /api/calendars`), by calendarId. */
export type CalendarDefaults = ReadonlyMap<string, readonly Reminder[]>

/**
 * What an event reminds of: its own reminders, or, without them, its calendar's default (Google
 * keeps one per calendar; the own calendar and the others have none).
 */
export function effectiveReminders (event: Pick<CalendarEvent, 'reminders'>, calendarDefault: readonly Reminder[] | undefined): readonly Reminder[] {
  return event.reminders ?? calendarDefault ?? []
}

/** The reminders whose time falls in [from, to), in time order. */
export function remindersBetween (events: CalendarEvent[], from: number, to: number, zone: string, defaults: CalendarDefaults = new Map()): DueReminder[] {
  const due: DueReminder[] = []
  for (const event of events) {
    const reminders = effectiveReminders(event, event.calendarId === undefined ? undefined : defaults.get(event.calendarId))
    if (reminders.length === 0 || event.status === 'cancelled') continue
    const start = startOf(event, zone)
    if (Number.isNaN(start)) continue
    for (const { minutes } of canonicalReminders(reminders)) {
      const at = start - minutes * 60_000
      if (at < from || at >= to) continue
      due.push({
        key: `${event._id}|${new Date(start).toISOString()}|${minutes}`,
        eventId: event._id,
        title: event.title === '' ? '(No title)' : event.title,
        ...(event.location === undefined || event.location === '' ? {} : { location: event.location }),
        start,
        at,
        isAllDay: event.isAllDay
      })
    }
  }
  return due.sort((a, b) => a.at - b.at || a.key.localeCompare(b.key))
}

/** What to do at `now`: the reminders to show (their time came, not too long ago), and when to look again. */
export function reminderPlan (reminders: DueReminder[], shown: ReadonlySet<string>, now: number): { show: DueReminder[], nextAt: number | null } {
  const show = reminders.filter((reminder) => reminder.at <= now && now - reminder.at <= LATE_GRACE_MS && !shown.has(reminder.key))
  const next = reminders.find((reminder) => reminder.at > now)
  return { show, nextAt: next === undefined ? null : next.at }
}

/** The notification's title and body: "Dentist", "In 10 minutes, at 09:00 · Main Street 1". */
export function notificationText (reminder: DueReminder, now: number, zone: string): { title: string, body: string } {
  const minutes = Math.round((reminder.start - now) / 60_000)
  const when = reminder.isAllDay
    ? (minutes <= 0 ? 'Today, all day' : `${DateTime.fromMillis(reminder.start, { zone }).toFormat('cccc d LLLL')}, all day`)
    : `${minutes <= 0 ? 'Now' : `In ${reminderLabel(minutes).replace(/ before$/, '')}`}, at ${DateTime.fromMillis(reminder.start, { zone }).toFormat('HH:mm')}`
  return { title: reminder.title, body: reminder.location === undefined ? when : `${when} · ${reminder.location}` }
}

/** The "Allow notifications" offer: only while the browser has not been asked, and there is a reminder to show. */
export function offersPermission (permission: 'default' | 'granted' | 'denied' | 'unsupported', reminderCount: number): boolean {
  return permission === 'default' && reminderCount > 0
}

/** Keys of reminders shown (in any tab), kept a day past their time so a late tab does not show them again. */
export function keptShown (shown: Record<string, number>, now: number): Record<string, number> {
  return Object.fromEntries(Object.entries(shown).filter(([, at]) => typeof at === 'number' && now - at <= 24 * 3_600_000))
}
