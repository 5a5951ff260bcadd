// One mechanism for holding a lease while work runs, for both services' leased work (the backend's
// outbox claims a user's reports, Sync's worker a job): the holder renews every third of the lease
// however long one step takes, learns when another holder took the lease over (it lapsed while
// this process stalled), and on ending waits for the renewal under way (never more than one),
// which would otherwise land after the release and hold the lease on. A holder that dies stops renewing and the lease runs out.

export interface LeaseKeeperOptions {
  leaseMs: number
  /** Extends the lease by `leaseMs`; false when it is no longer this holder's. */
  renew: () => Promise<boolean>
  /** A renewal that failed: the lease may still lapse, and the next renewal tries again. */
  onRenewalError: (error: unknown) => void
}

export interface LeaseKeeper {
  /** True once a renewal found the lease taken over; the work should stop. */
  readonly lost: boolean
  /** Stops renewing, once the renewal under way (if any) has ended. */
  end: () => Promise<void>
}

export function keepLease (options: LeaseKeeperOptions): LeaseKeeper {
  let lost = false
  let renewing: Promise<void> | undefined
  const timer = setInterval(() => {
    // One renewal at a time: a slow database is not sent a second, and end() has one to wait for.
    if (renewing !== undefined) return
    renewing = options.renew().then((renewed) => {
      if (!renewed) lost = true
    }, options.onRenewalError).finally(() => { renewing = undefined })
  }, Math.max(1, Math.floor(options.leaseMs / 3)))
  timer.unref()
  return {
    get lost () { return lost },
    end: async () => {
      clearInterval(timer)
      await renewing
    }
  }
}
