// Where events come from: the account (the events API) when signed in, browser storage when not.
// Both answer the same operations, so the views and the edit plans do not care which one is in use.
// Queries and their invalidation are TanStack Query's; writes are applied to the cached lists at
// once and confirmed by a refetch when the request returns, never by waiting for the stream.
import { QueryClient, QueryObserver, keepPreviousData, type QueryKey, type QueryObserverOptions } from '@tanstack/query-core'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { api, ApiError } from './api.js'
import { session } from './session.js'
import { createStore } from './store.js'
import { memoryStore, type KeyValueStore } from '../lib/storage.js'
import { afterCarry, carrySelection, demoEvents, loadLocalData, saveLocalData, withDemoSeed, type LocalData } from '../lib/local-events.js'
import { isLocalDemo, localCreate, localDelete, localGet, localRange, localReplace } from '../lib/local-calendar.js'
import { seriesIdOf, type ApplyTo, type CalendarEvent, type EventChange } from '../lib/events.js'
import type { EditPlan } from '../lib/series-edit.js'
import { eventEnd, eventStart } from '../lib/grid.js'

export type Mode = 'local' | 'account'

export interface CalendarSource {
  mode: Mode
  range: (from: Date, to: Date) => Promise<CalendarEvent[]>
  get: (id: string) => Promise<CalendarEvent>
  create: (change: EventChange, options?: { demo?: boolean }) => Promise<void>
  replace: (id: string, change: EventChange) => Promise<void>
  remove: (id: string, applyTo?: ApplyTo) => Promise<void>
  isDemo: (id: string) => boolean
}

export const userZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'

function browserStore (): KeyValueStore {
  try {
    const store = window.localStorage
    store.getItem('probe')
    return store
  } catch {
    return memoryStore()
  }
}

const local = browserStore()

function localData (): LocalData {
  const data = loadLocalData(local)
  if (data.seeded) return data
  const seeded = withDemoSeed(data, demoEvents(DateTime.now(), userZone))
  saveLocalData(local, seeded)
  return seeded
}

function localOperation (apply: (data: LocalData) => LocalData): Promise<void> {
  try {
    saveLocalData(local, apply(localData()))
    return Promise.resolve()
  } catch (error) {
    return Promise.reject(error)
  }
}

export const localSource: CalendarSource = {
  mode: 'local',
  range: async (from, to) => localRange(localData(), from, to),
  get: async (id) => localGet(localData(), id),
  create: (change, options) => localOperation((data) => localCreate(data, change, Date.now(), options)),
  replace: (id, change) => localOperation((data) => localReplace(data, id, change)),
  remove: (id, applyTo) => localOperation((data) => localDelete(data, id, applyTo)),
  isDemo: (id) => isLocalDemo(localData(), id)
}

export const accountSource: CalendarSource = {
  mode: 'account',
  range: async (from, to) => await api<CalendarEvent[]>('/event', { query: { start: from.toISOString(), end: to.toISOString() } }),
  get: async (id) => await api<CalendarEvent>(`/event/${id}`),
  create: async (change) => { await api('/event', { method: 'POST', body: change }) },
  replace: async (id, change) => { await api(`/event/${id}`, { method: 'PUT', body: change }) },
  remove: async (id, applyTo) => { await api(`/event/${id}`, { method: 'DELETE', ...(applyTo === undefined ? {} : { query: { applyTo } }) }) },
  isDemo: () => false
}

export function currentSource (): CalendarSource {
  return session.get().status === 'signedIn' ? accountSource : localSource
}

export const queryClient = new QueryClient({
  defaultOptions: { queries: { staleTime: 60_000, retry: 1, refetchOnWindowFocus: false, refetchOnReconnect: true } }
})

export function eventsKey (mode: Mode, from: Date, to: Date): QueryKey {
  return ['events', mode, from.toISOString(), to.toISOString()]
}

export interface EventsResult {
  events: CalendarEvent[]
  loading: boolean
  error: Error | null
}

/** The events of [from, to) from the current source, kept fresh by the cache. */
export function useEvents (mode: Mode, from: Date, to: Date): EventsResult {
  const source = mode === 'account' ? accountSource : localSource
  const options = useMemo((): QueryObserverOptions<CalendarEvent[], Error, CalendarEvent[], CalendarEvent[], QueryKey> => ({
    queryKey: eventsKey(mode, from, to),
    queryFn: async () => await source.range(from, to),
    // Moving to the next day keeps the grid filled until its events arrive.
    placeholderData: keepPreviousData
  }), [mode, from.getTime(), to.getTime()])
  const observer = useMemo(() => new QueryObserver<CalendarEvent[]>(queryClient, options), [])
  const [result, setResult] = useState(() => observer.getOptimisticResult(queryClient.defaultQueryOptions(options)))
  useEffect(() => {
    observer.setOptions(options)
    setResult(observer.getOptimisticResult(queryClient.defaultQueryOptions(options)))
  }, [options])
  useEffect(() => observer.subscribe(setResult), [observer])
  return { events: result.data ?? [], loading: result.isLoading, error: result.error }
}

export function invalidateEvents (key?: QueryKey): Promise<void> {
  return queryClient.invalidateQueries({ queryKey: key ?? ['events'], ...(key === undefined ? {} : { exact: true }) })
}

/** Messages shown to the user for a while (write failures, sign-in carry-over outcome). */
export const notices = createStore<Array<{ id: number, text: string, tone: 'info' | 'error' }>>([])
let noticeId = 0
export function notify (text: string, tone: 'info' | 'error' = 'info'): void {
  const id = ++noticeId
  notices.set((list) => [...list.slice(-2), { id, text, tone }])
  setTimeout(() => notices.set((list) => list.filter((notice) => notice.id !== id)), 6000)
}

function overlaps (event: CalendarEvent, from: string, to: string): boolean {
  return eventStart(event, userZone).toMillis() < Date.parse(to) && eventEnd(event, userZone).toMillis() > Date.parse(from)
}

function asEvent (change: EventChange, id: string): CalendarEvent {
  const { user: _user, lastUpdated: _lastUpdated, ...fields } = change
  return { title: '', isAllDay: false, timeZone: 'UTC', status: 'confirmed', origin: 'compass', priority: 'unassigned', ...fields, _id: id }
}

/** The cached lists as they will be once the plan is applied (as far as it can be known here). */
function optimistic (list: CalendarEvent[], key: QueryKey, plan: EditPlan): CalendarEvent[] {
  const [, , from, to] = key as [string, string, string, string]
  const seriesOfPlan = plan.kind === 'replace' ? plan.id : null
  switch (plan.kind) {
    case 'create': {
      const event = asEvent(plan.change, plan.change._id as string)
      return overlaps(event, from, to) ? [...list, event] : list
    }
    case 'replace': {
      const replaced = list.flatMap((event) => {
        if (event._id !== plan.id) return [event]
        const next = { ...event, ...asEvent(plan.change, event._id) }
        return overlaps(next, from, to) ? [next] : []
      })
      // A whole series changes: its occurrences are recomputed by the refetch.
      return replaced.filter((event) => seriesOfPlan === null || event._id === plan.id || seriesIdOf(event) !== seriesOfPlan || event.recurrence?.eventId === undefined)
    }
    case 'split': {
      const cut = list.find((event) => event._id === plan.deleteId)
      const seriesId = cut === undefined ? null : seriesIdOf(cut)
      const cutAt = cut === undefined ? Infinity : eventStart(cut, userZone).toMillis()
      const kept = list.filter((event) => seriesId === null || seriesIdOf(event) !== seriesId || eventStart(event, userZone).toMillis() < cutAt)
      const created = asEvent(plan.create, plan.create._id as string)
      return overlaps(created, from, to) ? [...kept, created] : kept
    }
  }
}

function optimisticDelete (list: CalendarEvent[], target: CalendarEvent, applyTo: ApplyTo): CalendarEvent[] {
  const seriesId = seriesIdOf(target)
  if (seriesId === null || applyTo === 'this') return list.filter((event) => event._id !== target._id)
  const cutAt = eventStart(target, userZone).toMillis()
  return list.filter((event) => seriesIdOf(event) !== seriesId || (applyTo === 'thisAndFollowing' && eventStart(event, userZone).toMillis() < cutAt))
}

async function write (update: (list: CalendarEvent[], key: QueryKey) => CalendarEvent[], request: () => Promise<void>): Promise<boolean> {
  const mode = currentSource().mode
  await queryClient.cancelQueries({ queryKey: ['events', mode] })
  for (const query of queryClient.getQueryCache().findAll({ queryKey: ['events', mode] })) {
    const list = query.state.data as CalendarEvent[] | undefined
    if (list !== undefined) queryClient.setQueryData(query.queryKey, update(list, query.queryKey))
  }
  try {
    await request()
    return true
  } catch (error) {
    notify(describeError(error), 'error')
    return false
  } finally {
    // Confirmation (or the undo of a refused write) comes from a read, not from the stream.
    await invalidateEvents()
  }
}

export function describeError (error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === 'CONNECTION_REVOKED') return 'The calendar connection was revoked. Reconnect it to change this event.'
    if (error.code === 'MAINTENANCE') return 'Provider calendars are in maintenance. Try again later.'
    if (error.status === 401) return 'Your session has ended. Please sign in again.'
    return `The change was not saved: ${error.message}`
  }
  return `The change was not saved: ${error instanceof Error ? error.message : String(error)}`
}

export async function applyPlan (plan: EditPlan): Promise<boolean> {
  const source = currentSource()
  return await write((list, key) => optimistic(list, key, plan), async () => {
    switch (plan.kind) {
      case 'create': return await source.create(plan.change)
      case 'replace': return await source.replace(plan.id, plan.change)
      case 'split': {
        const demo = source.isDemo(plan.deleteId)
        await source.remove(plan.deleteId, 'thisAndFollowing')
        return await source.create(plan.create, { demo })
      }
    }
  })
}

export async function deleteEvent (event: CalendarEvent, applyTo: ApplyTo): Promise<boolean> {
  const source = currentSource()
  return await write((list) => optimisticDelete(list, event, applyTo), async () => await source.remove(event._id, seriesIdOf(event) === null ? undefined : applyTo))
}

let carrying: Promise<boolean> | null = null

/**
 * After a session is created, and before a calendar connect leaves for the provider: the user's
 * local events go to the account (demo events skipped, edited or not), then events are refetched.
 * What fails stays local and is tried again at the next sign-in, load or connect. Resolves true
 * when nothing is left to carry; callers that start together share one run.
 */
export async function carryLocalEvents (): Promise<boolean> {
  carrying ??= carryOnce().finally(() => { carrying = null })
  return await carrying
}

async function carryOnce (): Promise<boolean> {
  try {
    const data = loadLocalData(local)
    const batches = carrySelection(data)
    if (batches.length === 0) return true
    const count = batches.reduce((sum, batch) => sum + batch.length, 0)
    try {
      for (const batch of batches) await api('/event', { method: 'POST', body: batch })
      saveLocalData(local, afterCarry(loadLocalData(local)))
      notify(count === 1 ? 'Your event from this browser is now in your account.' : `Your ${count} events from this browser are now in your account.`)
      return true
    } catch (error) {
      notify(`Your events from this browser could not be added to your account yet: ${error instanceof Error ? error.message : String(error)}`, 'error')
      return false
    }
  } finally {
    await queryClient.invalidateQueries({ queryKey: ['events'] })
  }
}
