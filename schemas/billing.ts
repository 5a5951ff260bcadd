import { Type, type Static } from '@sinclair/typebox'

// The billing block's answers (routes/billing). The states are Stripe's subscription statuses, plus
// the two that exist before any subscription: the card-less trial and its end.

export const SUBSCRIPTION_STATUSES = [
  'trialing', 'active', 'past_due', 'incomplete', 'incomplete_expired', 'unpaid', 'paused', 'canceled', 'trial_expired'
] as const

const SubscriptionStatusSchema = Type.Union(SUBSCRIPTION_STATUSES.map((status) => Type.Literal(status)), {
  description: 'trialing, active and past_due may write; the rest are read-only. trialing without a subscription is the card-less trial; trial_expired is its end with no subscription'
})

export const BillingStatusSchema = Type.Object({
  subscriptionStatus: SubscriptionStatusSchema,
  trialEndsAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When the trial ends (or ended); null once a paid period runs' }),
  currentPeriodEnd: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'End of the subscription\'s current period, when there is a subscription' }),
  isReadOnly: Type.Boolean({ description: 'Writes answer 403 BILLING_REQUIRED; reads, export and sign-out still work' }),
  cancelAtPeriodEnd: Type.Boolean({ description: 'The subscription ends at currentPeriodEnd unless resumed' }),
  needsPaymentMethod: Type.Boolean({ description: 'A payment failed or is missing: offer the card fix (POST /api/billing/payment-method)' }),
  hasSubscription: Type.Boolean({ description: 'A live subscription exists, so a new checkout is refused (409)' }),
  bypass: Type.Boolean({ description: 'The account is on billing.bypassEmails: the gate never refuses it' })
}, { additionalProperties: false, description: 'The signed-in user\'s billing state' })

export const RedirectUrlSchema = Type.Object({
  url: Type.String({ format: 'uri', description: 'Stripe Checkout\'s hosted page; the return lands back in the calendar' })
}, { additionalProperties: false })

export const WebhookReceiptSchema = Type.Object({
  received: Type.Literal(true),
  duplicate: Type.Optional(Type.Boolean({ description: 'This event id was already processed; nothing was done' }))
}, { additionalProperties: false })

export type SubscriptionStatus = Static<typeof SubscriptionStatusSchema>
export type BillingStatus = Static<typeof BillingStatusSchema>
