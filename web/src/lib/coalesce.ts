// Wake-ups from the stream coalesce on a 5 second cadence (specification, "Limits"): the first
// one in a quiet period runs at once, later ones within the window are merged into one run at
// its end. A burst of feed pages therefore costs at most one refetch per 5 seconds.

export const COALESCE_WINDOW_MS = 5000

export interface Timers {
  now: () => number
  setTimeout: (callback: () => void, ms: number) => unknown
  clearTimeout: (handle: unknown) => void
}

export interface Coalescer<T> {
  push: (item: T) => void
  /** Drops anything waiting (sign-out, closing the tab). */
  cancel: () => void
}

export function createCoalescer<T> (options: {
  timers: Timers
  windowMs?: number
  merge: (a: T, b: T) => T
  run: (item: T) => void
}): Coalescer<T> {
  const windowMs = options.windowMs ?? COALESCE_WINDOW_MS
  let lastRun = -Infinity
  let pending: { item: T } | null = null
  let timer: unknown = null

  function flush (): void {
    timer = null
    if (pending === null) return
    const { item } = pending
    pending = null
    lastRun = options.timers.now()
    options.run(item)
  }

  return {
    push (item) {
      pending = pending === null ? { item } : { item: options.merge(pending.item, item) }
      if (timer !== null) return
      const wait = lastRun + windowMs - options.timers.now()
      if (wait <= 0) {
        flush()
      } else {
        timer = options.timers.setTimeout(flush, wait)
      }
    },
    cancel () {
      if (timer !== null) options.timers.clearTimeout(timer)
      timer = null
      pending = null
    }
  }
}
