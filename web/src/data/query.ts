// The one query cache of the tab (TanStack Query): the shown ranges of events, read again after a
// write, a stream wake-up or a refresh.
import { QueryClient, type QueryKey } from '@tanstack/query-core'
import { applyEffect, type Effect } from '../lib/optimistic.js'
import type { CalendarEvent } from '../lib/events.js'
import { readRetryWait, type ReadFailure } from '../lib/retry-after.js'
import { ApiError } from './api.js'

/**
 * The zone the calendar is shown in: the browser's, until the person's preferences name another
 * (data/preferences.ts sets it). A live binding, so every module reads the zone chosen now.
 */
export let userZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'

export function setUserZone (zone: string): void {
  userZone = zone
}

/** How long a range read stays fresh without a reason to read it again. */
export const EVENTS_STALE_MS = 60_000

function readFailureOf (error: unknown): ReadFailure {
  return error instanceof ApiError ? { status: error.status, code: error.code, retryAfter: error.retryAfter } : { status: null, retryAfter: null }
}

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: EVENTS_STALE_MS,
      retry: (failureCount, error) => readRetryWait(failureCount, readFailureOf(error)) !== null,
      retryDelay: (failureCount, error) => readRetryWait(failureCount, readFailureOf(error)) ?? 0,
      refetchOnWindowFocus: false,
      refetchOnReconnect: true
    }
  }
})

export function invalidateEvents (key?: QueryKey): Promise<void> {
  return queryClient.invalidateQueries({ queryKey: key ?? ['events'], ...(key === undefined ? {} : { exact: true }) })
}

export function rangeOfKey (key: QueryKey): { from: Date, to: Date } {
  const [, , from, to] = key as [string, string, string, string]
  return { from: new Date(from), to: new Date(to) }
}

/** Draws a change into the cached lists of a mode at once; the next read confirms or undoes it. */
export function applyToCache (mode: 'local' | 'account', effect: Effect): void {
  for (const query of queryClient.getQueryCache().findAll({ queryKey: ['events', mode] })) {
    const list = query.state.data as CalendarEvent[] | undefined
    if (list !== undefined) queryClient.setQueryData(query.queryKey, applyEffect(list, effect, rangeOfKey(query.queryKey), userZone))
  }
}
