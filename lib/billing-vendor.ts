import Stripe from 'stripe'
import type { SubscriptionStatus } from '../schemas/billing.js'
import { subscriptionStatusOf, WEBHOOK_TOLERANCE_SECONDS } from './billing.js'
import { TypedHttpError } from './error-bodies.js'

// What the app needs of its billing vendor (the port), and the one adapter, on Stripe's official
// package with a pinned API version: the shapes below are that version's.

export const STRIPE_API_VERSION = '2026-10-28.endive' as const

export interface VendorSubscription {
  id: string
  customerId: string
  status: SubscriptionStatus
  cancelAtPeriodEnd: boolean
  currentPeriodEnd: Date | null
  trialEnd: Date | null
  /** metadata.userId, set at checkout. */
  userId: string | undefined
  latestInvoiceId: string | undefined
}

export interface VendorCheckoutSession {
  mode: 'subscription' | 'setup' | 'payment'
  customerId: string | undefined
  userId: string | undefined
  subscriptionId: string | undefined
  /** setup mode: the card the person entered. */
  paymentMethodId: string | undefined
  /** setup mode: the subscription whose card is being fixed (setup_intent metadata). */
  fixesSubscriptionId: string | undefined
}

export interface VendorInvoice {
  id: string
  status: string
  subscriptionId: string | undefined
}

export interface VendorPrice {
  unitAmount: number
  currency: string
  interval: string
}

export interface VendorEvent {
  id: string
  type: string
  /** Seconds since the epoch, as Stripe stamps it. */
  created: number
  /** The id of data.object: only the id is used; the object itself is re-fetched. */
  objectId: string
}

export interface BillingVendor {
  createCustomer: (input: { userId: string, email: string }) => Promise<string>
  createCheckout: (input: { customerId: string, userId: string, priceId: string, trialEnd: Date | undefined, successUrl: string, cancelUrl: string }) => Promise<string>
  createSetupSession: (input: { customerId: string, userId: string, subscriptionId: string, successUrl: string, cancelUrl: string }) => Promise<string>
  retrieveSubscription: (id: string) => Promise<VendorSubscription>
  setCancelAtPeriodEnd: (id: string, cancel: boolean) => Promise<VendorSubscription>
  /** The subscription's trial ends now: Stripe starts the first paid period and charges its invoice. */
  endTrialNow: (id: string) => Promise<VendorSubscription>
  retrieveCheckoutSession: (id: string) => Promise<VendorCheckoutSession>
  retrieveInvoice: (id: string) => Promise<VendorInvoice>
  useDefaultPaymentMethod: (subscriptionId: string, paymentMethodId: string) => Promise<void>
  payInvoice: (id: string) => Promise<void>
  retrievePrice: (id: string) => Promise<VendorPrice>
  /** Rejects with WebhookSignatureError for a bad, missing or stale signature. */
  verifyWebhook: (rawBody: Buffer, signature: string | undefined) => Promise<VendorEvent>
}

export class WebhookSignatureError extends Error {
  override name = 'WebhookSignatureError'
}

/** Stripe refused a request (4xx): a 500 to our client, with Stripe's type and code kept for the log. */
export class VendorRefusal extends Error {
  override name = 'VendorRefusal'
  readonly type: string
  readonly vendorCode: string | undefined
  constructor (cause: InstanceType<typeof Stripe.errors.StripeError>) {
    super(`Stripe refused the request: ${cause.type}${cause.code !== undefined ? ` (${cause.code})` : ''}`, { cause })
    this.type = cause.type
    this.vendorCode = cause.code
  }
}

export const BILLING_RETRY_AFTER_SECONDS = 5

/** Stripe did not answer, or answered that it cannot now: the client may try again; nothing changed. */
export function billingUnavailable (): TypedHttpError {
  return new TypedHttpError(503, 'BILLING_UNAVAILABLE', 'Billing is briefly unavailable; try again shortly', {}, BILLING_RETRY_AFTER_SECONDS)
}

function isVendorDown (error: unknown): boolean {
  if (error instanceof Stripe.errors.StripeConnectionError || error instanceof Stripe.errors.StripeAPIError ||
    error instanceof Stripe.errors.StripeRateLimitError) return true
  return error instanceof Stripe.errors.StripeError && (error.statusCode ?? 0) >= 500
}

async function vendorCall<T> (call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    if (isVendorDown(error)) throw Object.assign(billingUnavailable(), { cause: error })
    // Stripe's refusal of our own request is our fault, never the client's: its status is not passed on.
    if (error instanceof Stripe.errors.StripeError) throw new VendorRefusal(error)
    throw error
  }
}

function idOf (value: string | { id: string } | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined
  return typeof value === 'string' ? value : value.id
}

function dateOf (seconds: number | null | undefined): Date | null {
  return typeof seconds === 'number' ? new Date(seconds * 1000) : null
}

function modeOf (mode: string): VendorCheckoutSession['mode'] {
  return mode === 'setup' || mode === 'subscription' ? mode : 'payment'
}

function subscriptionOf (subscription: Stripe.Subscription): VendorSubscription {
  // Since API version 2025-03-31 the billing period lives on each subscription item.
  const periodEnds = subscription.items.data.map((item) => item.current_period_end)
  return {
    id: subscription.id,
    customerId: idOf(subscription.customer) ?? '',
    status: subscriptionStatusOf(subscription.status),
    cancelAtPeriodEnd: subscription.cancel_at_period_end,
    currentPeriodEnd: periodEnds.length > 0 ? dateOf(Math.max(...periodEnds)) : null,
    trialEnd: dateOf(subscription.trial_end),
    userId: subscription.metadata['userId'],
    latestInvoiceId: idOf(subscription.latest_invoice)
  }
}

export interface StripeVendorOptions {
  secretKey: string
  webhookSecret: string
  /** Development only (billing.endpointBase): a stand-in's origin instead of api.stripe.com. */
  endpointBase?: string | undefined
  timeoutMs?: number
}

export function stripeClientOptions (options: Pick<StripeVendorOptions, 'endpointBase' | 'timeoutMs'>): Stripe.StripeConfig {
  const base = options.endpointBase === undefined ? undefined : new URL(options.endpointBase)
  return {
    apiVersion: STRIPE_API_VERSION,
    timeout: options.timeoutMs ?? 10_000,
    maxNetworkRetries: 2,
    telemetry: false,
    ...(base !== undefined
      ? {
          host: base.hostname,
          port: base.port === '' ? (base.protocol === 'https:' ? 443 : 80) : Number(base.port),
          protocol: base.protocol === 'https:' ? 'https' : 'http'
        }
      : {})
  }
}

export function createStripeVendor (options: StripeVendorOptions): BillingVendor {
  const stripe = new Stripe(options.secretKey, stripeClientOptions(options))
  return {
    async createCustomer ({ userId, email }) {
      // One customer per user even when two checkouts race: Stripe answers a repeated key with the first result.
      const customer = await vendorCall(() => stripe.customers.create({ email, metadata: { userId } }, { idempotencyKey: `customer-${userId}` }))
      return customer.id
    },
    async createCheckout ({ customerId, userId, priceId, trialEnd, successUrl, cancelUrl }) {
      const session = await vendorCall(() => stripe.checkout.sessions.create({
        mode: 'subscription',
        customer: customerId,
        client_reference_id: userId,
        line_items: [{ price: priceId, quantity: 1 }],
        subscription_data: {
          metadata: { userId },
          ...(trialEnd !== undefined ? { trial_end: Math.floor(trialEnd.getTime() / 1000) } : {})
        },
        success_url: successUrl,
        cancel_url: cancelUrl
      }))
      if (session.url === null) throw new Error('Stripe Checkout answered without a url')
      return session.url
    },
    async createSetupSession ({ customerId, userId, subscriptionId, successUrl, cancelUrl }) {
      const session = await vendorCall(() => stripe.checkout.sessions.create({
        mode: 'setup',
        customer: customerId,
        client_reference_id: userId,
        // Required in setup mode unless allowed_payment_method_types is set: only cards fix a subscription here.
        allowed_payment_method_types: ['card'],
        setup_intent_data: { metadata: { userId, subscriptionId } },
        success_url: successUrl,
        cancel_url: cancelUrl
      }))
      if (session.url === null) throw new Error('Stripe Checkout answered without a url')
      return session.url
    },
    async retrieveSubscription (id) {
      return subscriptionOf(await vendorCall(() => stripe.subscriptions.retrieve(id)))
    },
    async setCancelAtPeriodEnd (id, cancel) {
      return subscriptionOf(await vendorCall(() => stripe.subscriptions.update(id, { cancel_at_period_end: cancel })))
    },
    async endTrialNow (id) {
      return subscriptionOf(await vendorCall(() => stripe.subscriptions.update(id, { trial_end: 'now' })))
    },
    async retrieveCheckoutSession (id) {
      const session = await vendorCall(() => stripe.checkout.sessions.retrieve(id, { expand: ['setup_intent'] }))
      const intent = typeof session.setup_intent === 'object' ? session.setup_intent : null
      return {
        mode: modeOf(session.mode),
        customerId: idOf(session.customer),
        userId: session.client_reference_id ?? undefined,
        subscriptionId: idOf(session.subscription),
        paymentMethodId: idOf(intent?.payment_method),
        fixesSubscriptionId: intent?.metadata?.['subscriptionId']
      }
    },
    async retrieveInvoice (id) {
      const invoice = await vendorCall(() => stripe.invoices.retrieve(id))
      return {
        id: invoice.id ?? id,
        status: invoice.status ?? 'draft',
        subscriptionId: idOf(invoice.parent?.subscription_details?.subscription)
      }
    },
    async useDefaultPaymentMethod (subscriptionId, paymentMethodId) {
      await vendorCall(() => stripe.subscriptions.update(subscriptionId, { default_payment_method: paymentMethodId }))
    },
    async payInvoice (id) {
      await vendorCall(() => stripe.invoices.pay(id))
    },
    async retrievePrice (id) {
      const price = await vendorCall(() => stripe.prices.retrieve(id))
      return { unitAmount: price.unit_amount ?? 0, currency: price.currency, interval: price.recurring?.interval ?? 'month' }
    },
    async verifyWebhook (rawBody, signature) {
      if (signature === undefined || signature === '') throw new WebhookSignatureError('no Stripe-Signature header')
      let event: Stripe.Event
      try {
        event = await stripe.webhooks.constructEventAsync(rawBody, signature, options.webhookSecret, WEBHOOK_TOLERANCE_SECONDS)
      } catch (error) {
        if (error instanceof Stripe.errors.StripeSignatureVerificationError) throw new WebhookSignatureError(error.message)
        throw error
      }
      const object = event.data.object as { id?: unknown }
      return { id: event.id, type: event.type, created: event.created, objectId: typeof object.id === 'string' ? object.id : '' }
    }
  }
}
