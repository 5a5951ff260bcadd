// Where events come from: the account (the events API) when signed in, browser storage when not.
// Both answer the same operations, so the views and the edit plans do not care which one is in use.
// Queries and their invalidation are TanStack Query's; writes are applied to the cached lists at
// once and confirmed by a refetch when the request returns, never by waiting for the stream. The
// account's reads are kept in the browser (data/last-known.ts) and shown, marked, when no answer comes.
import { QueryObserver, keepPreviousData, type QueryKey, type QueryObserverOptions } from '@tanstack/query-core'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { DateTime } from 'luxon'
import { api, ApiError } from './api.js'
import { session } from './session.js'
import { createStore, useStore } from './store.js'
import { browserStore } from './browser-store.js'
import { afterCarry, carrySelection, demoEvents, loadLocalData, saveLocalData, withDemoSeed, type LocalData } from '../lib/local-events.js'
import { isLocalDemo, localCreate, localDelete, localGet, localRange, localReplace } from '../lib/local-calendar.js'
import { seriesIdOf, type ApplyTo, type CalendarEvent, type EventChange } from '../lib/events.js'
import type { EditPlan } from '../lib/series-edit.js'
import { applyEffect, type Effect } from '../lib/optimistic.js'
import { unsentOf, type PendingData } from '../lib/pending-writes.js'
import { needsSeries, undoOf, type Undo } from '../lib/undo.js'
import { applyToCache, EVENTS_STALE_MS, invalidateEvents, queryClient, rangeOfKey, userZone } from './query.js'
import { keepRead, keyText, lastKnownShown, markShown, readKept } from './last-known.js'
import { pendingWrites, submitWrite, WriteNotKeptError } from './pending.js'
import { pushUndo, takeUndo } from './undo.js'

export { invalidateEvents, queryClient, userZone }

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

const localSource: CalendarSource = {
  mode: 'local',
  range: async (from, to) => localRange(localData(), from, to),
  get: async (id) => localGet(localData(), id),
  create: (change, options) => localOperation((data) => localCreate(data, change, Date.now(), options)),
  replace: (id, change) => localOperation((data) => localReplace(data, id, change)),
  remove: (id, applyTo) => localOperation((data) => localDelete(data, id, applyTo)),
  isDemo: (id) => isLocalDemo(localData(), id)
}

const accountSource: CalendarSource = {
  mode: 'account',
  range: async (from, to) => {
    const state = session.get()
    const userId = state.status === 'signedIn' ? state.userId : null
    const key = keyText(eventsKey('account', from, to))
    try {
      const events = await api<CalendarEvent[]>('/event', { query: { start: from.toISOString(), end: to.toISOString() } })
      if (userId !== null) keepRead(userId, { from, to }, events)
      markShown(key, null)
      return events
    } catch (error) {
      // fetch rejects only when no answer came: the events as this account last read them, marked
      // as such; the query reads again when the browser is back online or the stream reopens.
      if (error instanceof ApiError) throw error
      const kept = userId === null ? null : readKept(userId, { from, to }, userZone)
      if (kept !== null) {
        markShown(key, kept.readAt)
        return kept.events
      }
      throw new Error('no connection. They load when the connection returns.')
    }
  },
  get: async (id) => await api<CalendarEvent>(`/event/${id}`),
  create: async (change) => { await api('/event', { method: 'POST', body: change }) },
  replace: async (id, change) => { await api(`/event/${id}`, { method: 'PUT', body: change }) },
  remove: async (id, applyTo) => { await api(`/event/${id}`, { method: 'DELETE', ...(applyTo === undefined ? {} : { query: { applyTo } }) }) },
  isDemo: () => false
}

export function currentSource (): CalendarSource {
  return session.get().status === 'signedIn' ? accountSource : localSource
}

function eventsKey (mode: Mode, from: Date, to: Date): QueryKey {
  return ['events', mode, from.toISOString(), to.toISOString()]
}

export interface EventsResult {
  events: CalendarEvent[]
  loading: boolean
  error: Error | null
  /** The events shown are the account's as last read at this time (no answer from the server), or null. */
  lastKnownAt: number | null
}

/** The ranges shown from the kept copy are read again (the server answers again: the stream reopened). */
export function refetchLastKnown (): void {
  for (const key of lastKnownShown.get().keys()) invalidateEvents(JSON.parse(key) as QueryKey).catch(() => {})
}

/**
 * The events of [from, to) from the source of `mode`, kept fresh by the cache, with the account's
 * unsent writes drawn over them. `mode` null: whether anyone is signed in is not known yet, and
 * nothing is read or drawn (neither the signed-out calendar under a signed-in header nor the reverse).
 */
export function useEvents (mode: Mode | null, from: Date, to: Date): EventsResult {
  const source = mode === 'account' ? accountSource : localSource
  const options = useMemo((): QueryObserverOptions<CalendarEvent[], Error, CalendarEvent[], CalendarEvent[], QueryKey> => ({
    queryKey: eventsKey(mode ?? 'local', from, to),
    queryFn: async () => await source.range(from, to),
    enabled: mode !== null,
    // The account's reads answer without a connection too (from the kept copy), which counts as
    // stale at once, so the connection coming back reads the range again.
    networkMode: mode === 'account' ? 'always' : 'online',
    staleTime: (query) => lastKnownShown.get().has(keyText(query.queryKey)) ? 0 : EVENTS_STALE_MS,
    // Moving to the next day keeps the grid filled until its events arrive; a sign-in or sign-out
    // does not (one calendar's events are never drawn under the other's header).
    placeholderData: (previous, previousQuery) => previousQuery?.queryKey[1] === (mode ?? 'local') ? keepPreviousData(previous) : undefined
  }), [mode, from.getTime(), to.getTime()])
  const observer = useMemo(() => new QueryObserver<CalendarEvent[]>(queryClient, options), [])
  const [result, setResult] = useState(() => observer.getOptimisticResult(queryClient.defaultQueryOptions(options)))
  const pending = useStore(pendingWrites)
  const shownFromCopy = useStore(lastKnownShown)
  useEffect(() => {
    observer.setOptions(options)
    setResult(observer.getOptimisticResult(queryClient.defaultQueryOptions(options)))
  }, [options])
  useEffect(() => observer.subscribe(setResult), [observer])
  const data = result.data
  const events = useMemo(() => mode === null ? [] : withPending(mode, data ?? [], { from, to }, pending), [data, pending, mode, from.getTime(), to.getTime()])
  const lastKnownAt = mode === 'account' ? shownFromCopy.get(keyText(options.queryKey)) ?? null : null
  return { events, loading: mode === null || result.isLoading, error: result.error, lastKnownAt }
}

/** Messages shown to the user for a while (write failures, sign-in carry-over outcome). */
export const notices = createStore<Array<{ id: number, text: string, tone: 'info' | 'error' }>>([])
let noticeId = 0
export function notify (text: string, tone: 'info' | 'error' = 'info'): void {
  const id = ++noticeId
  notices.set((list) => [...list.slice(-2), { id, text, tone }])
  // An error stays until the person dismisses it: one that went while they looked elsewhere (a
  // connect refused on the way back from the provider) would leave them guessing what happened.
  if (tone === 'info') setTimeout(() => { dismissNotice(id) }, 6000)
}

export function dismissNotice (id: number): void {
  notices.set((list) => list.filter((notice) => notice.id !== id))
}

/** The event as a shown list of the mode has it now, pending writes included. */
function shownEvent (mode: Mode, id: string): CalendarEvent | null {
  for (const query of queryClient.getQueryCache().findAll({ queryKey: ['events', mode] })) {
    const list = withPending(mode, (query.state.data ?? []) as CalendarEvent[], rangeOfKey(query.queryKey))
    const found = list.find((event) => event._id === id)
    if (found !== undefined) return found
  }
  return null
}

/** The account's unsent writes drawn over a list read from the server. */
function withPending (mode: Mode, list: CalendarEvent[], range: { from: Date, to: Date }, data: PendingData = pendingWrites.get()): CalendarEvent[] {
  const state = session.get()
  if (mode !== 'account' || state.status !== 'signedIn') return list
  let shown = list
  for (const write of unsentOf(data, state.userId)) {
    shown = applyEffect(shown, write.effect, range, userZone, write.state === 'waiting' || write.state === 'failed')
  }
  return shown
}

async function undoFor (effect: Effect, source: CalendarSource): Promise<Undo | null> {
  const before = effect.kind === 'delete' ? effect.event : effect.plan.kind === 'replace' ? shownEvent(source.mode, effect.plan.id) : null
  const seriesId = needsSeries(effect) ?? (effect.kind === 'plan' && effect.plan.kind === 'replace' && before === null ? effect.plan.id : null)
  let series: CalendarEvent | null = null
  if (seriesId !== null) {
    try {
      series = await source.get(seriesId)
    } catch {
      // Not known here (offline, or gone): the change is made, without an undo.
    }
  }
  return undoOf(effect, { before, series })
}

async function writeLocally (effect: Effect, demo: boolean): Promise<boolean> {
  await queryClient.cancelQueries({ queryKey: ['events', 'local'] })
  applyToCache('local', effect)
  try {
    if (effect.kind === 'delete') {
      await localSource.remove(effect.event._id, seriesIdOf(effect.event) === null ? undefined : effect.applyTo)
    } else {
      const plan = effect.plan
      switch (plan.kind) {
        case 'create': await localSource.create(plan.change, { demo }); break
        case 'replace': await localSource.replace(plan.id, plan.change); break
        case 'split': {
          const splitDemo = localSource.isDemo(plan.deleteId)
          await localSource.remove(plan.deleteId, 'thisAndFollowing')
          await localSource.create(plan.create, { demo: splitDemo })
        }
      }
    }
    return true
  } catch (error) {
    notify(describeError(error), 'error')
    return false
  } finally {
    await invalidateEvents(['events', 'local'])
  }
}

/**
 * One change from the dialog, a drag or an undo. Signed in, it is kept and sent (see data/pending.ts);
 * signed out, it is written to browser storage. With `record`, its undo is offered.
 */
async function makeChange (effect: Effect, options: { record: boolean, demo?: boolean }): Promise<boolean> {
  const source = currentSource()
  const undo = options.record ? await undoFor(effect, source) : null
  const demo = effect.kind === 'delete' ? source.isDemo(effect.event._id) : effect.plan.kind === 'replace' ? source.isDemo(effect.plan.id) : false
  let ok = true
  if (source.mode === 'account') {
    try {
      await submitWrite(effect)
    } catch (error) {
      // Not kept, so not made: said, where a move or a closed dialog would otherwise drop it unseen.
      if (!(error instanceof WriteNotKeptError)) throw error
      notify(describeError(error), 'error')
      ok = false
    }
  } else ok = await writeLocally(effect, options.demo ?? false)
  if (ok && undo !== null) pushUndo({ ...undo, demo, mode: source.mode })
  return ok
}

function describeError (error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === 'CONNECTION_REVOKED') return 'The calendar connection was revoked. Reconnect it to change this event.'
    if (error.code === 'MAINTENANCE') return 'Provider calendars are in maintenance. Try again later.'
    if (error.status === 401) return 'Your session has ended. Please sign in again.'
    return `The change was not saved: ${error.message}`
  }
  return `The change was not saved: ${error instanceof Error ? error.message : String(error)}`
}

export async function applyPlan (plan: EditPlan): Promise<boolean> {
  return await makeChange({ kind: 'plan', plan }, { record: true })
}

export async function deleteEvent (event: CalendarEvent, applyTo: ApplyTo): Promise<boolean> {
  return await makeChange({ kind: 'delete', event, applyTo: seriesIdOf(event) === null ? 'this' : applyTo }, { record: true })
}

/** Takes back the newest change (or the one named), by sending the change that restores it. */
export async function undo (id?: number): Promise<boolean> {
  const entry = takeUndo(id)
  if (entry === null) return false
  if (entry.mode !== currentSource().mode) return false
  for (const [index, effect] of entry.inverse.entries()) {
    if (await makeChange(effect, { record: false, demo: entry.demo })) continue
    // Nothing of it was made: it can be asked for again (once the browser has room, say).
    if (index === 0) pushUndo({ label: entry.label, inverse: entry.inverse, demo: entry.demo, mode: entry.mode })
    return false
  }
  notify(`Undone: ${entry.label.toLowerCase()}.`)
  return true
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
  const data = loadLocalData(local)
  const batches = carrySelection(data)
  // Nothing to carry: the lists are not read again (a signed-in load would read its range twice).
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
  } finally {
    await queryClient.invalidateQueries({ queryKey: ['events'] })
  }
}
