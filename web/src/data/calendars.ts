// The user's calendars as the list beside the grid shows them: the account's own calendar, then
// each provider calendar (`GET /api/calendars`) with its provider's name and colour. Which ones are
// hidden is kept with the account (`/api/calendars/hidden`), so every browser and device shows the
// same choice; this browser keeps a copy per account (signed out: its only copy) so the first paint
// already honours it, and a choice the server did not take yet is sent again before it is replaced.
import { QueryObserver, type QueryKey, type QueryObserverOptions } from '@tanstack/query-core'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { api } from './api.js'
import { queryClient } from './calendar.js'
import { createStore, useStore } from './store.js'
import { session } from './session.js'
import { preferences } from './preferences.js'
import { calendarColorsOf } from '../../../lib/preferences.js'
import { EVENT_COLORS } from '../../../lib/events/colors.js'
import { readJson } from '../lib/storage.js'
import type { CalendarDefaults } from '../lib/reminders.js'
import type { CalendarEvent } from '../lib/events.js'
import type { CalendarListView, CalendarView, HiddenCalendarsView } from '../../../schemas/calendar.js'

/** The key of the calendar an event is in: its provider calendar's id, or the own calendar. */
export const OWN_CALENDAR = 'own'

export interface ShownCalendar {
  key: string
  name: string
  color: string
  provider: CalendarView['provider'] | null
  /** The own calendar, or a provider calendar where the user's own events go. */
  primary: boolean
  /** What an event of the calendar without reminders of its own reminds of (Google's per-calendar default). */
  defaultReminders: CalendarView['defaultReminders']
}

export function calendarKeyOf (event: Pick<CalendarEvent, 'calendarId'>): string {
  return event.calendarId ?? OWN_CALENDAR
}

/**
 * Where a new event goes unless the person picks another calendar: the primary calendar of the
 * oldest connection (listed first), as a Google or Outlook user expects of a new event; the own
 * calendar, written to no provider, when there is none.
 */
export function defaultCalendarOf (calendars: ShownCalendar[]): string {
  return calendars.find((calendar) => calendar.provider !== null && calendar.primary)?.key ?? OWN_CALENDAR
}

const ownCalendar: Omit<ShownCalendar, 'color'> = { key: OWN_CALENDAR, name: 'My calendar', provider: null, primary: true, defaultReminders: [] }

function storage (): Storage | null {
  try {
    return window.localStorage
  } catch {
    return null
  }
}

function hiddenKey (): string {
  const state = session.get()
  return state.status === 'signedIn' ? `hiddenCalendars:${state.userId}` : 'hiddenCalendars:local'
}

function readHidden (): string[] {
  const store = storage()
  const value = store === null ? null : readJson<unknown>(store, hiddenKey())
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
}

function writeLocal (key: string, value: string | null): void {
  try {
    if (value === null) storage()?.removeItem(key)
    else storage()?.setItem(key, value)
  } catch {
    // A full or refused storage keeps the choice for this page only.
  }
}

/** Set while a choice made here has not reached the server: it is sent, not overwritten, next time. */
const unsentKey = (): string => `${hiddenKey()}:unsent`

function hasUnsentChoice (): boolean {
  return (storage()?.getItem(unsentKey()) ?? null) !== null
}

/** The keys of the calendars the user has hidden, for the account signed in now. */
export const hiddenCalendars = createStore<ReadonlySet<string>>(new Set(readHidden()))

function keepHidden (keys: readonly string[]): void {
  writeLocal(hiddenKey(), JSON.stringify(keys))
  hiddenCalendars.set(new Set(keys))
}

async function sendHidden (keys: readonly string[]): Promise<void> {
  const userId = signedInUserId()
  try {
    await api<HiddenCalendarsView>('/calendars/hidden', { method: 'PUT', body: { hidden: keys } })
    if (signedInUserId() === userId) writeLocal(unsentKey(), null)
  } catch {
    // Offline or refused: the mark stays, and the next load or change sends the choice again.
  }
}

function signedInUserId (): string | null {
  const state = session.get()
  return state.status === 'signedIn' ? state.userId : null
}

/** The account's choice from the server, unless this browser holds one it has not sent yet. */
async function loadHiddenCalendars (): Promise<void> {
  const userId = signedInUserId()
  if (userId === null) return
  if (hasUnsentChoice()) {
    await sendHidden([...hiddenCalendars.get()])
    return
  }
  try {
    const { hidden } = await api<HiddenCalendarsView>('/calendars/hidden')
    if (signedInUserId() === userId && !hasUnsentChoice()) keepHidden(hidden)
  } catch {
    // The copy kept here stays in use until the server answers.
  }
}

let loadedFor: string | null = null
session.subscribe(() => {
  const userId = signedInUserId()
  if (userId === loadedFor) return
  loadedFor = userId
  hiddenCalendars.set(new Set(readHidden()))
  loadHiddenCalendars().catch(() => {})
})
if (typeof document !== 'undefined') {
  // Another device may have changed the choice: read it again when the tab comes back.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') loadHiddenCalendars().catch(() => {})
  })
}

export function setCalendarShown (key: string, shown: boolean): void {
  const next = new Set(hiddenCalendars.get())
  if (shown) next.delete(key)
  else next.add(key)
  keepHidden([...next])
  if (signedInUserId() === null) return
  writeLocal(unsentKey(), '1')
  sendHidden([...next]).catch(() => {})
}

const CALENDARS_STALE_MS = 60_000

function calendarsKey (userId: string): QueryKey {
  return ['calendars', userId]
}

function shownOf (list: CalendarListView): Array<Omit<ShownCalendar, 'color'>> {
  return list.calendars.map((calendar) => ({
    key: calendar.calendarId,
    name: calendar.name,
    provider: calendar.provider,
    primary: calendar.primary,
    defaultReminders: calendar.defaultReminders
  }))
}

async function readCalendarList (): Promise<CalendarListView> {
  return await api<CalendarListView>('/calendars')
}

/**
 * The default reminders of the signed-in account's provider calendars, by calendarId: from the
 * list already read when it is fresh, else read now. Signed out, or unanswered: none.
 */
export async function calendarDefaults (): Promise<CalendarDefaults> {
  const userId = signedInUserId()
  if (userId === null) return new Map()
  try {
    const list = await queryClient.ensureQueryData({ queryKey: calendarsKey(userId), queryFn: readCalendarList, staleTime: CALENDARS_STALE_MS })
    return new Map(list.calendars.map((calendar) => [calendar.calendarId, calendar.defaultReminders]))
  } catch {
    return new Map()
  }
}

/**
 * The calendars to list: the own one, then the account's provider calendars (none signed out),
 * each in the colour the person chose, else a palette colour no other calendar in the list has
 * (the providers' own colours repeat: Google's calendars of one account, Outlook's blue and ours).
 */
export function useCalendars (userId: string | null): ShownCalendar[] {
  const options = useMemo((): QueryObserverOptions<CalendarListView, Error, CalendarListView, CalendarListView, QueryKey> => ({
    queryKey: calendarsKey(userId ?? ''),
    queryFn: readCalendarList,
    enabled: userId !== null,
    staleTime: CALENDARS_STALE_MS
  }), [userId])
  const observer = useMemo(() => new QueryObserver<CalendarListView>(queryClient, options), [])
  const [result, setResult] = useState(() => observer.getOptimisticResult(queryClient.defaultQueryOptions(options)))
  useEffect(() => {
    observer.setOptions(options)
    setResult(observer.getOptimisticResult(queryClient.defaultQueryOptions(options)))
  }, [options])
  useEffect(() => observer.subscribe(setResult), [observer])
  const chosen = useStore(preferences).calendarColors
  return useMemo(() => {
    const listed = [ownCalendar, ...(userId === null || result.data === undefined ? [] : shownOf(result.data))]
    const colors = calendarColorsOf(listed.map((calendar) => calendar.key), chosen)
    return listed.map((calendar) => ({ ...calendar, color: colors.get(calendar.key) as string }))
  }, [result.data, userId, chosen])
}

/** Re-reads the calendar list (a connection was added, or finished importing). */
export function refreshCalendars (): Promise<void> {
  return queryClient.invalidateQueries({ queryKey: ['calendars'] })
}

/** The colours of the calendars in the list, by key, for drawing events. */
export const calendarColors = createStore<ReadonlyMap<string, string>>(new Map())

export function useCalendarColors (): ReadonlyMap<string, string> {
  return useStore(calendarColors)
}

/** An event's block drawn in its own colour, else its calendar's (priority stays a second cue: the class). */
export function calendarStyle (event: Pick<CalendarEvent, 'calendarId' | 'color'>, colors: ReadonlyMap<string, string>): Record<string, string> {
  const color = EVENT_COLORS.find((entry) => entry.name === event.color)?.hex ?? colors.get(calendarKeyOf(event))
  return color === undefined ? {} : { '--calendar': color }
}
