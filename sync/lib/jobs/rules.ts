// Retry and self-heal rules of the job queue, as pure functions over plain data.
import { backoffDelay } from '../../../lib/backoff.js'
import type { BackoffPolicy } from '../../../lib/backoff.js'

// The specification's per-attempt retry ladder, kept as a ladder rather than lib/backoff.ts: its
// rungs grow by 4, 5 and 3 (no doubling fits them), and each delay stays within 20 % of its rung,
// so a provider always gets minutes to recover, where full jitter may retry at once.
/** Delay before the next attempt after attempt n (1-based) failed; the length is the attempt budget minus one. */
export const RETRY_LADDER_MS = [30_000, 2 * 60_000, 10 * 60_000, 30 * 60_000] as const
/** Attempts a job gets per budget: the first try plus one per ladder step. */
export const ATTEMPT_BUDGET = RETRY_LADDER_MS.length + 1
/** Each delay is spread by up to this fraction either way, so jobs that failed together do not retry together. */
export const RETRY_JITTER = 0.2
/** Specification, Limits: failed-job cooldown before requeue. */
export const FAILED_JOB_COOLDOWN_MS = 30 * 60_000
/** Specification, Limits: maximum requeues of a failed job. */
export const MAX_REQUEUES = 3

/** `random` returns a number in [0, 1), as Math.random does. */
export function retryDelayMs (failedAttempt: number, random: () => number): number {
  const step = Math.min(Math.max(failedAttempt, 1), RETRY_LADDER_MS.length) - 1
  const base = RETRY_LADDER_MS[step] ?? FAILED_JOB_COOLDOWN_MS
  const spread = (random() * 2 - 1) * RETRY_JITTER
  return Math.round(base * (1 + spread))
}

// A provider that answers "unavailable" (429, 5xx, no answer) is a fact about the provider, not about
// the job that met it: the job keeps its attempt and waits for the connection's next try, which
// follows the provider's health. Exponential from 15 s with equal jitter (a down provider gets at
// least half the step), capped at a minute so writes go out within a minute of the provider
// answering again; Google's documented exponential backoff caps at 32 to 64 s the same way.
export const PROVIDER_BACKOFF: BackoffPolicy = { baseMs: 15_000, capMs: 60_000, jitter: 'equal' }
/** A Retry-After longer than this is read as this: a wrong header must not park a user's writes for days. */
export const MAX_PROVIDER_RETRY_AFTER_MS = 60 * 60_000

/**
 * When to try a provider again after its `streak`-th unavailable answer in a row (1-based): its
 * Retry-After when it sent a longer one, else the capped backoff.
 */
export function providerRetryDelayMs (streak: number, retryAfterMs: number | null, random: () => number, policy: BackoffPolicy = PROVIDER_BACKOFF): number {
  const backoff = backoffDelay(streak - 1, policy, random)
  return retryAfterMs === null ? backoff : Math.max(backoff, Math.min(retryAfterMs, MAX_PROVIDER_RETRY_AFTER_MS))
}

/** A job's provider is unavailable: the job waits for it until `retryAt`, and keeps its attempt. */
export class WaitForProviderError extends Error {
  override name = 'WaitForProviderError'
  readonly retryAt: Date

  constructor (message: string, retryAt: Date) {
    super(message)
    this.retryAt = retryAt
  }
}

export type JobStatus = 'queued' | 'running' | 'failed' | 'exhausted'

export interface SweepFacts {
  status: JobStatus
  failedAt: Date | null
  requeueCount: number
}

export type SweepAction =
  | 'requeue' // failed, cooled down, requeues left: fresh attempt budget
  | 'exhaust' // failed again after the last requeue: needs an operator
  | 'remove' // exhausted, and its connection carries lastReadFailureAt: stop blocking its coalescing key
  | 'none'

export function sweepAction (job: SweepFacts, connection: { lastReadFailureAt: Date | null } | null, now: Date): SweepAction {
  if (job.status === 'failed') {
    if (job.requeueCount >= MAX_REQUEUES) return 'exhaust'
    const failedAt = job.failedAt?.getTime() ?? 0
    return now.getTime() - failedAt >= FAILED_JOB_COOLDOWN_MS ? 'requeue' : 'none'
  }
  if (job.status === 'exhausted' && connection?.lastReadFailureAt) return 'remove'
  return 'none'
}
