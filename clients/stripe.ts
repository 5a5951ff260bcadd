// The billing vendor's adapter (lib/billing-vendor.ts is its port) on Stripe's official package,
// with a pinned API version. Imported only when the billing block is configured, so an install
// without billing never loads the SDK.
import Stripe from 'stripe'
import { subscriptionStatusOf, WEBHOOK_TOLERANCE_SECONDS } from '../lib/billing.js'
import {
  billingUnavailable, VendorRefusal, WebhookSignatureError, type BillingVendor, type VendorCheckoutSession, type VendorSubscription
} from '../lib/billing-vendor.js'

const STRIPE_API_VERSION = '2026-10-28.endive' as const

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
    if (error instanceof Stripe.errors.StripeError) throw new VendorRefusal(error.type, error.code, error)
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
