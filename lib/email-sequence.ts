// The welcome sequence of the email block (specification, "Optional integrations": email), as
// plain rules: which steps a new account gets and when, what the poller does with a row it has
// claimed, and how a failed send is retried. plugins/app/email.ts applies them to the database.
import { backoffDelay, type BackoffPolicy } from './backoff.js'
import { isEmailAllowed } from './config-rules.js'

export type ScheduleProfile = 'real' | 'fast'
export type EmailStepKey = 'welcome' | 'shortcuts' | 'connect-calendar' | 'booking'

export interface EmailStep {
  key: EmailStepKey
  /** Days after sign-up (minutes under the `fast` profile). */
  day: number
  /** Not sent to a user who already has a provider calendar. */
  skipWhenCalendarConnected?: true
}

export const EMAIL_STEPS: readonly EmailStep[] = [
  { key: 'welcome', day: 0 },
  { key: 'shortcuts', day: 2 },
  { key: 'connect-calendar', day: 5, skipWhenCalendarConnected: true },
  { key: 'booking', day: 9 }
]

/**
 * queued: waiting for its time (or held by the allowlist); sent: the vendor took it; skipped: not
 * for this user (a calendar is already connected); canceled: the user left (unsubscribed, bounced,
 * complained, or the account is gone); failed: the vendor refused it, or five attempts failed;
 * stale: it could not go out within two days of its time, and an old mail is worse than none.
 */
export const EMAIL_SEND_STATES = ['queued', 'sent', 'skipped', 'canceled', 'failed', 'stale'] as const
export type EmailSendState = typeof EMAIL_SEND_STATES[number]

/** One day of the schedule: a real day, or a minute under `fast` (never in production). */
export function dayLength (profile: ScheduleProfile): number {
  return profile === 'fast' ? 60_000 : 86_400_000
}

/** A step this much past its time is not sent any more (two days of the profile). */
export function staleAfterMs (profile: ScheduleProfile): number {
  return 2 * dayLength(profile)
}

/** The row id: a second enrollment of the same user is a duplicate key, never a second mail. */
export function sendRowId (userId: string, step: EmailStepKey): string {
  return `${userId}:${step}`
}

export interface EnrollmentRow {
  _id: string
  userId: string
  step: EmailStepKey
  dueAt: Date
  nextAttemptAt: Date
  state: 'queued'
  attempts: number
  leaseOwner: null
  leaseUntil: null
  enrolledAt: Date
}

/** The rows of a new account, timed from its sign-up (a late enrollment keeps the original times). */
export function enrollmentRows (userId: string, signedUpAt: Date, profile: ScheduleProfile, now: Date): EnrollmentRow[] {
  return EMAIL_STEPS.map((step) => {
    const dueAt = new Date(signedUpAt.getTime() + step.day * dayLength(profile))
    return { _id: sendRowId(userId, step.key), userId, step: step.key, dueAt, nextAttemptAt: dueAt, state: 'queued', attempts: 0, leaseOwner: null, leaseUntil: null, enrolledAt: now }
  })
}

export interface Recipient {
  email: string
  /** Unsubscribed, bounced or complained. */
  suppressed: boolean
  hasProviderCalendar: boolean
}

export type SendDecision =
  | { action: 'send' }
  /** Stays queued and is looked at again on a later tick (the allowlist may be cleared). */
  | { action: 'hold', reason: 'allowlist' }
  | { action: 'finish', state: 'skipped' | 'canceled' | 'stale', reason: string }

/** What the poller does with a row it claimed. */
export function decideSend (input: { step: EmailStepKey, dueAt: Date, now: Date, profile: ScheduleProfile, allowlist: readonly string[], recipient: Recipient | undefined }): SendDecision {
  const { recipient } = input
  if (recipient === undefined) return { action: 'finish', state: 'canceled', reason: 'no account' }
  if (recipient.suppressed) return { action: 'finish', state: 'canceled', reason: 'suppressed' }
  if (input.now.getTime() - input.dueAt.getTime() > staleAfterMs(input.profile)) return { action: 'finish', state: 'stale', reason: 'past due' }
  const step = EMAIL_STEPS.find((candidate) => candidate.key === input.step)
  if (step?.skipWhenCalendarConnected === true && recipient.hasProviderCalendar) return { action: 'finish', state: 'skipped', reason: 'calendar connected' }
  if (!isEmailAllowed(input.allowlist, recipient.email)) return { action: 'hold', reason: 'allowlist' }
  return { action: 'send' }
}

/** 60 s, doubling, capped at 30 min; the fifth failure is final. */
const SEND_RETRY: BackoffPolicy & { maxAttempts: number } = { baseMs: 60_000, capMs: 30 * 60_000, jitter: 'equal', maxAttempts: 5 }

export type FailureOutcome =
  | { state: 'queued', nextAttemptAt: Date, attempts: number }
  | { state: 'failed', attempts: number }

/** After a failed send: retry later, or give up (after five attempts, or at once when the vendor refused the mail itself). */
export function afterFailure (attemptsBefore: number, permanent: boolean, now: Date, random: () => number = Math.random): FailureOutcome {
  const attempts = attemptsBefore + 1
  if (permanent || attempts >= SEND_RETRY.maxAttempts) return { state: 'failed', attempts }
  return { state: 'queued', attempts, nextAttemptAt: new Date(now.getTime() + backoffDelay(attempts - 1, SEND_RETRY, random)) }
}
