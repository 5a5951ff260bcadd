// The one retry delay of the code base: exponential growth with "full jitter" (a uniformly random
// delay between zero and the capped exponential), which spreads the retries of many processes
// that failed together better than a fixed or half-random delay does.

export interface BackoffPolicy {
  /** Ceiling of the first retry's delay. */
  baseMs: number
  /** No delay is ever longer than this. */
  capMs: number
}

/**
 * Delay before retry number `attempt` (0 for the first retry after the first failure).
 * `random` returns a number in [0, 1), as Math.random does; tests pass their own.
 */
export function backoffDelay (attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(Math.max(attempt, 0), 30))
  return Math.max(1, Math.round(random() * ceiling))
}
