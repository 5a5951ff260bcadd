// What the sign-in dialogs say when the server refuses for now (429): the wait it gives, in the
// largest unit that reads naturally. Retry-After is seconds or an HTTP date (RFC 9110, 10.2.3),
// read by the one parser the services use.
import { retryAfterMs } from '../../../lib/backoff.js'

export function waitFromRetryAfter (header: string | null, now = Date.now()): number | undefined {
  const ms = retryAfterMs(header, new Date(now))
  return ms === null ? undefined : Math.max(1, Math.ceil(ms / 1000))
}

export function tooManyAttemptsMessage (seconds: number | undefined): string {
  if (seconds === undefined) return 'Too many attempts. Please try again later.'
  if (seconds < 60) return `Too many attempts. Try again in ${seconds} ${seconds === 1 ? 'second' : 'seconds'}.`
  const minutes = Math.ceil(seconds / 60)
  return `Too many attempts. Try again in ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}.`
}

/** A failed range read as the query cache sees it: `status` null when no answer came. */
export interface ReadFailure {
  status: number | null
  code?: string | undefined
  retryAfter: string | null
}

/** The server's own wait is kept to this many times, and only when it is this short; a reader waits no longer. */
export const READ_RETRIES_WHEN_ASKED = 3
export const MAX_READ_WAIT_MS = 60_000

/**
 * The wait (ms) an answer asks for before the same request is sent again, or null when it asks for
 * none: a 429, or a 503 (the service shedding load, its database away), with a Retry-After.
 * Maintenance is not such a wait: it lasts as long as an operator wants.
 */
export function askedWaitMs (failure: { status: number, code?: string | undefined, retryAfter?: string | null | undefined }, now = Date.now()): number | null {
  if ((failure.status !== 429 && failure.status !== 503) || failure.code === 'MAINTENANCE') return null
  return retryAfterMs(failure.retryAfter ?? null, new Date(now))
}

/**
 * How long to wait before reading again after the `failureCount`-th failure (0 for the first), or
 * null to show the failure. An answer asking for a wait (askedWaitMs) is read again when the
 * server said; an answer without one, or no answer, once after a second; a refusal (4xx) or
 * maintenance never, as asking again gets the same answer.
 */
export function readRetryWait (failureCount: number, failure: ReadFailure, now = Date.now()): number | null {
  const once = failureCount < 1 ? 1000 : null
  if (failure.status === null) return once
  if (failure.code === 'MAINTENANCE') return null
  const asked = askedWaitMs({ ...failure, status: failure.status }, now)
  if (asked !== null) return failureCount < READ_RETRIES_WHEN_ASKED && asked <= MAX_READ_WAIT_MS ? asked : null
  return failure.status >= 500 ? once : null
}
