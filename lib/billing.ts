import { createHash } from 'node:crypto'
import type { BillingStatus, SubscriptionStatus } from '../schemas/billing.js'

// The billing rules in one place, over plain data (no Fastify, no database, no vendor client).

/** The card-less trial every account gets: new ones at sign-up, older ones on their first visit. */
export const TRIAL_DAYS = 7
const DAY_MS = 24 * 60 * 60 * 1000

/** Stripe refuses a Checkout trial that ends less than 48 hours ahead (subscription_data.trial_end). */
const MIN_CHECKOUT_TRIAL_MS = 48 * 60 * 60 * 1000

/** Stripe's webhook tolerance: a signature older than this is a replay. */
export const WEBHOOK_TOLERANCE_SECONDS = 300

const WRITABLE: ReadonlySet<SubscriptionStatus> = new Set(['trialing', 'active', 'past_due'])
const NEEDS_PAYMENT_METHOD: ReadonlySet<SubscriptionStatus> = new Set(['past_due', 'unpaid', 'incomplete'])
/** A subscription in one of these still exists, so a second checkout would bill twice. */
const LIVE: ReadonlySet<SubscriptionStatus> = new Set(['trialing', 'active', 'past_due', 'unpaid', 'paused', 'incomplete'])

/** What the backend keeps per user; written whole at the trial's start, then kept in step with Stripe. */
export interface BillingRecord {
  trialEndsAt: Date
  customerId?: string
  subscriptionId?: string
  /** Stripe's status of that subscription, as last re-fetched from Stripe. */
  subscriptionStatus?: SubscriptionStatus
  subscriptionTrialEnd?: Date | null
  currentPeriodEnd?: Date | null
  cancelAtPeriodEnd?: boolean
  /** Set by invoice.payment_failed (re-fetched open invoice); cleared by a paid invoice. */
  paymentFailed?: boolean
}

/**
 * The keys a trial is claimed by: the verified email and each provider account a user proved.
 * One trial per key, whichever user ids it passes through (an account deleted and made again, a
 * second account signed in with the same Google account). Kept as SHA-256, so a deleted user's
 * address is not kept in clear for it. An unverified address claims nothing: anyone could type
 * someone else's and spend their trial.
 */
export function trialClaimIds (proven: { verifiedEmail?: string, providerAccounts: ReadonlyArray<{ provider: string, accountId: string }> }): string[] {
  const keys = [
    ...(proven.verifiedEmail === undefined ? [] : [`email:${proven.verifiedEmail.trim().toLowerCase()}`]),
    ...proven.providerAccounts.map((account) => `${account.provider}:${account.accountId}`)
  ]
  return keys.map((key) => createHash('sha256').update(key).digest('hex'))
}

export function newTrialRecord (now: Date): Pick<BillingRecord, 'trialEndsAt'> {
  return { trialEndsAt: new Date(now.getTime() + TRIAL_DAYS * DAY_MS) }
}

/** A record missing its trial end is not a billing record: it grants nothing (fails closed). */
export function isWholeRecord (record: Partial<BillingRecord> | null): record is BillingRecord {
  return record !== null && record.trialEndsAt instanceof Date && !Number.isNaN(record.trialEndsAt.getTime())
}

const STRIPE_STATUSES: ReadonlySet<string> = new Set(['trialing', 'active', 'past_due', 'incomplete', 'incomplete_expired', 'unpaid', 'paused', 'canceled'])

/** Stripe's subscription status as ours; one we do not know is read-only (fails closed). */
export function subscriptionStatusOf (stripeStatus: string): SubscriptionStatus {
  return STRIPE_STATUSES.has(stripeStatus) ? stripeStatus as SubscriptionStatus : 'unpaid'
}

export function effectiveStatus (record: BillingRecord, now: Date): SubscriptionStatus {
  const status = record.subscriptionStatus
  if (status !== undefined) {
    // A failed renewal the re-fetched invoice confirmed, while Stripe still calls the subscription active.
    return status === 'active' && record.paymentFailed === true ? 'past_due' : status
  }
  return now.getTime() < record.trialEndsAt.getTime() ? 'trialing' : 'trial_expired'
}

export function isReadOnlyStatus (status: SubscriptionStatus): boolean {
  return !WRITABLE.has(status)
}

export function hasLiveSubscription (record: BillingRecord): boolean {
  return record.subscriptionId !== undefined && record.subscriptionStatus !== undefined && LIVE.has(record.subscriptionStatus)
}

export function statusView (record: BillingRecord, now: Date, bypass: boolean): BillingStatus {
  const status = effectiveStatus(record, now)
  const trialEnd = record.subscriptionStatus === undefined
    ? record.trialEndsAt
    : status === 'trialing' ? record.subscriptionTrialEnd ?? null : null
  return {
    subscriptionStatus: status,
    trialEndsAt: trialEnd === null ? null : trialEnd.toISOString(),
    currentPeriodEnd: record.currentPeriodEnd == null ? null : record.currentPeriodEnd.toISOString(),
    isReadOnly: !bypass && isReadOnlyStatus(status),
    cancelAtPeriodEnd: record.cancelAtPeriodEnd === true,
    needsPaymentMethod: NEEDS_PAYMENT_METHOD.has(status),
    hasSubscription: hasLiveSubscription(record),
    bypass
  }
}

/**
 * The trial a first subscription keeps: what is left of the card-less trial, when Stripe accepts it
 * (48 hours or more ahead). A later subscription (the user had one before) starts paid at once.
 */
export function checkoutTrialEnd (record: BillingRecord, now: Date): Date | undefined {
  if (record.subscriptionId !== undefined) return undefined
  return record.trialEndsAt.getTime() - now.getTime() >= MIN_CHECKOUT_TRIAL_MS ? record.trialEndsAt : undefined
}

export function isBypassed (bypassEmails: readonly string[], email: string | undefined): boolean {
  if (email === undefined) return false
  const wanted = email.trim().toLowerCase()
  return bypassEmails.some((entry) => entry.trim().toLowerCase() === wanted)
}

/**
 * An event about a subscription other than the user's live one (an earlier, ended subscription)
 * must not overwrite it; anything about the live one, or a new live one, applies.
 */
export function shouldApplySubscription (record: BillingRecord, fetched: { id: string, status: SubscriptionStatus }): boolean {
  if (record.subscriptionId === undefined || record.subscriptionId === fetched.id) return true
  return !hasLiveSubscription(record) || LIVE.has(fetched.status)
}
