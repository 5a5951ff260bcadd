// The account's last reads, kept in this browser so that a reload without a connection still
// shows the calendar (lib/last-known.ts has the rules): kept for the account signed in, read only
// for it, forgotten at its sign-out.
import { browserStore } from './browser-store.js'
import { session } from './session.js'
import { createStore } from './store.js'
import { forgetLastKnown, keepRange, lastKnownFor, loadLastKnown, saveLastKnown } from '../lib/last-known.js'
import type { CalendarEvent } from '../lib/events.js'

const store = browserStore()

/**
 * The ranges shown from the kept copy because no answer came, by the text of their query key,
 * with when the server gave them. A range read from the server again leaves it.
 */
export const lastKnownShown = createStore<ReadonlyMap<string, number>>(new Map())

export function keyText (key: readonly unknown[]): string {
  return JSON.stringify(key)
}

/**
 * A read the server answered, kept for the account, if that account is still the one signed in.
 * Kept once the browser is idle: reading and writing the copy (up to 750,000 characters of JSON)
 * is no part of showing the answer.
 */
export function keepRead (userId: string, range: { from: Date, to: Date }, events: CalendarEvent[]): void {
  const readAt = Date.now()
  const keep = (): void => {
    const state = session.get()
    if (state.status !== 'signedIn' || state.userId !== userId) return
    saveLastKnown(store, userId, keepRange(loadLastKnown(store, userId), range, events, readAt))
  }
  if (typeof requestIdleCallback === 'function') requestIdleCallback(keep, { timeout: 2000 })
  else setTimeout(keep, 0)
}

export function readKept (userId: string, range: { from: Date, to: Date }, zone: string): { events: CalendarEvent[], readAt: number } | null {
  return lastKnownFor(loadLastKnown(store, userId), range, zone)
}

/** `readAt` null: the range now comes from the server. */
export function markShown (key: string, readAt: number | null): void {
  lastKnownShown.set((shown) => {
    if (readAt === null ? !shown.has(key) : shown.get(key) === readAt) return shown
    const next = new Map(shown)
    if (readAt === null) next.delete(key)
    else next.set(key, readAt)
    return next
  })
}

/** The account signed out (or was signed out): its copy goes, and nothing of it stays shown. */
export function forgetAccount (userId: string | null): void {
  if (userId !== null) {
    try {
      forgetLastKnown(store, userId)
    } catch {
      // A storage that refuses removal refused the copy too.
    }
  }
  lastKnownShown.set(new Map())
}
