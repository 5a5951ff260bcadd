// Reminders shown as browser notifications while a tab is open. The events of the coming four
// weeks are read from the current calendar (the account's or the browser's) when the tab starts,
// whenever a shown range of events changes (a write, the stream, a refresh) and every 15 minutes;
// one timer waits for the next reminder. Each reminder is shown by one tab only: a Web Lock named
// after it is taken without waiting and held while the reminder is due, and the tab holding it
// records it as shown in local storage, where a tab coming later finds it. The permission is
// asked only from a click (ReminderFields).
import { api } from './api.js'
import { currentSource, queryClient, userZone } from './calendar.js'
import { calendarDefaults } from './calendars.js'
import { session } from './session.js'
import { browserStore } from './browser-store.js'
import { createStore } from './store.js'
import { readJson } from '../lib/storage.js'
import type { CalendarEvent } from '../lib/events.js'
import { keptShown, LATE_GRACE_MS, LOOKAHEAD_MS, notificationText, reminderPlan, remindersBetween, type DueReminder } from '../lib/reminders.js'

const SHOWN_KEY = 'calendar.reminders.shown'
const REREAD_MS = 15 * 60_000
/** A timer never waits longer than this, so a machine that slept looks again soon after it wakes. */
const LONGEST_WAIT_MS = 60_000

export type Permission = NotificationPermission | 'unsupported'

function currentPermission (): Permission {
  return typeof Notification === 'undefined' ? 'unsupported' : Notification.permission
}

/** The browser's notification permission, for the "Allow notifications" offer. */
export const notificationPermission = createStore<Permission>(currentPermission())

/** Asks the browser for the permission; called from a click only. */
export async function askNotificationPermission (): Promise<void> {
  if (typeof Notification === 'undefined') return
  notificationPermission.set(await Notification.requestPermission())
  plan()
}

const store = browserStore()
let upcoming: DueReminder[] = []
const shownHere = new Set<string>()
let timer: ReturnType<typeof setTimeout> | null = null
let reading = false
let readAgain = false

function shownAnywhere (key: string): boolean {
  return readJson<Record<string, number>>(store, SHOWN_KEY)?.[key] !== undefined
}

function recordShown (reminder: DueReminder): void {
  const kept = keptShown(readJson<Record<string, number>>(store, SHOWN_KEY) ?? {}, Date.now())
  store.setItem(SHOWN_KEY, JSON.stringify({ ...kept, [reminder.key]: reminder.at }))
}

function notifyOnce (reminder: DueReminder): void {
  const { title, body } = notificationText(reminder, Date.now(), userZone)
  const notification = new Notification(title, { body, tag: reminder.key })
  // A click brings the calendar's tab forward, as a reminder of a native calendar opens it.
  notification.onclick = () => {
    window.focus()
    notification.close()
  }
}

async function show (reminder: DueReminder): Promise<void> {
  shownHere.add(reminder.key)
  const claim = (): void => {
    if (shownAnywhere(reminder.key)) return
    recordShown(reminder)
    notifyOnce(reminder)
  }
  const locks = (navigator as Navigator & { locks?: LockManager }).locks
  if (locks === undefined) {
    claim()
    return
  }
  // The tab that holds the lock shows it; a tab that finds it held, or shown, leaves it. The lock
  // is kept until no tab would show the reminder any more: another tab's copy of local storage
  // learns of the record a moment later, and a lock let go at once would let it show a second one.
  await locks.request(`calendar-reminder:${reminder.key}`, { ifAvailable: true }, async (lock) => {
    if (lock === null) return
    claim()
    await new Promise((resolve) => setTimeout(resolve, Math.max(reminder.at + LATE_GRACE_MS - Date.now(), 0)))
  })
}

function plan (): void {
  if (timer !== null) clearTimeout(timer)
  timer = null
  const now = Date.now()
  const { show: due, nextAt } = reminderPlan(upcoming, shownHere, now)
  if (notificationPermission.get() === 'granted') for (const reminder of due) show(reminder).catch(() => {})
  const wait = nextAt === null ? LONGEST_WAIT_MS : Math.min(Math.max(nextAt - now, 0), LONGEST_WAIT_MS)
  timer = setTimeout(plan, wait)
}

async function read (): Promise<void> {
  if (reading) {
    readAgain = true
    return
  }
  reading = true
  try {
    do {
      readAgain = false
      if (session.get().status === 'unknown') break
      const now = Date.now()
      const from = now - LATE_GRACE_MS
      try {
        const [start, end] = [new Date(from), new Date(now + LOOKAHEAD_MS)]
        const source = currentSource()
        // The account's events straight from the API: a read through the source would keep four
        // weeks of events for an offline reload, which is the shown ranges' business.
        const [events, defaults] = await Promise.all([
          source.mode === 'account'
            ? api<CalendarEvent[]>('/event', { query: { start: start.toISOString(), end: end.toISOString() } })
            : source.range(start, end),
          calendarDefaults()
        ])
        upcoming = remindersBetween(events, from, end.getTime(), userZone, defaults)
      } catch {
        // No answer now: the reminders already read still stand, and the next read tries again.
      }
    } while (readAgain)
  } finally {
    reading = false
  }
  plan()
}

/** Starts the reminders of this tab: called once at start-up. */
export function wireReminders (): void {
  if (typeof Notification === 'undefined') return
  session.subscribe(() => { read().catch(() => {}) })
  // Any change to a shown range of events, or to the calendars' default reminders, may change a
  // reminder: read again, once per burst. A range's first answer is no change: the read at start
  // (or at sign-in) covers the four weeks ahead already.
  let pending: ReturnType<typeof setTimeout> | null = null
  queryClient.getQueryCache().subscribe((event) => {
    const kind = event.query.queryKey[0]
    if (event.type !== 'updated' || (kind !== 'events' && kind !== 'calendars') || event.action.type !== 'success' || pending !== null) return
    if (event.query.state.dataUpdateCount <= 1) return
    pending = setTimeout(() => { pending = null; read().catch(() => {}) }, 500)
  })
  setInterval(() => { read().catch(() => {}) }, REREAD_MS)
  document.addEventListener('visibilitychange', () => { notificationPermission.set(currentPermission()) })
  read().catch(() => {})
}
