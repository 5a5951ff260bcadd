// The one retry delay of the code base: exponential growth with jitter, which spreads the retries
// of many processes that failed together better than a fixed delay does. "Full" jitter (a uniformly
// random delay between zero and the capped exponential) spreads best; "equal" jitter keeps the
// lower half of the ceiling, for callers that must give a struggling server at least that long.

export interface BackoffPolicy {
  /** Ceiling of the first retry's delay. */
  baseMs: number
  /** No delay is ever longer than this. */
  capMs: number
  /** `full` (default): anywhere in (0, ceiling]; `equal`: in [ceiling / 2, ceiling]. */
  jitter?: 'full' | 'equal'
}

/**
 * Delay before retry number `attempt` (0 for the first retry after the first failure).
 * `random` returns a number in [0, 1), as Math.random does; tests pass their own.
 */
export function backoffDelay (attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(Math.max(attempt, 0), 30))
  const spread = policy.jitter === 'equal' ? ceiling / 2 + random() * ceiling / 2 : random() * ceiling
  return Math.max(1, Math.round(spread))
}

/**
 * What a `Retry-After` header asks for, in milliseconds from `now` (RFC 9110, 10.2.3: a number of
 * seconds or an HTTP date); null when the header is absent or says neither. A date in the past is 0.
 */
export function retryAfterMs (header: string | null | undefined, now: Date): number | null {
  const value = header?.trim()
  if (value === undefined || value === '') return null
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const at = Date.parse(value)
  if (Number.isNaN(at) || !/[A-Za-z]/.test(value)) return null
  return Math.max(0, at - now.getTime())
}
