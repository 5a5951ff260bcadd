// The Stripe API as the billing block calls it, held to Stripe's documented answers. A conformance
// suite: against the stand-in by default, and against Stripe itself in test mode with
//   STRIPE_SECRET_KEY=sk_test_... STRIPE_PRICE_ID=price_... npx tap test/dev/stripe-api.test.ts
// (a recurring price of the test account; it creates one customer and one open Checkout Session,
// which expires by itself). What only the stand-in has (its checkout page, the control surface that
// moves time, webhook deliveries) is in test/dev/stripe.test.ts.
import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import Stripe from 'stripe'
import { DEFAULT_PRICE, startStripeStandIn } from '../../dev/stripe/index.js'
import { stripeClientOptions } from '../../clients/stripe.js'
import { refusal } from './stripe-refusal.js'

const REAL_KEY = process.env.STRIPE_SECRET_KEY

test('the calls of the billing block, answered as Stripe documents them', async (t) => {
  let client: (key: string) => Stripe
  let key: string
  let priceId: string
  if (REAL_KEY !== undefined) {
    key = REAL_KEY
    priceId = process.env.STRIPE_PRICE_ID ?? ''
    if (priceId === '') throw new Error('STRIPE_PRICE_ID names a recurring price of the test account')
    client = (secret) => new Stripe(secret, { ...stripeClientOptions({}), maxNetworkRetries: 0 })
  } else {
    key = 'sk_test_conformance_0123456789'
    priceId = DEFAULT_PRICE.id
    const stand = await startStripeStandIn({ secretKey: key, webhookSecret: 'whsec_conformance_0123456789' })
    t.teardown(() => stand.close())
    client = (secret) => new Stripe(secret, { ...stripeClientOptions({ endpointBase: stand.url }), maxNetworkRetries: 0 })
  }
  const stripe = client(key)

  // https://docs.stripe.com/api/authentication: a wrong key is a 401 authentication error.
  t.match(await refusal(client('sk_test_wrong').customers.create({ email: 'a@example.com' })), { type: 'StripeAuthenticationError', statusCode: 401 })

  // https://docs.stripe.com/api/idempotent_requests: a repeated key answers the first result.
  const idempotencyKey = `customer-${randomBytes(8).toString('hex')}`
  const first = await stripe.customers.create({ email: 'conformance@example.com', metadata: { userId: 'u1' } }, { idempotencyKey })
  const again = await stripe.customers.create({ email: 'conformance@example.com', metadata: { userId: 'u1' } }, { idempotencyKey })
  t.equal(again.id, first.id, 'a repeated Idempotency-Key answers the first result')
  t.match(await stripe.customers.retrieve(first.id), { email: 'conformance@example.com', metadata: { userId: 'u1' } })

  const price = await stripe.prices.retrieve(priceId)
  t.ok(typeof price.unit_amount === 'number' && typeof price.currency === 'string' && price.recurring !== null, 'a recurring price with its amount')

  // https://docs.stripe.com/api/errors: an unknown object is a 404 invalid request.
  t.match(await refusal(stripe.subscriptions.retrieve('sub_none')), { type: 'StripeInvalidRequestError', statusCode: 404 })
  t.match(await refusal(stripe.checkout.sessions.create({ mode: 'subscription', customer: first.id, line_items: [{ price: 'price_none', quantity: 1 }], success_url: 'https://example.com/' })), { statusCode: 400 })
  // https://docs.stripe.com/api/checkout/sessions/create: subscription_data.trial_end at least 48 hours ahead.
  t.match(await refusal(stripe.checkout.sessions.create({
    mode: 'subscription', customer: first.id, line_items: [{ price: priceId, quantity: 1 }], success_url: 'https://example.com/', subscription_data: { trial_end: Math.floor(Date.now() / 1000) + 3600 }
  })), { statusCode: 400, param: 'subscription_data[trial_end]' }, 'a trial shorter than 48 hours is refused')
  // Setup mode needs a currency unless the payment method types are named.
  t.match(await refusal(stripe.checkout.sessions.create({ mode: 'setup', customer: first.id, success_url: 'https://example.com/' })), { statusCode: 400, param: 'currency' })

  const session = await stripe.checkout.sessions.create({
    mode: 'subscription',
    customer: first.id,
    client_reference_id: 'u1',
    line_items: [{ price: priceId, quantity: 1 }],
    success_url: 'https://app.example/day?billing=success',
    cancel_url: 'https://app.example/day?billing=cancelled',
    subscription_data: { metadata: { userId: 'u1' }, trial_end: Math.floor(Date.now() / 1000) + 5 * 86400 }
  })
  t.match(session, { object: 'checkout.session', mode: 'subscription', status: 'open', client_reference_id: 'u1', customer: first.id })
  t.ok(typeof session.url === 'string' && session.url.length > 0, 'a hosted page to send the person to')
  t.match(await stripe.checkout.sessions.retrieve(session.id), { id: session.id, status: 'open', subscription: null })

  const setup = await stripe.checkout.sessions.create({
    mode: 'setup', customer: first.id, client_reference_id: 'u1', allowed_payment_method_types: ['card'], success_url: 'https://example.com/', setup_intent_data: { metadata: { subscriptionId: 'sub_x' } }
  })
  t.match(setup, { object: 'checkout.session', mode: 'setup', status: 'open' })
})
