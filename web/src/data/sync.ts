// The one stream of this tab, the sync/import status it feeds, and the refresh shared by the
// manual button and focus refresh.
import { apiUrl } from '../config.js'
import { api, ApiError } from './api.js'
import { attemptRefresh, endSession } from './session.js'
import { createStore } from './store.js'
import { invalidateEvents, notify, queryClient, refetchLastKnown } from './calendar.js'
import { refreshCalendars } from './calendars.js'
import { EMPTY_SYNC_VIEW, primaryConnection, queriesToRefetch, reactTo, type Refetch, type SyncView } from '../lib/stream-reactions.js'
import { createCoalescer, type Timers } from '../lib/coalesce.js'
import { createFocusRefresh, createRefreshCoordinator, type RefreshOptions } from '../lib/focus-refresh.js'
import { savePendingConnect, type ConnectIntent } from '../lib/oauth.js'
import type { ServerMessage } from '../../../schemas/server-message.js'
import type { CalendarEvent } from '../lib/events.js'

export type StreamStatus = 'off' | 'connecting' | 'open' | 'retrying'

export const syncView = createStore<SyncView>(EMPTY_SYNC_VIEW)
export const streamStatus = createStore<StreamStatus>('off')

function mergeRefetch (a: Refetch, b: Refetch): Refetch {
  if (a === null) return b
  if (b === null) return a
  if (a.all || b.all) return { all: true }
  return { all: false, eventIds: [...new Set([...a.eventIds, ...b.eventIds])] }
}

const timers: Timers = { now: () => Date.now(), setTimeout: (callback, ms) => setTimeout(callback, ms), clearTimeout: (handle) => clearTimeout(handle as number) }

const wakeUps = createCoalescer<Refetch>({
  timers,
  merge: mergeRefetch,
  run: (refetch) => {
    const cached = queryClient.getQueryCache().findAll({ queryKey: ['events', 'account'] }).map((query) => ({
      key: query.queryKey,
      eventIds: ((query.state.data ?? []) as CalendarEvent[]).map((event) => event._id)
    }))
    for (const key of queriesToRefetch(refetch, cached)) invalidateEvents(key).catch(() => {})
  }
})

// An import's calendars each say calendarsChanged: the list is read once per window.
const calendarWakeUps = createCoalescer<true>({ timers, merge: () => true, run: () => { refreshCalendars().catch(() => {}) } })

let source: EventSource | null = null
let retryTimer: ReturnType<typeof setTimeout> | undefined
let connecting: string | null = null

/**
 * A connect without a redirect is in flight (or over: null): the stream may report the new
 * connection before the request answers, and its messages do not name the provider.
 */
export function expectConnection (provider: string | null): void {
  connecting = provider
}

function handle (message: ServerMessage): void {
  const reaction = reactTo(syncView.get(), message, connecting ?? undefined)
  syncView.set(reaction.sync)
  if (reaction.refetch !== null) wakeUps.push(reaction.refetch)
  if (reaction.calendars === true) calendarWakeUps.push(true)
}

/** Opens this tab's stream (once); the browser reconnects on its own after drops (retry: 5000). */
export function openStream (): void {
  if (source !== null) return
  clearTimeout(retryTimer)
  const stream = new EventSource(`${apiUrl}/events/stream`, { withCredentials: true })
  source = stream
  streamStatus.set('connecting')
  stream.onopen = () => {
    streamStatus.set('open')
    // The server answers again: what was shown as last read is read anew.
    refetchLastKnown()
  }
  stream.onmessage = (event: MessageEvent<string>) => {
    try {
      handle(JSON.parse(event.data) as ServerMessage)
    } catch {
      // A frame this client cannot read is skipped; the next refetch catches up.
    }
  }
  stream.onerror = () => {
    if (stream.readyState !== EventSource.CLOSED) {
      streamStatus.set('retrying')
      return
    }
    // Closed for good: most often a 401 once the access token expired. Refresh, then reopen.
    source = null
    streamStatus.set('retrying')
    attemptRefresh().then((alive) => {
      if (!alive) {
        endSession()
        return
      }
      retryTimer = setTimeout(openStream, 1000)
    }).catch(() => { retryTimer = setTimeout(openStream, 5000) })
  }
}

export function closeStream (): void {
  clearTimeout(retryTimer)
  source?.close()
  source = null
  wakeUps.cancel()
  calendarWakeUps.cancel()
  streamStatus.set('off')
  syncView.set(EMPTY_SYNC_VIEW)
}

/**
 * The refresh behind the manual button and focus refresh: ask the service to pull the user's
 * connections now, then read the events again. The endpoint is `POST /api/connections/refresh`.
 */
async function refreshConnections (options: RefreshOptions): Promise<void> {
  try {
    if (primaryConnection(syncView.get()) !== null) await api('/connections/refresh', { method: 'POST', body: {} })
  } catch (error) {
    if (!options.silent && !(error instanceof ApiError && error.status === 404)) {
      notify(`Refresh failed: ${error instanceof Error ? error.message : String(error)}`, 'error')
    }
  } finally {
    // The refresh only queues a pull (`{ queued }`): what it brings arrives as eventsChanged on an
    // open stream, which reads the ranges holding it. A silent refresh as the page loads would
    // otherwise read the range it has just read; the button (or no open stream) reads again.
    if (!options.silent || streamStatus.get() !== 'open') await invalidateEvents()
  }
}

export const refreshCoordinator = createRefreshCoordinator(refreshConnections)

const focusRefresh = createFocusRefresh({ coordinator: refreshCoordinator, clock: { now: () => Date.now() } })

export function wireFocusRefresh (): () => void {
  const onVisibility = () => focusRefresh.visibility(document.visibilityState === 'hidden' ? 'hidden' : 'visible')
  document.addEventListener('visibilitychange', onVisibility)
  const unsubscribe = syncView.subscribe((view) => focusRefresh.connectionStatus(primaryConnection(view)?.status ?? null))
  return () => {
    document.removeEventListener('visibilitychange', onVisibility)
    unsubscribe()
  }
}

/**
 * A connect or a reconnect through the Sync service (`POST /api/auth/connections/begin`): it starts
 * the authorization and the browser follows; the way back says how it went (`status`, `cid`).
 */
export async function beginConnection (body: { provider: 'google' | 'microsoft', intent: ConnectIntent, connectionId?: string }): Promise<void> {
  const answer = await api<{ authorizationUrl: string }>('/auth/connections/begin', { method: 'POST', body })
  savePendingConnect(sessionStorage, body.intent, Date.now(), `${location.pathname}${location.search}`)
  location.assign(answer.authorizationUrl)
}

/** Reconnect (revoked grant): the Sync service starts the authorization; the browser follows. */
export async function startReconnect (connectionId: string): Promise<void> {
  await beginConnection({ provider: 'google', intent: 'reconnect', connectionId })
}
