// The user's calendars as the list beside the grid shows them: the account's own calendar, then
// each provider calendar (`GET /api/calendars`) with its provider's name and colour. Which ones are
// hidden is kept in this browser per account (signed out: per browser), so a reload or another
// account on the same browser keeps its own choice.
import { QueryObserver, type QueryKey, type QueryObserverOptions } from '@tanstack/query-core'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { api } from './api.js'
import { queryClient } from './calendar.js'
import { createStore, useStore } from './store.js'
import { session } from './session.js'
import { readJson } from '../lib/storage.js'
import type { CalendarEvent } from '../lib/events.js'
import type { CalendarListView, CalendarView } from '../../../schemas/calendar.js'

/** The key of the calendar an event is in: its provider calendar's id, or the own calendar. */
export const OWN_CALENDAR = 'own'
export const OWN_COLOR = '#1d4ed8'

export interface ShownCalendar {
  key: string
  name: string
  color: string
  provider: CalendarView['provider'] | null
  /** The own calendar, or a provider calendar where the user's own events go. */
  primary: boolean
}

export function calendarKeyOf (event: Pick<CalendarEvent, 'calendarId'>): string {
  return event.calendarId ?? OWN_CALENDAR
}

const ownCalendar: ShownCalendar = { key: OWN_CALENDAR, name: 'My calendar', color: OWN_COLOR, provider: null, primary: true }

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

/** The keys of the calendars the user has hidden, for the account signed in now. */
export const hiddenCalendars = createStore<ReadonlySet<string>>(new Set(readHidden()))
session.subscribe(() => hiddenCalendars.set(new Set(readHidden())))

export function setCalendarShown (key: string, shown: boolean): void {
  const next = new Set(hiddenCalendars.get())
  if (shown) next.delete(key)
  else next.add(key)
  try {
    storage()?.setItem(hiddenKey(), JSON.stringify([...next]))
  } catch {
    // A full or refused storage keeps the choice for this page only.
  }
  hiddenCalendars.set(next)
}

export function calendarsKey (userId: string): QueryKey {
  return ['calendars', userId]
}

function shownOf (list: CalendarListView): ShownCalendar[] {
  return list.calendars.map((calendar) => ({
    key: calendar.calendarId,
    name: calendar.name,
    color: calendar.color,
    provider: calendar.provider,
    primary: calendar.primary
  }))
}

/** The calendars to list: the own one, then the account's provider calendars (none signed out). */
export function useCalendars (userId: string | null): ShownCalendar[] {
  const options = useMemo((): QueryObserverOptions<CalendarListView, Error, CalendarListView, CalendarListView, QueryKey> => ({
    queryKey: calendarsKey(userId ?? ''),
    queryFn: async () => await api<CalendarListView>('/calendars'),
    enabled: userId !== null,
    staleTime: 60_000
  }), [userId])
  const observer = useMemo(() => new QueryObserver<CalendarListView>(queryClient, options), [])
  const [result, setResult] = useState(() => observer.getOptimisticResult(queryClient.defaultQueryOptions(options)))
  useEffect(() => {
    observer.setOptions(options)
    setResult(observer.getOptimisticResult(queryClient.defaultQueryOptions(options)))
  }, [options])
  useEffect(() => observer.subscribe(setResult), [observer])
  return useMemo(() => [ownCalendar, ...(userId === null || result.data === undefined ? [] : shownOf(result.data))], [result.data, userId])
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

/** An event's block drawn in its calendar's colour (priority stays a second cue: the class). */
export function calendarStyle (event: Pick<CalendarEvent, 'calendarId'>, colors: ReadonlyMap<string, string>): Record<string, string> {
  const color = colors.get(calendarKeyOf(event))
  return color === undefined ? {} : { '--calendar': color }
}
