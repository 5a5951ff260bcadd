// Billing's use cases: the trial every new user starts with, checkout and the card fix on Stripe's
// pages, cancel and resume, the webhook that mirrors Stripe's state, and the gate's read-only rule.
import type { FastifyBaseLogger } from 'fastify'
import type { BillingStatus } from '../schemas/billing.js'
import type { Config } from '../schemas/config.js'
import {
  checkoutTrialEnd, effectiveStatus, hasLiveSubscription, isBypassed, isReadOnlyStatus, isWholeRecord, newTrialRecord,
  shouldApplySubscription, statusView, trialClaimIds, type BillingRecord
} from '../lib/billing.js'
import { VendorRefusal, type BillingVendor, type VendorEvent, type VendorPrice, type VendorSubscription } from '../lib/billing-vendor.js'
import { TypedHttpError } from '../lib/error-bodies.js'
import { withDeadline } from '../lib/deadline.js'
import type { BillingStore } from '../stores/billing.js'
import { isUserId, type ProvenIdentities, type UserStore } from '../stores/users.js'

export interface BillingService {
  status: (userId: string) => Promise<BillingStatus>
  /** Writes are refused (403 BILLING_REQUIRED) for this user. */
  isReadOnly: (userId: string) => Promise<boolean>
  startCheckout: (userId: string) => Promise<string>
  startPaymentFix: (userId: string) => Promise<string>
  setCancelAtPeriodEnd: (userId: string, cancel: boolean) => Promise<BillingStatus>
  endTrial: (userId: string) => Promise<BillingStatus>
  /** Verifies, de-duplicates and applies one webhook delivery; rejects with WebhookSignatureError. */
  receiveWebhook: (rawBody: Buffer, signature: string | undefined, log: FastifyBaseLogger) => Promise<{ duplicate: boolean }>
  /** The configured price as Stripe holds it; undefined while Stripe cannot tell. */
  price: () => Promise<VendorPrice | undefined>
  /**
   * Claims the user's trial for each identity proven: one already claimed by another user ends
   * this user's card-less trial when that one ended (one trial per verified email and provider account).
   */
  claimTrial: (proven: ProvenIdentities) => Promise<void>
}

export const BILLING_REQUIRED_MESSAGE = 'Your trial or subscription has ended, so your calendar is read-only: subscribe to make changes again'
const PRICE_CACHE_MS = 10 * 60_000
const PRICE_FAILURE_CACHE_MS = 30_000
const PRICE_DEADLINE_MS = 2000

export type BillingConfig = Required<Pick<NonNullable<Config['billing']>, 'secretKey' | 'webhookSecret' | 'priceId'>> & NonNullable<Config['billing']>

export function createBillingService (deps: {
  config: BillingConfig
  webUrl: string
  vendor: BillingVendor
  store: BillingStore
  users: Pick<UserStore, 'findById'>
  log: FastifyBaseLogger
}): BillingService {
  const { config, vendor, store, users, log } = deps
  const returnUrl = (outcome: string) => new URL(`/day?billing=${outcome}`, deps.webUrl).toString()

  async function recordOf (userId: string): Promise<BillingRecord> {
    const record = await store.recordOrTrial(userId, newTrialRecord(new Date()))
    if (isWholeRecord(record)) return record
    // Not one this code wrote: it grants nothing rather than letting the user through.
    log.warn({ userId }, 'billing record without a trial end; treated as ended')
    return { ...(record ?? {}), trialEndsAt: new Date(0) }
  }

  async function bypassed (userId: string): Promise<boolean> {
    if (config.bypassEmails.length === 0) return false
    const user = await users.findById(userId)
    // Only an address the user has proven: anyone can sign up with a staff address they do not hold.
    return user?.emailVerified === true && isBypassed(config.bypassEmails, user.email)
  }

  async function customerOf (userId: string, record: BillingRecord): Promise<string> {
    if (record.customerId !== undefined) return record.customerId
    const user = await users.findById(userId)
    if (user === null) throw new TypedHttpError(404, 'USER_NOT_FOUND', 'No user record for this session')
    const customerId = await vendor.createCustomer({ userId, email: user.email })
    await store.setCustomer(userId, customerId)
    return customerId
  }

  async function userOfSubscription (subscription: VendorSubscription): Promise<string | undefined> {
    if (subscription.userId !== undefined && isUserId(subscription.userId)) return subscription.userId
    return await store.userOfCustomer(subscription.customerId)
  }

  /** Stripe's current state of a subscription, re-fetched, stored unless a read begun later was stored first. */
  async function applySubscription (subscriptionId: string, event: VendorEvent, extra: { paymentFailed?: boolean } = {}): Promise<void> {
    const ticket = await store.snapshotTicket()
    const subscription = await vendor.retrieveSubscription(subscriptionId)
    const userId = await userOfSubscription(subscription)
    if (userId === undefined) {
      log.warn({ eventId: event.id, type: event.type }, 'billing event for a subscription of no known user; ignored')
      return
    }
    const record = await recordOf(userId)
    if (!shouldApplySubscription(record, subscription)) {
      log.info({ eventId: event.id, userId }, 'billing event about an earlier subscription; ignored')
      return
    }
    const applied = await store.applySubscription(userId, subscription, ticket, extra)
    if (!applied) log.info({ eventId: event.id, userId }, 'billing state read before the one already stored; ignored')
    else log.info({ eventId: event.id, type: event.type, userId, status: subscription.status }, 'billing state updated')
  }

  async function applyCheckout (event: VendorEvent): Promise<void> {
    const session = await vendor.retrieveCheckoutSession(event.objectId)
    if (session.mode === 'subscription' && session.subscriptionId !== undefined) {
      await applySubscription(session.subscriptionId, event)
      return
    }
    if (session.mode !== 'setup' || session.paymentMethodId === undefined || session.fixesSubscriptionId === undefined) return
    // The card fix: the new card pays from now on, and the invoice that failed is tried again with it.
    await vendor.useDefaultPaymentMethod(session.fixesSubscriptionId, session.paymentMethodId)
    const subscription = await vendor.retrieveSubscription(session.fixesSubscriptionId)
    if (subscription.latestInvoiceId !== undefined) {
      const invoice = await vendor.retrieveInvoice(subscription.latestInvoiceId)
      if (invoice.status === 'open') {
        // A declined card is not a failed delivery: Stripe reports the outcome as invoice events.
        await vendor.payInvoice(invoice.id).catch((error: unknown) => {
          if (!(error instanceof VendorRefusal && error.type === 'StripeCardError')) throw error
          log.info({ eventId: event.id }, 'the fixed card was declined for the open invoice')
        })
      }
    }
    await applySubscription(session.fixesSubscriptionId, event)
  }

  async function applyInvoice (event: VendorEvent): Promise<void> {
    // The body's amounts and statuses are not trusted: the invoice is re-fetched.
    const invoice = await vendor.retrieveInvoice(event.objectId)
    if (invoice.subscriptionId === undefined) return
    const paymentFailed = event.type === 'invoice.payment_failed' ? invoice.status === 'open' : invoice.status === 'paid' ? false : undefined
    await applySubscription(invoice.subscriptionId, event, paymentFailed === undefined ? {} : { paymentFailed })
  }

  async function apply (event: VendorEvent): Promise<void> {
    if (event.type === 'checkout.session.completed') return await applyCheckout(event)
    if (event.type.startsWith('customer.subscription.')) return await applySubscription(event.objectId, event)
    if (event.type === 'invoice.payment_failed' || event.type === 'invoice.paid' || event.type === 'invoice.payment_succeeded') {
      return await applyInvoice(event)
    }
    log.debug({ eventId: event.id, type: event.type }, 'billing event of a type not used; acknowledged')
  }

  let cachedPrice: { value: VendorPrice | undefined, until: number } | undefined

  return {
    async status (userId) {
      const record = await recordOf(userId)
      return statusView(record, new Date(), await bypassed(userId))
    },
    async isReadOnly (userId) {
      const record = await recordOf(userId)
      if (!isReadOnlyStatus(effectiveStatus(record, new Date()))) return false
      return !await bypassed(userId)
    },
    async startCheckout (userId) {
      const record = await recordOf(userId)
      if (hasLiveSubscription(record)) {
        throw new TypedHttpError(409, 'SUBSCRIPTION_EXISTS', 'You already have a subscription; manage it instead of starting another')
      }
      const customerId = await customerOf(userId, record)
      return await vendor.createCheckout({
        customerId,
        userId,
        priceId: config.priceId,
        trialEnd: checkoutTrialEnd(record, new Date()),
        successUrl: returnUrl('success'),
        cancelUrl: returnUrl('cancelled')
      })
    },
    async startPaymentFix (userId) {
      const record = await recordOf(userId)
      if (record.subscriptionId === undefined || record.customerId === undefined || !hasLiveSubscription(record)) {
        throw new TypedHttpError(409, 'NO_SUBSCRIPTION', 'There is no subscription whose card could be changed; subscribe instead')
      }
      return await vendor.createSetupSession({
        customerId: record.customerId,
        userId,
        subscriptionId: record.subscriptionId,
        successUrl: returnUrl('card-updated'),
        cancelUrl: returnUrl('cancelled')
      })
    },
    async setCancelAtPeriodEnd (userId, cancel) {
      const record = await recordOf(userId)
      if (record.subscriptionId === undefined || !hasLiveSubscription(record)) {
        throw new TypedHttpError(409, 'NO_SUBSCRIPTION', 'There is no subscription to cancel or resume')
      }
      const ticket = await store.snapshotTicket()
      const subscription = await vendor.setCancelAtPeriodEnd(record.subscriptionId, cancel)
      await store.applySubscription(userId, subscription, ticket)
      return await this.status(userId)
    },
    async endTrial (userId) {
      const record = await recordOf(userId)
      // The card-less trial has no subscription to move: subscribing is how it ends early.
      if (record.subscriptionId === undefined || record.subscriptionStatus !== 'trialing') {
        throw new TypedHttpError(409, 'NOT_TRIALING', 'Only a subscription in its trial can start its paid period now; without one, subscribe instead')
      }
      const ticket = await store.snapshotTicket()
      const subscription = await vendor.endTrialNow(record.subscriptionId)
      await store.applySubscription(userId, subscription, ticket)
      return await this.status(userId)
    },
    async receiveWebhook (rawBody, signature, requestLog) {
      const event = await vendor.verifyWebhook(rawBody, signature)
      if (!await store.markProcessed(event)) {
        requestLog.info({ eventId: event.id }, 'billing event already processed')
        return { duplicate: true }
      }
      try {
        await apply(event)
      } catch (error) {
        // Stripe retries a failed delivery: the id is forgotten so that the retry is processed.
        await store.forgetProcessed(event.id)
        throw error
      }
      return { duplicate: false }
    },
    async price () {
      const now = Date.now()
      if (cachedPrice !== undefined && cachedPrice.until > now) return cachedPrice.value
      try {
        const value = await withDeadline(vendor.retrievePrice(config.priceId), PRICE_DEADLINE_MS)
        cachedPrice = { value, until: now + PRICE_CACHE_MS }
      } catch (error) {
        log.warn({ err: error }, 'billing price could not be read from Stripe')
        cachedPrice = { value: undefined, until: now + PRICE_FAILURE_CACHE_MS }
      }
      return cachedPrice.value
    },
    async claimTrial (proven) {
      const ids = trialClaimIds(proven)
      if (ids.length === 0 || !isUserId(proven.userId)) return
      const record = await recordOf(proven.userId)
      const claimedAt = new Date()
      let endsAt = record.trialEndsAt
      for (const id of ids) {
        const claim = await store.claimTrial(id, { userId: proven.userId, trialEndsAt: record.trialEndsAt, claimedAt })
        if (claim !== null && claim.userId !== proven.userId && claim.trialEndsAt < endsAt) endsAt = claim.trialEndsAt
      }
      if (endsAt < record.trialEndsAt) {
        await store.endTrialBy(proven.userId, endsAt)
        log.info({ userId: proven.userId, trialEndsAt: endsAt }, 'trial already used by an identity this user proved; it ends with that one')
      }
    }
  }
}
