import fp from 'fastify-plugin'
import { ObjectId, type Collection } from 'mongodb'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { BillingStatus } from '../../schemas/billing.js'
import type { Config } from '../../schemas/config.js'
import {
  checkoutTrialEnd, effectiveStatus, hasLiveSubscription, isBypassed, isReadOnlyStatus, isWholeRecord, newTrialRecord,
  shouldApplySubscription, statusView, trialClaimIds, type BillingRecord
} from '../../lib/billing.js'
import {
  createStripeVendor, VendorRefusal, type BillingVendor, type VendorEvent, type VendorPrice, type VendorSubscription
} from '../../lib/billing-vendor.js'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { isDuplicateKeyError } from '../../lib/mongo-errors.js'
import { withDeadline } from '../../lib/deadline.js'
import type { ProvenIdentities, UserStore } from './users.js'

export interface BillingDocument extends BillingRecord {
  _id: ObjectId
  createdAt: Date
  updatedAt: Date
  /** `created` (seconds) of the newest event applied: an older one arriving late changes nothing. */
  lastEventAt?: number
}

/** One trial claimed by a proven identity (lib/billing.ts trialClaimIds): whose it was, when it ends. */
interface TrialClaim {
  _id: string
  userId: string
  trialEndsAt: Date
  claimedAt: Date
}

interface ProcessedEvent {
  _id: string
  type: string
  created: number
  receivedAt: Date
}

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

declare module 'fastify' {
  interface FastifyInstance {
    /** Present only when the billing block is configured (all four keys). */
    billing: BillingService
  }
  interface FastifyContextConfig {
    /** The billing gate lets this write through for a read-only user (billing routes themselves). */
    billingExempt?: boolean
  }
}

export const BILLING_REQUIRED_MESSAGE = 'Your trial or subscription has ended, so your calendar is read-only: subscribe to make changes again'
const PRICE_CACHE_MS = 10 * 60_000
const PRICE_FAILURE_CACHE_MS = 30_000
const PRICE_DEADLINE_MS = 2000
/** Stripe retries a delivery for up to three days; ids are kept well beyond that. */
const PROCESSED_EVENT_TTL_SECONDS = 30 * 24 * 60 * 60

type BillingConfig = Required<Pick<NonNullable<Config['billing']>, 'secretKey' | 'webhookSecret' | 'priceId'>> & NonNullable<Config['billing']>

export function createBillingService (deps: {
  config: BillingConfig
  webUrl: string
  vendor: BillingVendor
  records: Collection<BillingDocument>
  events: Collection<ProcessedEvent>
  claims: Collection<TrialClaim>
  users: UserStore
  log: FastifyBaseLogger
}): BillingService {
  const { config, vendor, records, events, claims, users, log } = deps
  const returnUrl = (outcome: string) => new URL(`/day?billing=${outcome}`, deps.webUrl).toString()

  // The trial record is one insert of a whole document: it exists complete or not at all.
  async function recordOf (userId: string): Promise<BillingRecord> {
    const _id = new ObjectId(userId)
    const now = new Date()
    try {
      await records.updateOne({ _id }, { $setOnInsert: { ...newTrialRecord(now), createdAt: now, updatedAt: now } }, { upsert: true })
    } catch (error) {
      // Two first visits at once: the other one wrote it.
      if (!isDuplicateKeyError(error)) throw error
    }
    const record = await records.findOne({ _id })
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
    await records.updateOne({ _id: new ObjectId(userId), customerId: { $exists: false } }, { $set: { customerId, updatedAt: new Date() } })
    return customerId
  }

  function subscriptionFields (subscription: VendorSubscription) {
    return {
      customerId: subscription.customerId,
      subscriptionId: subscription.id,
      subscriptionStatus: subscription.status,
      subscriptionTrialEnd: subscription.trialEnd,
      currentPeriodEnd: subscription.currentPeriodEnd,
      cancelAtPeriodEnd: subscription.cancelAtPeriodEnd
    }
  }

  async function userOfSubscription (subscription: VendorSubscription): Promise<string | undefined> {
    if (subscription.userId !== undefined && ObjectId.isValid(subscription.userId)) return subscription.userId
    const owner = await records.findOne({ customerId: subscription.customerId }, { projection: { _id: 1 } })
    return owner?._id.toHexString()
  }

  /** Stripe's current state of a subscription, re-fetched, applied unless a newer event was applied first. */
  async function applySubscription (subscriptionId: string, event: VendorEvent, extra: { paymentFailed?: boolean } = {}): Promise<void> {
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
    const applied = await records.updateOne(
      { _id: new ObjectId(userId), $or: [{ lastEventAt: { $exists: false } }, { lastEventAt: { $lte: event.created } }] },
      { $set: { ...subscriptionFields(subscription), ...extra, lastEventAt: event.created, updatedAt: new Date() } }
    )
    if (applied.matchedCount === 0) log.info({ eventId: event.id, userId }, 'billing event older than the last one applied; ignored')
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
      const subscription = await vendor.setCancelAtPeriodEnd(record.subscriptionId, cancel)
      await records.updateOne({ _id: new ObjectId(userId) }, { $set: { ...subscriptionFields(subscription), updatedAt: new Date() } })
      return await this.status(userId)
    },
    async endTrial (userId) {
      const record = await recordOf(userId)
      // The card-less trial has no subscription to move: subscribing is how it ends early.
      if (record.subscriptionId === undefined || record.subscriptionStatus !== 'trialing') {
        throw new TypedHttpError(409, 'NOT_TRIALING', 'Only a subscription in its trial can start its paid period now; without one, subscribe instead')
      }
      const subscription = await vendor.endTrialNow(record.subscriptionId)
      await records.updateOne({ _id: new ObjectId(userId) }, { $set: { ...subscriptionFields(subscription), updatedAt: new Date() } })
      return await this.status(userId)
    },
    async receiveWebhook (rawBody, signature, requestLog) {
      const event = await vendor.verifyWebhook(rawBody, signature)
      try {
        await events.insertOne({ _id: event.id, type: event.type, created: event.created, receivedAt: new Date() })
      } catch (error) {
        if (isDuplicateKeyError(error)) {
          requestLog.info({ eventId: event.id }, 'billing event already processed')
          return { duplicate: true }
        }
        throw error
      }
      try {
        await apply(event)
      } catch (error) {
        // Stripe retries a failed delivery: the id is forgotten so that the retry is processed.
        await events.deleteOne({ _id: event.id })
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
      if (ids.length === 0 || !ObjectId.isValid(proven.userId)) return
      const record = await recordOf(proven.userId)
      const now = new Date()
      let endsAt = record.trialEndsAt
      for (const _id of ids) {
        const claim = await claims.findOneAndUpdate(
          { _id },
          { $setOnInsert: { userId: proven.userId, trialEndsAt: record.trialEndsAt, claimedAt: now } },
          { upsert: true, returnDocument: 'after' }
        ).catch(async (error: unknown) => {
          // Two proofs of the same identity at once: the other one claimed it.
          if (isDuplicateKeyError(error)) return await claims.findOne({ _id })
          throw error
        })
        if (claim !== null && claim.userId !== proven.userId && claim.trialEndsAt < endsAt) endsAt = claim.trialEndsAt
      }
      if (endsAt < record.trialEndsAt) {
        await records.updateOne({ _id: new ObjectId(proven.userId) }, { $min: { trialEndsAt: endsAt }, $set: { updatedAt: now } })
        log.info({ userId: proven.userId, trialEndsAt: endsAt }, 'trial already used by an identity this user proved; it ends with that one')
      }
    }
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

export function isGatedRequest (request: FastifyRequest): boolean {
  return request.userId !== '' && !SAFE_METHODS.has(request.method) && request.routeOptions.config.billingExempt !== true
}

// Billing (Stripe) when the block is configured; without it nothing is decorated, no gate runs and
// the billing routes are not registered.
export default fp(async function billing (fastify) {
  const block = fastify.config.billing
  if (block?.secretKey === undefined || block.webhookSecret === undefined || block.priceId === undefined) return
  const config = { ...block, secretKey: block.secretKey, webhookSecret: block.webhookSecret, priceId: block.priceId }
  const records = fastify.mongo.db.collection<BillingDocument>('billing')
  const events = fastify.mongo.db.collection<ProcessedEvent>('billingEvents')
  const claims = fastify.mongo.db.collection<TrialClaim>('trialClaims')
  await records.createIndexes([{ key: { customerId: 1 }, name: 'billing_customer', sparse: true }])
  await events.createIndexes([{ key: { receivedAt: 1 }, name: 'billing_event_expiry', expireAfterSeconds: PROCESSED_EVENT_TTL_SECONDS }])
  const service = createBillingService({
    config,
    webUrl: fastify.config.web.url,
    vendor: createStripeVendor({ secretKey: config.secretKey, webhookSecret: config.webhookSecret, endpointBase: config.endpointBase }),
    records,
    events,
    claims,
    users: fastify.users,
    log: fastify.log.child({ component: 'billing' })
  })
  fastify.decorate('billing', service)
  fastify.users.afterProven(async (proven) => { await service.claimTrial(proven) })

  // The gate: a write of a signed-in user whose trial or subscription ended is refused before its
  // body is read. Runs after every onRequest hook, so after the session was verified.
  fastify.addHook('preParsing', async (request, _reply, payload) => {
    if (isGatedRequest(request) && await service.isReadOnly(request.userId)) {
      throw new TypedHttpError(403, 'BILLING_REQUIRED', BILLING_REQUIRED_MESSAGE)
    }
    return payload
  })
}, { name: 'billing', dependencies: ['config', 'mongo', 'users'] })
