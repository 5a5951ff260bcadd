// Focus refresh (specification, "Client reactions"): the same refresh as the manual button,
// (a) once when a refreshable connection becomes available after mount, and (b) whenever the tab
// becomes visible after being hidden at least 30 seconds; only for HEALTHY or ATTENTION
// connections, always `silent: true`, and through one coordinator shared with manual clicks so
// requests coalesce. Time comes from an injected clock so tests control it.

export type ClientConnectionStatus = 'HEALTHY' | 'ATTENTION' | 'SYNCING' | 'IMPORTING' | 'RECONNECT_REQUIRED' | 'DISCONNECTED'

export const FOCUS_HIDDEN_THRESHOLD_MS = 30_000

export interface RefreshOptions { silent: boolean }

export interface Clock { now: () => number }

export interface RefreshCoordinator {
  /** Starts a refresh, or joins the one in flight. */
  run: (options: RefreshOptions) => Promise<void>
  readonly inFlight: boolean
}

/**
 * One refresh at a time: a request while one runs joins it instead of starting another. A manual
 * (non-silent) request that joins a silent one still gets its outcome, so it can show an error.
 */
export function createRefreshCoordinator (refresh: (options: RefreshOptions) => Promise<void>): RefreshCoordinator {
  let current: Promise<void> | null = null
  return {
    run (options) {
      if (current !== null) return current
      const started = (async () => {
        try {
          await refresh(options)
        } finally {
          current = null
        }
      })()
      current = started
      return started
    },
    get inFlight () { return current !== null }
  }
}

function isRefreshable (status: ClientConnectionStatus | null): boolean {
  return status === 'HEALTHY' || status === 'ATTENTION'
}

export interface FocusRefresh {
  /** The current status of the user's refreshable connection (null: none). */
  connectionStatus: (status: ClientConnectionStatus | null) => void
  /** `document.visibilityState` changed. */
  visibility: (state: 'visible' | 'hidden') => void
}

export function createFocusRefresh (options: {
  coordinator: RefreshCoordinator
  clock: Clock
  hiddenThresholdMs?: number
  /** Errors of a silent refresh are not shown; they go here (logging). */
  onSilentError?: (error: unknown) => void
}): FocusRefresh {
  const threshold = options.hiddenThresholdMs ?? FOCUS_HIDDEN_THRESHOLD_MS
  let status: ClientConnectionStatus | null = null
  let mountRefreshDone = false
  let hiddenSince: number | null = null

  function refresh (): void {
    options.coordinator.run({ silent: true }).catch((error: unknown) => options.onSilentError?.(error))
  }

  return {
    connectionStatus (next) {
      status = next
      if (!mountRefreshDone && isRefreshable(next)) {
        mountRefreshDone = true
        refresh()
      }
    },
    visibility (state) {
      if (state === 'hidden') {
        hiddenSince ??= options.clock.now()
        return
      }
      const since = hiddenSince
      hiddenSince = null
      if (since === null) return
      if (options.clock.now() - since >= threshold && isRefreshable(status)) refresh()
    }
  }
}
