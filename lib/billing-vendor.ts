import type { SubscriptionStatus } from '../schemas/billing.js'
import { TypedHttpError } from './error-bodies.js'

// What the app needs of its billing vendor (the port). The one adapter, clients/stripe.ts, is
// loaded only when billing is configured; the shapes below are those of its pinned API version.

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

interface VendorInvoice {
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
  constructor (type: string, vendorCode: string | undefined, cause: unknown) {
    super(`Stripe refused the request: ${type}${vendorCode !== undefined ? ` (${vendorCode})` : ''}`, { cause })
    this.type = type
    this.vendorCode = vendorCode
  }
}

const BILLING_RETRY_AFTER_SECONDS = 5

/** Stripe did not answer, or answered that it cannot now: the client may try again; nothing changed. */
export function billingUnavailable (): TypedHttpError {
  return new TypedHttpError(503, 'BILLING_UNAVAILABLE', 'Billing is briefly unavailable; try again shortly', {}, BILLING_RETRY_AFTER_SECONDS)
}
