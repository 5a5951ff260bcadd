// The person's display preferences, kept as the hidden calendars are: with the account
// (`/api/user/preferences`), so every browser and device shows the same week, clock, language,
// zones and colours; read at sign-in and again when the tab comes back (the stream says nothing of
// them). This browser keeps a copy per account (signed out, its only copy) so the first paint
// already honours them, and a choice the server did not take yet is sent again before it is
// replaced. Other tabs of this browser follow at once, through the storage event.
import { DateTime, Settings } from 'luxon'
import { api } from './api.js'
import { createStore } from './store.js'
import { session } from './session.js'
import { setUserZone, userZone } from './query.js'
import { readJson } from '../lib/storage.js'
import { timeLabel } from '../lib/grid.js'
import { browserDefaults, effectivePreferences, type Preferences } from '../lib/preferences.js'
import type { CalendarEvent } from '../lib/events.js'
import type { UserPreferences } from '../../../schemas/preferences.js'

const defaults = browserDefaults({
  languages: typeof navigator === 'undefined' ? [] : navigator.languages,
  timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone
})

function storage (): Storage | null {
  try {
    return window.localStorage
  } catch {
    return null
  }
}

function signedInUserId (): string | null {
  const state = session.get()
  return state.status === 'signedIn' ? state.userId : null
}

function localKey (): string {
  const userId = signedInUserId()
  return userId === null ? 'preferences:local' : `preferences:${userId}`
}

const unsentKey = (): string => `${localKey()}:unsent`

function readLocal (): UserPreferences {
  const store = storage()
  const value = store === null ? null : readJson<unknown>(store, localKey())
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value as UserPreferences : {}
}

function writeLocal (key: string, value: string | null): void {
  try {
    if (value === null) storage()?.removeItem(key)
    else storage()?.setItem(key, value)
  } catch {
    // A full or refused storage keeps the choice for this page only.
  }
}

function applied (stored: UserPreferences): Preferences {
  const effective = effectivePreferences(stored, defaults)
  // Luxon's names of days and months, and the zone every view reads, follow the choice.
  Settings.defaultLocale = effective.locale
  setUserZone(effective.timeZone)
  return effective
}

/** The preferences every view is drawn with now. */
export const preferences = createStore<Preferences>(applied(readLocal()))

function keep (stored: UserPreferences): void {
  writeLocal(localKey(), JSON.stringify(stored))
  preferences.set(applied(stored))
}

async function send (stored: UserPreferences): Promise<void> {
  const userId = signedInUserId()
  try {
    const answer = await api<UserPreferences>('/user/preferences', { method: 'PUT', body: stored })
    if (signedInUserId() !== userId) return
    writeLocal(unsentKey(), null)
    // The server's form of the choice (a zone under its current name).
    keep(answer)
  } catch {
    // Offline or refused: the mark stays, and the next load or change sends the choice again.
  }
}

/** The account's choice from the server, unless this browser holds one it has not sent yet. */
async function load (): Promise<void> {
  const userId = signedInUserId()
  if (userId === null) return
  if ((storage()?.getItem(unsentKey()) ?? null) !== null) {
    await send(readLocal())
    return
  }
  try {
    const stored = await api<UserPreferences>('/user/preferences')
    if (signedInUserId() === userId && (storage()?.getItem(unsentKey()) ?? null) === null) keep(stored)
  } catch {
    // The copy kept here stays in use until the server answers.
  }
}

/** Stores the person's choice: here at once, and with the account when signed in. */
export async function savePreferences (stored: UserPreferences): Promise<void> {
  keep(stored)
  if (signedInUserId() === null) return
  writeLocal(unsentKey(), '1')
  await send(stored)
}

let loadedFor: string | null = null
session.subscribe(() => {
  const userId = signedInUserId()
  if (userId === loadedFor) return
  loadedFor = userId
  preferences.set(applied(readLocal()))
  load().catch(() => {})
})
if (typeof window !== 'undefined') {
  // Another device may have changed them: read them again when the tab comes back.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') load().catch(() => {})
  })
  // Another tab of this browser changed them: its copy is this tab's too.
  window.addEventListener('storage', (change) => {
    if (change.key === localKey()) preferences.set(applied(readLocal()))
  })
}

/** A time of day as the person reads times: 14:00, or 2:00 PM. */
export function formatTime (time: DateTime): string {
  const { locale, timeFormat } = preferences.get()
  return time.toLocaleString(timeFormat === '12h' ? { hour: 'numeric', minute: '2-digit', hourCycle: 'h12' } : { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }, { locale })
}

/** An hour of the grid's gutter: 14:00, or 2 PM. */
export function hourLabel (time: DateTime): string {
  const { locale, timeFormat } = preferences.get()
  return timeFormat === '12h'
    ? time.toLocaleString({ hour: 'numeric', hourCycle: 'h12' }, { locale })
    : time.toLocaleString({ hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }, { locale })
}

/** "9:00 – 10:30" in the shown zone, the person's language and clock. */
export function eventTimeLabel (event: CalendarEvent): string {
  const { locale, timeFormat } = preferences.get()
  return timeLabel(event, userZone, locale, timeFormat === '12h')
}
