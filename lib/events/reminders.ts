// An event's reminders in one canonical form, so two sides that hold the same reminders compare
// equal whatever order or repetition a provider or a client gave them in: each time once, the one
// nearest the start first, at most as many as every provider keeps.
import { EVENT_LIMITS, type EventReminder } from '../../schemas/event.js'

export type Reminder = EventReminder

/** The reminders as stored and compared: whole minutes in range, each once, ascending, at most five. */
export function canonicalReminders (reminders: ReadonlyArray<{ minutes: number }>): Reminder[] {
  const minutes = new Set<number>()
  for (const { minutes: value } of reminders) {
    if (Number.isInteger(value) && value >= 0 && value <= EVENT_LIMITS.reminderMinutes) minutes.add(value)
  }
  return [...minutes].sort((a, b) => a - b).slice(0, EVENT_LIMITS.reminders).map((value) => ({ minutes: value }))
}

/** Whether two events' reminders are the same; absent (the calendar's default) differs from none. */
export function sameReminders (a: ReadonlyArray<{ minutes: number }> | undefined, b: ReadonlyArray<{ minutes: number }> | undefined): boolean {
  if (a === undefined || b === undefined) return a === b
  const [left, right] = [canonicalReminders(a), canonicalReminders(b)]
  return left.length === right.length && left.every((reminder, index) => reminder.minutes === right[index]?.minutes)
}
