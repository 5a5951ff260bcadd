// The Stripe stand-in (dev/stripe) through the official package: the hosted Checkout page, the
// control surface that moves time, and webhook deliveries that the package's own verifier accepts,
// retried until answered. The API calls as Stripe documents them: test/dev/stripe-api.test.ts.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'tap'
import Stripe from 'stripe'
import { DEFAULT_PRICE, signatureHeader, startStripeStandIn } from '../../dev/stripe/index.js'
import { parseStripeForm } from '../../dev/stripe/form.js'
import { stripeClientOptions } from '../../clients/stripe.js'
import { refusal } from './stripe-refusal.js'

const SECRET_KEY = 'sk_test_standin_0123456789'

const WEBHOOK_SECRET = 'whsec_standin_0123456789'

test('form bodies read back as Stripe nests them; unsafe keys are dropped', async (t) => {
  t.same(parseStripeForm('line_items[0][price]=p1&line_items[0][quantity]=1&metadata[userId]=u&expand[0]=setup_intent&mode=setup&__proto__[x]=1&a[constructor]=2'), {
    line_items: [{ price: 'p1', quantity: '1' }], metadata: { userId: 'u' }, expand: ['setup_intent'], mode: 'setup'
  })
})

test('the stand-in through the stripe package', async (t) => {
  const received: Array<{ body: string, signature: string }> = []
  let refuseNext = 1
  const hooks = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => { body += chunk.toString() })
    request.on('end', () => {
      if (refuseNext > 0) {
        refuseNext -= 1
        response.writeHead(500).end()
        return
      }
      received.push({ body, signature: String(request.headers['stripe-signature']) })
      response.writeHead(200).end('{}')
    })
  })
  await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve))
  t.teardown(() => hooks.close())
  const stand = await startStripeStandIn({
    secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET, retryDelaysMs: [20, 20], webhookUrl: `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/`
  })
  t.teardown(() => stand.close())
  const stripe = new Stripe(SECRET_KEY, { ...stripeClientOptions({ endpointBase: stand.url }), maxNetworkRetries: 0 })

  // The calls themselves (keys, idempotency, refusals) are checked in test/dev/stripe-api.test.ts,
  // which also runs against Stripe; here, what only the stand-in has.
  const first = await stripe.customers.create({ email: 'a@example.com', metadata: { userId: 'u1' } }, { idempotencyKey: 'customer-u1' })

  const session = await stripe.checkout.sessions.create({
    mode: 'subscription',
    customer: first.id,
    client_reference_id: 'u1',
    line_items: [{ price: DEFAULT_PRICE.id, quantity: 1 }],
    success_url: 'http://app.example/day?session={CHECKOUT_SESSION_ID}',
    cancel_url: 'http://app.example/day?billing=cancelled',
    subscription_data: { metadata: { userId: 'u1' } }
  })
  t.match(session, { object: 'checkout.session', mode: 'subscription', status: 'open', client_reference_id: 'u1' })
  const page = await (await fetch(String(session.url))).text()
  t.match(page, /€5\.00 per month/)
  t.match(page, /href="http:\/\/app\.example\/day\?billing=cancelled"/, 'the person can go back without paying')
  t.equal((await fetch(`${stand.url}/c/pay/cs_test_none`)).status, 404)
  t.equal((await fetch(String(session.url), { method: 'POST', body: new URLSearchParams({ card: '12' }), redirect: 'manual' })).status, 400, 'an incomplete card')
  t.equal((await fetch(String(session.url), { method: 'POST', body: new URLSearchParams({ card: '4000000000000002' }), redirect: 'manual' })).status, 402, 'a declined card')
  const paid = await fetch(String(session.url), { method: 'POST', body: new URLSearchParams({ card: '4000 0000 0000 0341' }), redirect: 'manual' })
  t.equal(paid.headers.get('location'), `http://app.example/day?session=${session.id}`)
  t.equal((await fetch(String(session.url), { method: 'POST', body: new URLSearchParams({ card: '4242424242424242' }), redirect: 'manual' })).status, 410, 'a completed session is closed')

  const done = await stripe.checkout.sessions.retrieve(session.id)
  const subscription = await stripe.subscriptions.retrieve(String(done.subscription))
  // This card attaches but its charges fail: the first invoice stays open, as Stripe leaves it.
  t.match(subscription, { status: 'incomplete', metadata: { userId: 'u1' }, cancel_at_period_end: false })
  t.ok((subscription.items.data[0]?.current_period_end ?? 0) > Date.now() / 1000, 'the period lives on the item')

  const cancelling = await stripe.subscriptions.update(subscription.id, { cancel_at_period_end: true })
  t.equal(cancelling.cancel_at_period_end, true)
  t.equal((await fetch(`${stand.url}/control/subscriptions/${subscription.id}/renew`, { method: 'POST' })).status, 200)
  t.equal((await stripe.subscriptions.retrieve(subscription.id)).status, 'canceled', 'a cancellation at period end takes effect at renewal')
  t.match(await refusal(stripe.subscriptions.update(subscription.id, { cancel_at_period_end: false })), { statusCode: 400 })
  t.equal((await fetch(`${stand.url}/control/subscriptions/${subscription.id}/renew`, { method: 'POST' })).status, 409)
  t.equal((await fetch(`${stand.url}/control/subscriptions/sub_none/renew`, { method: 'POST' })).status, 404)

  // A second customer: a trial, its end, a failed payment, the card fix through a setup session.
  const second = await stripe.customers.create({ email: 'b@example.com' })
  /** A subscription in a 5-day trial, through a completed Checkout Session. */
  const subscribeWithTrial = async (customer: string): Promise<string> => {
    const trial = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer,
      line_items: [{ price: DEFAULT_PRICE.id, quantity: 1 }],
      success_url: 'http://x/',
      subscription_data: { trial_end: Math.floor(Date.now() / 1000) + 5 * 86400 }
    })
    await fetch(String(trial.url), { method: 'POST', body: new URLSearchParams({ card: '4242424242424242' }), redirect: 'manual' })
    return String((await stripe.checkout.sessions.retrieve(trial.id)).subscription)
  }
  const trialing = await stripe.subscriptions.retrieve(await subscribeWithTrial(second.id))
  t.equal(trialing.status, 'trialing')
  const control = await fetch(`${stand.url}/control/subscriptions/${trialing.id}/end-trial`, { method: 'POST', headers: { accept: 'text/html' }, redirect: 'manual' })
  t.equal(control.status, 303, 'the control page\'s forms come back to it')
  t.equal((await stripe.subscriptions.retrieve(trialing.id)).status, 'active')
  await fetch(`${stand.url}/control/subscriptions/${trialing.id}/fail-payment`, { method: 'POST' })
  const failing = await stripe.subscriptions.retrieve(trialing.id)
  t.equal(failing.status, 'past_due')
  const invoice = await stripe.invoices.retrieve(String(failing.latest_invoice))
  t.match(invoice, { status: 'open', parent: { subscription_details: { subscription: trialing.id } } })
  t.match(await refusal(stripe.subscriptions.update(trialing.id, { default_payment_method: 'pm_none' })), { statusCode: 400 })

  const setup = await stripe.checkout.sessions.create({
    mode: 'setup', customer: second.id, allowed_payment_method_types: ['card'], success_url: 'http://x/', setup_intent_data: { metadata: { subscriptionId: trialing.id } }
  })
  t.match(await (await fetch(String(setup.url))).text(), /Update your card/)
  await fetch(String(setup.url), { method: 'POST', body: new URLSearchParams({ card: '4242424242424242' }), redirect: 'manual' })
  const completed = await stripe.checkout.sessions.retrieve(setup.id, { expand: ['setup_intent'] })
  const intent = completed.setup_intent as Stripe.SetupIntent
  t.match(intent, { object: 'setup_intent', status: 'succeeded', metadata: { subscriptionId: trialing.id } })
  await stripe.subscriptions.update(trialing.id, { default_payment_method: String(intent.payment_method) })
  t.equal((await stripe.invoices.pay(invoice.id ?? '')).status, 'paid')
  t.equal((await stripe.subscriptions.retrieve(trialing.id)).status, 'active', 'paying the open invoice makes it active again')
  await fetch(`${stand.url}/control/subscriptions/${trialing.id}/cancel`, { method: 'POST' })

  // A trial ended through the API: trial_end 'now' starts the paid period and charges it.
  const eagerId = await subscribeWithTrial(second.id)
  const started = await stripe.subscriptions.update(eagerId, { trial_end: 'now' })
  t.equal(started.status, 'active', 'trial_end now: active')
  t.ok(started.trial_end !== null && started.trial_end <= Math.floor(Date.now() / 1000), 'the trial ended at the time of the call')
  t.match(await stripe.invoices.retrieve(String(started.latest_invoice)), { status: 'paid', amount_due: DEFAULT_PRICE.unitAmount })

  const control2 = await (await fetch(`${stand.url}/control`)).text()
  t.match(control2, /b@example\.com/)
  const state = await (await fetch(`${stand.url}/control/state.json`)).json() as { events: Array<{ type: string }> }
  t.ok(state.events.some((event) => event.type === 'invoice.payment_failed'))
  t.equal((await fetch(`${stand.url}/control/webhook`, { method: 'POST', body: new URLSearchParams({ url: 'nope' }) })).status, 400)

  await stand.settled()
  t.ok(stand.deliveries().every((delivery) => delivery.status === 'delivered'), 'every event delivered')
  t.ok(stand.deliveries().some((delivery) => delivery.attempts > 1), 'a refused delivery was retried')
  for (const { body, signature } of received) {
    const event = await stripe.webhooks.constructEventAsync(body, signature, WEBHOOK_SECRET, 300)
    t.ok(event.id.startsWith('evt_'), `${event.type} verifies with the package`)
  }
  t.equal(signatureHeader('{}', 's', 1).startsWith('t=1,v1='), true)
})

test('deliveries give up after the last retry, and the stand-in refuses production', async (t) => {
  const stand = await startStripeStandIn({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET, retryDelaysMs: [10], webhookUrl: 'http://127.0.0.1:9/' })
  t.teardown(() => stand.close())
  stand.state.emit('customer.created', { id: 'cus_x', object: 'customer' })
  await stand.settled()
  t.match(stand.deliveries(), [{ status: 'failed', attempts: 2, lastStatusCode: null }])
  const previous = process.env['NODE_ENV']
  process.env['NODE_ENV'] = 'production'
  t.teardown(() => { process.env['NODE_ENV'] = previous })
  await t.rejects(startStripeStandIn({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET }), /refuses to start when NODE_ENV is production/)
})
