import { test } from 'tap'
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { metricValue, parseMetrics } from '../metrics-text.js'
import Stripe from 'stripe'
import { ObjectId } from 'mongodb'
import supertokens from 'supertokens-node'
import EmailVerification from 'supertokens-node/recipe/emailverification'
import { buildApp, listen, signIn, signUp, startDependencies, uniqueEmail, verifyEmail, WEB_URL, type SignedIn } from '../helper.js'
import { DEFAULT_PRICE, startStripeStandIn, type StripeStandIn } from '../../dev/stripe/index.js'
import type { FastifyInstance } from 'fastify'
import { SUBSCRIPTION_STATUSES } from '../../schemas/billing.js'

const SECRET_KEY = 'sk_test_billing_0123456789'
const WEBHOOK_SECRET = 'whsec_billing_0123456789'
const PUBLISHABLE_KEY = 'pk_test_billing_0123456789'
const EVENT = { title: 'Standup', startDate: '2026-05-04T09:00:00Z', endDate: '2026-05-04T09:15:00Z', timeZone: 'UTC' }
const READ_URL = '/api/event?start=2026-05-04T00:00:00Z&end=2026-05-05T00:00:00Z'
const DAY_MS = 24 * 60 * 60 * 1000
// The package's own signing helper; no request is ever sent with this client.
const signer = new Stripe(SECRET_KEY)

function billingBlock (stripeUrl: string, bypassEmails: string[] = []) {
  return { secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET, priceId: DEFAULT_PRICE.id, publishableKey: PUBLISHABLE_KEY, endpointBase: stripeUrl, bypassEmails }
}

async function completeCheckout (url: string, card = '4242424242424242'): Promise<Response> {
  const page = await fetch(url)
  if (page.status !== 200) throw new Error(`checkout page answered ${page.status}`)
  return await fetch(url, { method: 'POST', body: new URLSearchParams({ card }), redirect: 'manual' })
}

async function status (app: FastifyInstance, user: SignedIn) {
  const response = await app.inject({ method: 'GET', url: '/api/billing/status', headers: user.headers })
  if (response.statusCode !== 200) throw new Error(`status answered ${response.statusCode} ${response.body}`)
  return response.json() as Record<string, unknown>
}

async function write (app: FastifyInstance, user: SignedIn) {
  return await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { ...EVENT, _id: new ObjectId().toHexString() } })
}

function signedDelivery (event: object, secret = WEBHOOK_SECRET, timestamp?: number) {
  const payload = JSON.stringify(event)
  const header = signer.webhooks.generateTestHeaderString({ payload, secret, ...(timestamp !== undefined ? { timestamp } : {}) })
  return { payload, headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': header } }
}

/**
 * Stripe reached through a proxy that can hold one answer: the request reaches Stripe at once (its
 * answer is Stripe's state of that moment) and the answer reaches the backend only when released,
 * as a slow network or a busy process would deliver it.
 */
async function startHoldingProxy (t: { teardown: (fn: () => unknown) => void }, target: string) {
  const upstream = new URL(target)
  let hold: { path: string, reached: () => void, released: Promise<void> } | undefined
  const server = createServer((incoming, outgoing) => {
    const held = hold !== undefined && incoming.method === 'GET' && incoming.url?.startsWith(hold.path) === true ? hold : undefined
    if (held !== undefined) hold = undefined
    const forwarded = httpRequest({ host: upstream.hostname, port: upstream.port, path: incoming.url, method: incoming.method, headers: incoming.headers }, (answer) => {
      const chunks: Buffer[] = []
      answer.on('data', (chunk: Buffer) => chunks.push(chunk))
      answer.on('end', () => {
        held?.reached()
        const send = () => { outgoing.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks)) }
        if (held === undefined) send()
        else held.released.then(send, send)
      })
    })
    incoming.pipe(forwarded)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.closeAllConnections(); server.close() })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Holds the next answer to a GET under `path`; resolves `reached` once Stripe has answered it. */
    holdNext (path: string) {
      let reached!: () => void
      let release!: () => void
      const answered = new Promise<void>((resolve) => { reached = resolve })
      hold = { path, reached, released: new Promise<void>((resolve) => { release = resolve }) }
      return { answered, release }
    }
  }
}

test('billing with Stripe (the stand-in, through the stripe package)', async (t) => {
  const deps = await startDependencies(t)
  const stripe: StripeStandIn = await startStripeStandIn({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET, retryDelaysMs: [50, 100] })
  t.teardown(() => stripe.close())
  const proxy = await startHoldingProxy(t, stripe.url)
  const bypassEmail = uniqueEmail('staff')
  const { app, log } = await buildApp(t, deps, { extra: { billing: billingBlock(proxy.url, [bypassEmail.toUpperCase()]) } })
  const base = await listen(app)
  stripe.setWebhookUrl(`${base}/api/billing/webhook`)
  const records = app.mongo.db.collection('billing')
  const processed = app.mongo.db.collection('billingEvents')

  await t.test('every billing route but the webhook needs a session', async (t) => {
    for (const [method, url] of [['GET', '/api/billing/status'], ['POST', '/api/billing/checkout'], ['POST', '/api/billing/payment-method'], ['POST', '/api/billing/subscription/cancel'], ['POST', '/api/billing/subscription/resume'], ['POST', '/api/billing/trial/end']] as const) {
      t.equal((await app.inject({ method, url })).statusCode, 401, `${method} ${url}`)
      t.equal((await app.inject({ method, url, headers: { authorization: 'Bearer forged.token.value' } })).statusCode, 401, `${method} ${url} forged`)
    }
    t.equal(await records.countDocuments(), 0, 'no record written for nobody')
  })

  await t.test('a new account is on a 7-day card-less trial, written whole', async (t) => {
    const user = await signUp(app, { email: uniqueEmail('trial'), password: 'pw-for-trial-1' })
    const before = Date.now()
    const answer = await status(app, user)
    t.match(answer, { subscriptionStatus: 'trialing', isReadOnly: false, cancelAtPeriodEnd: false, needsPaymentMethod: false, hasSubscription: false, bypass: false })
    const trialEnd = Date.parse(String(answer['trialEndsAt']))
    t.ok(trialEnd >= before + 7 * DAY_MS - 60_000 && trialEnd <= Date.now() + 7 * DAY_MS, 'ends in 7 days')
    const stored = await records.findOne({ _id: new ObjectId(user.userId) })
    t.ok(stored?.['trialEndsAt'] instanceof Date && stored['createdAt'] instanceof Date, 'one whole record')
    t.equal((await write(app, user)).statusCode, 204, 'a trialing user writes')
    t.same(stripe.state.customers.size, 0, 'no Stripe customer until checkout: nothing asked at sign-up')
  })

  await t.test('GET /api/config carries the publishable key, the trial length and the price from Stripe', async (t) => {
    const user = await signUp(app, { email: uniqueEmail('config'), password: 'pw-for-config-1' })
    const answer = await app.inject({ method: 'GET', url: '/api/config', headers: user.headers })
    t.same(answer.json().billing, { publishableKey: PUBLISHABLE_KEY, trialDays: 7, price: { unitAmount: 500, currency: 'eur', interval: 'month' } })
    t.notOk(answer.body.includes(SECRET_KEY) || answer.body.includes(WEBHOOK_SECRET), 'no secret')
  })

  await t.test('POST trial/end: the subscription\'s trial ends now and the first period is charged', async (t) => {
    const user = await signUp(app, { email: uniqueEmail('eager'), password: 'pw-for-eager-1' })
    const early = await app.inject({ method: 'POST', url: '/api/billing/trial/end', headers: user.headers })
    t.equal(early.statusCode, 409, 'the card-less trial has no subscription to move')
    t.equal(early.json().code, 'NOT_TRIALING')
    t.match(await status(app, user), { subscriptionStatus: 'trialing', hasSubscription: false }, 'nothing changed')

    const checkout = await app.inject({ method: 'POST', url: '/api/billing/checkout', headers: user.headers })
    await completeCheckout(String(checkout.json().url))
    await stripe.settled()
    t.match(await status(app, user), { subscriptionStatus: 'trialing', hasSubscription: true })
    const subscription = [...stripe.state.subscriptions.values()].find((entry) => (entry['metadata'] as { userId?: string }).userId === user.userId)
    const invoicesOf = () => [...stripe.state.invoices.values()].filter((invoice) =>
      (invoice['parent'] as { subscription_details?: { subscription?: string } }).subscription_details?.subscription === subscription?.id)
    t.same(invoicesOf().filter((invoice) => Number(invoice['amount_due']) > 0), [], 'nothing charged during the trial')

    const ended = await app.inject({ method: 'POST', url: '/api/billing/trial/end', headers: user.headers })
    t.equal(ended.statusCode, 200)
    t.match(ended.json(), { subscriptionStatus: 'active', trialEndsAt: null, hasSubscription: true, isReadOnly: false })
    t.equal(subscription?.['status'], 'active', 'Stripe\'s subscription left its trial')
    t.match(invoicesOf().filter((invoice) => Number(invoice['amount_due']) > 0), [{ status: 'paid', amount_due: DEFAULT_PRICE.unitAmount }], 'the first period was charged')
    await stripe.settled()
    t.match(await status(app, user), { subscriptionStatus: 'active', needsPaymentMethod: false }, 'the webhooks that followed agree')

    const twice = await app.inject({ method: 'POST', url: '/api/billing/trial/end', headers: user.headers })
    t.equal(twice.statusCode, 409, 'an active subscription has no trial to end')
    t.equal(twice.json().code, 'NOT_TRIALING')
  })

  await t.test('POST trial/end with a card that declines: past_due and the card fix is offered', async (t) => {
    const user = await signUp(app, { email: uniqueEmail('declined'), password: 'pw-for-declined-1' })
    const checkout = await app.inject({ method: 'POST', url: '/api/billing/checkout', headers: user.headers })
    await completeCheckout(String(checkout.json().url), '4000000000000341')
    await stripe.settled()
    t.match(await status(app, user), { subscriptionStatus: 'trialing', hasSubscription: true }, 'a card that declines later is accepted for the trial')
    const ended = await app.inject({ method: 'POST', url: '/api/billing/trial/end', headers: user.headers })
    t.equal(ended.statusCode, 200)
    await stripe.settled()
    t.match(await status(app, user), { subscriptionStatus: 'past_due', needsPaymentMethod: true, isReadOnly: false })
  })

  await t.test('checkout, trial kept, renewals, a failed payment, the card fix, cancel and resume, the end', async (t) => {
    const email = uniqueEmail('buyer')
    const user = await signUp(app, { email, password: 'pw-for-buyer-1' })
    const checkout = await app.inject({ method: 'POST', url: '/api/billing/checkout', headers: user.headers })
    t.equal(checkout.statusCode, 200)
    const url = String(checkout.json().url)
    t.ok(url.startsWith(`${stripe.url}/c/pay/cs_test_`), 'a hosted Checkout page')
    const customer = [...stripe.state.customers.values()].find((entry) => entry['email'] === email)
    t.same(customer?.['metadata'], { userId: user.userId }, 'a Stripe customer that names the user')
    const session = [...stripe.state.sessions.values()].find((entry) => entry['customer'] === customer?.id)
    t.match(session, { mode: 'subscription', client_reference_id: user.userId, line_items: [{ price: DEFAULT_PRICE.id, quantity: 1 }] })
    t.ok(Number((session?.['subscription_data'] as { trial_end?: number }).trial_end) * 1000 > Date.now() + 6 * DAY_MS, 'the rest of the trial goes with the first subscription')

    const returned = await completeCheckout(url)
    t.equal(returned.status, 303)
    t.equal(returned.headers.get('location'), `${WEB_URL}/day?billing=success`, 'back in the calendar')
    await stripe.settled()
    t.match(await status(app, user), { subscriptionStatus: 'trialing', hasSubscription: true, isReadOnly: false })
    const again = await app.inject({ method: 'POST', url: '/api/billing/checkout', headers: user.headers })
    t.equal(again.statusCode, 409)
    t.equal(again.json().code, 'SUBSCRIPTION_EXISTS')

    const subscription = [...stripe.state.subscriptions.values()].find((entry) => entry['customer'] === customer?.id)
    const control = async (action: string) => {
      const response = await fetch(`${stripe.url}/control/subscriptions/${subscription?.id ?? ''}/${action}`, { method: 'POST' })
      t.equal(response.status, 200, action)
      await stripe.settled()
    }
    await control('end-trial')
    t.match(await status(app, user), { subscriptionStatus: 'active', trialEndsAt: null, isReadOnly: false, needsPaymentMethod: false })

    await control('fail-payment')
    t.match(await status(app, user), { subscriptionStatus: 'past_due', isReadOnly: false, needsPaymentMethod: true }, 'invoice.payment_failed: past_due')
    t.equal((await write(app, user)).statusCode, 204, 'past_due still writes')

    const fix = await app.inject({ method: 'POST', url: '/api/billing/payment-method', headers: user.headers })
    t.equal(fix.statusCode, 200)
    const fixed = await completeCheckout(String(fix.json().url))
    t.equal(fixed.headers.get('location'), `${WEB_URL}/day?billing=card-updated`)
    await stripe.settled()
    t.match(await status(app, user), { subscriptionStatus: 'active', needsPaymentMethod: false }, 'the new card paid the open invoice')

    const cancelled = await app.inject({ method: 'POST', url: '/api/billing/subscription/cancel', headers: user.headers })
    t.match(cancelled.json(), { subscriptionStatus: 'active', cancelAtPeriodEnd: true })
    await stripe.settled()
    const resumed = await app.inject({ method: 'POST', url: '/api/billing/subscription/resume', headers: user.headers })
    t.match(resumed.json(), { subscriptionStatus: 'active', cancelAtPeriodEnd: false })
    await stripe.settled()

    await app.inject({ method: 'POST', url: '/api/billing/subscription/cancel', headers: user.headers })
    await control('renew')
    t.match(await status(app, user), { subscriptionStatus: 'canceled', isReadOnly: true, hasSubscription: false }, 'the period ended: read-only')
    const refused = await write(app, user)
    t.equal(refused.statusCode, 403)
    t.equal(refused.json().code, 'BILLING_REQUIRED')
    t.equal((await app.inject({ method: 'GET', url: READ_URL, headers: user.headers })).statusCode, 200, 'reads still work')
    const view = await app.inject({ method: 'PUT', url: '/api/calendars/hidden', headers: user.headers, payload: { hidden: ['own'] } })
    t.equal(view.statusCode, 200, 'which calendars are shown is still the user\'s choice')

    const fresh = await app.inject({ method: 'POST', url: '/api/billing/checkout', headers: user.headers })
    t.equal(fresh.statusCode, 200, 'checkout is offered in place')
    const second = stripe.state.sessions.get(String(fresh.json().url).split('/').pop() ?? '')
    t.equal((second?.['subscription_data'] as { trial_end?: number }).trial_end, undefined, 'no second trial')
    t.equal(stripe.state.customers.size >= 1 && [...stripe.state.customers.values()].filter((entry) => entry['email'] === email).length, 1, 'one customer per user')
  })

  // What the operator's billing_webhooks_total says (docs/operations.md), read from the app's registry.
  const webhookCount = async (outcome: string): Promise<number> => metricValue(parseMetrics(await app.metrics.metrics()), 'billing_webhooks_total', { outcome }) ?? 0

  await t.test('webhook: unsigned, wrongly signed and stale deliveries are refused and change nothing', async (t) => {
    const refusedBefore = await webhookCount('signature_invalid')
    const event = { id: 'evt_forged_1', object: 'event', type: 'customer.subscription.updated', created: Math.floor(Date.now() / 1000), data: { object: { id: 'sub_forged', object: 'subscription' } } }
    const payload = JSON.stringify(event)
    const unsigned = await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: { 'content-type': 'application/json' }, payload })
    t.equal(unsigned.statusCode, 400)
    t.equal(unsigned.json().code, 'WEBHOOK_SIGNATURE_INVALID')
    const wrong = signedDelivery(event, 'whsec_someone_else')
    t.equal((await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: wrong.headers, payload: wrong.payload })).statusCode, 400)
    const stale = signedDelivery(event, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 301)
    t.equal((await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: stale.headers, payload: stale.payload })).statusCode, 400, 'older than 5 minutes')
    const good = signedDelivery(event)
    const altered = good.payload.replace('sub_forged', 'sub_forgee')
    t.equal((await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: good.headers, payload: altered })).statusCode, 400, 'a changed byte')
    t.equal(await processed.countDocuments({ _id: 'evt_forged_1' as unknown as ObjectId }), 0, 'nothing recorded')
    t.equal(await webhookCount('signature_invalid') - refusedBefore, 4, 'each refusal counted for the operator')
  })

  await t.test('webhook: replayed, out of order, body not trusted, failed handler retried', async (t) => {
    const user = await signUp(app, { email: uniqueEmail('hooks'), password: 'pw-for-hooks-1' })
    const checkout = await app.inject({ method: 'POST', url: '/api/billing/checkout', headers: user.headers })
    t.equal(checkout.statusCode, 200, checkout.body)
    await completeCheckout(String(checkout.json().url))
    await stripe.settled()
    const subscription = [...stripe.state.subscriptions.values()].find((entry) => (entry['metadata'] as { userId?: string }).userId === user.userId)
    const id = String(subscription?.id)
    const newest = Math.floor(Date.now() / 1000)

    // The body claims canceled; Stripe (re-fetched) says trialing, and that is what is kept.
    const lie = { id: 'evt_lie_1', object: 'event', type: 'customer.subscription.updated', created: newest, data: { object: { id, object: 'subscription', status: 'canceled' } } }
    const delivered = signedDelivery(lie)
    const first = await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: delivered.headers, payload: delivered.payload })
    t.same(first.json(), { received: true })
    t.match(await status(app, user), { subscriptionStatus: 'trialing' }, 'the state is Stripe\'s, not the body\'s')

    // Stripe's state moves on (cancelled at the stand-in without any delivery reaching us yet).
    stripe.setWebhookUrl('http://127.0.0.1:9/nowhere')
    stripe.state.cancel(subscription!)
    await stripe.settled()
    stripe.setWebhookUrl(`${base}/api/billing/webhook`)
    const replay = await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: delivered.headers, payload: delivered.payload })
    t.same(replay.json(), { received: true, duplicate: true }, 'a replay is acknowledged and not processed')
    t.match(await status(app, user), { subscriptionStatus: 'trialing' }, 'so it did not re-fetch')

    // Delivered late and out of order, dated a minute before the one applied: Stripe's state now.
    const late = signedDelivery({ ...lie, id: 'evt_late_1', created: newest - 60 })
    await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: late.headers, payload: late.payload })
    t.match(await status(app, user), { subscriptionStatus: 'canceled', isReadOnly: true }, 'an event delivered late brings Stripe\'s current state, re-fetched, not its own')

    const broken = signedDelivery({ id: 'evt_broken_1', object: 'event', type: 'customer.subscription.updated', created: newest + 30, data: { object: { id: 'sub_missing', object: 'subscription' } } })
    const failed = await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: broken.headers, payload: broken.payload })
    t.equal(failed.statusCode, 500, 'a failed handler answers 5xx so that Stripe retries')
    t.equal(await processed.countDocuments({ _id: 'evt_broken_1' as unknown as ObjectId }), 0, 'and its id is forgotten')
    const failedBefore = await webhookCount('failed')
    const retried = await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: broken.headers, payload: broken.payload })
    t.equal(retried.statusCode, 500, 'the retry is processed again, not taken for a duplicate')
    t.equal(await webhookCount('failed') - failedBefore, 1, 'a failed delivery counted as failed')
    t.ok(await webhookCount('duplicate') >= 1, 'the replay counted as a duplicate')
    t.ok(await webhookCount('applied') >= 2, 'and the applied ones as applied')
  })

  await t.test('webhook: a state read before another and stored after it changes nothing, in the same second or across a cancel', async (t) => {
    const user = await signUp(app, { email: uniqueEmail('burst'), password: 'pw-for-burst-1' })
    const checkout = await app.inject({ method: 'POST', url: '/api/billing/checkout', headers: user.headers })
    await completeCheckout(String(checkout.json().url))
    await stripe.settled()
    const subscription = [...stripe.state.subscriptions.values()].find((entry) => (entry['metadata'] as { userId?: string }).userId === user.userId)
    const id = String(subscription?.id)
    t.match(await status(app, user), { subscriptionStatus: 'trialing', cancelAtPeriodEnd: false })
    // Only the deliveries below reach the backend.
    stripe.setWebhookUrl('http://127.0.0.1:9/nowhere')
    t.teardown(() => { stripe.setWebhookUrl(`${base}/api/billing/webhook`) })
    const second = Math.floor(Date.now() / 1000)
    const deliver = async (eventId: string) => {
      const delivery = signedDelivery({ id: eventId, object: 'event', type: 'customer.subscription.updated', created: second, data: { object: { id, object: 'subscription' } } })
      return await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: delivery.headers, payload: delivery.payload })
    }

    // A delivery reads the subscription, and its answer is slow; meanwhile the user cancels.
    const slowCancel = proxy.holdNext(`/v1/subscriptions/${id}`)
    const beforeCancel = deliver('evt_burst_1')
    await slowCancel.answered
    const cancelled = await app.inject({ method: 'POST', url: '/api/billing/subscription/cancel', headers: user.headers })
    t.match(cancelled.json(), { cancelAtPeriodEnd: true })
    slowCancel.release()
    t.same((await beforeCancel).json(), { received: true })
    t.match(await status(app, user), { subscriptionStatus: 'trialing', cancelAtPeriodEnd: true }, 'the cancel stays: the delivery read Stripe before it')

    // Two deliveries of one second (a burst, as the card fix makes): the first read is the older.
    const slowFirst = proxy.holdNext(`/v1/subscriptions/${id}`)
    const first = deliver('evt_burst_2')
    await slowFirst.answered
    stripe.state.cancel(subscription!)
    await stripe.settled()
    t.same((await deliver('evt_burst_3')).json(), { received: true })
    t.match(await status(app, user), { subscriptionStatus: 'canceled' })
    slowFirst.release()
    t.same((await first).json(), { received: true }, 'the older read is acknowledged')
    t.match(await status(app, user), { subscriptionStatus: 'canceled', isReadOnly: true }, 'and does not bring the trial back')
    t.match(log.text(), /billing state read before the one already stored; ignored/)
  })

  await t.test('the gate: one case per status', async (t) => {
    for (const state of SUBSCRIPTION_STATUSES) {
      const user = await signUp(app, { email: uniqueEmail(`gate-${state}`), password: 'pw-for-gate-1' })
      await status(app, user)
      const fields = state === 'trial_expired'
        ? { trialEndsAt: new Date(Date.now() - DAY_MS) }
        : state === 'trialing'
          ? {}
          : { subscriptionId: `sub_${state}`, subscriptionStatus: state, customerId: 'cus_gate' }
      await records.updateOne({ _id: new ObjectId(user.userId) }, { $set: fields })
      const readOnly = !['trialing', 'active', 'past_due'].includes(state)
      const answer = await write(app, user)
      if (readOnly) {
        t.equal(answer.statusCode, 403, `${state}: a write is refused`)
        t.equal(answer.json().code, 'BILLING_REQUIRED')
      } else {
        t.equal(answer.statusCode, 204, `${state}: a write goes through`)
      }
      t.equal((await app.inject({ method: 'GET', url: READ_URL, headers: user.headers })).statusCode, 200, `${state}: reads work`)
      t.equal((await status(app, user))['isReadOnly'], readOnly)
      const signOut = await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { ...user.headers, 'sx-auth-mode': 'header' } })
      t.equal(signOut.statusCode, 200, `${state}: sign-out works`)
    }
  })

  await t.test('nothing to fix, cancel or resume without a subscription; events of unknown customers are acknowledged', async (t) => {
    const user = await signUp(app, { email: uniqueEmail('nosub'), password: 'pw-for-nosub-1' })
    for (const url of ['/api/billing/payment-method', '/api/billing/subscription/cancel', '/api/billing/subscription/resume']) {
      const answer = await app.inject({ method: 'POST', url, headers: user.headers })
      t.equal(answer.statusCode, 409, url)
      t.equal(answer.json().code, 'NO_SUBSCRIPTION')
    }
    // A subscription made elsewhere on the same Stripe account: no user of ours, nothing changes.
    const customer = [...stripe.state.customers.values()][0]
    const foreign = { ...[...stripe.state.subscriptions.values()][0]!, id: 'sub_foreign', customer: 'cus_foreign', metadata: {} }
    stripe.state.subscriptions.set('sub_foreign', foreign)
    const delivery = signedDelivery({ id: 'evt_foreign_1', object: 'event', type: 'customer.subscription.updated', created: Math.floor(Date.now() / 1000), data: { object: { id: 'sub_foreign', object: 'subscription' } } })
    const answer = await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: delivery.headers, payload: delivery.payload })
    t.same(answer.json(), { received: true })
    t.equal(await records.countDocuments({ subscriptionId: 'sub_foreign' }), 0)
    // Without metadata the customer id finds the user.
    const owned = { ...foreign, id: 'sub_by_customer', customer: customer?.id, status: 'active' }
    stripe.state.subscriptions.set('sub_by_customer', owned)
    const byCustomer = signedDelivery({ id: 'evt_customer_1', object: 'event', type: 'invoice.created', created: Math.floor(Date.now() / 1000), data: { object: { id: 'in_x', object: 'invoice' } } })
    t.same((await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: byCustomer.headers, payload: byCustomer.payload })).json(), { received: true }, 'an event type not used is acknowledged')
    const owner = signedDelivery({ id: 'evt_customer_2', object: 'event', type: 'customer.subscription.created', created: Math.floor(Date.now() / 1000) + 100, data: { object: { id: 'sub_by_customer', object: 'subscription' } } })
    await app.inject({ method: 'POST', url: '/api/billing/webhook', headers: owner.headers, payload: owner.payload })
    t.equal(await records.countDocuments({ customerId: customer?.id, subscriptionId: 'sub_by_customer', subscriptionStatus: 'active' }), 1, 'a new subscription of a known customer replaces the ended one')
  })

  await t.test('no secret and no signature reaches the log', async (t) => {
    const text = log.text()
    for (const secret of [SECRET_KEY, WEBHOOK_SECRET]) t.notOk(text.includes(secret))
    t.notMatch(text, /v1=[0-9a-f]{64}/, 'no Stripe-Signature value')
  })

  await t.test('a half-written record grants nothing; the bypass list skips the gate', async (t) => {
    const user = await signUp(app, { email: uniqueEmail('half'), password: 'pw-for-half-1' })
    await records.insertOne({ _id: new ObjectId(user.userId), customerId: 'cus_half' } as never)
    t.equal((await write(app, user)).statusCode, 403, 'no trial end: read-only, not let through')

    const unproven = await signUp(app, { email: bypassEmail, password: 'pw-for-staff-1' })
    await status(app, unproven)
    await records.updateOne({ _id: new ObjectId(unproven.userId) }, { $set: { trialEndsAt: new Date(Date.now() - DAY_MS) } })
    t.match(await status(app, unproven), { subscriptionStatus: 'trial_expired', isReadOnly: true, bypass: false }, 'a staff address nobody has proven yet is not bypassed')
    t.equal((await write(app, unproven)).statusCode, 403)

    await verifyEmail(unproven.userId, bypassEmail)
    const staff = await signIn(app, { email: bypassEmail, password: 'pw-for-staff-1' })
    t.match(await status(app, staff), { subscriptionStatus: 'trial_expired', isReadOnly: false, bypass: true })
    t.equal((await write(app, staff)).statusCode, 204, 'once verified, matched case-insensitively')
  })

  await t.test('one trial per verified email and per provider account, whatever user id it comes back under', async (t) => {
    const claims = app.mongo.db.collection('trialClaims')
    const users = app.mongo.db.collection('users')
    const email = uniqueEmail('again')
    const expired = new Date(Date.now() - DAY_MS)
    const first = await signUp(app, { email, password: 'pw-for-again-1' })
    await status(app, first)
    // Its trial was spent (signed up eight days ago), then it proved the address by its link.
    await records.updateOne({ _id: new ObjectId(first.userId) }, { $set: { trialEndsAt: expired } })
    t.equal((await verifyThroughLink(app, first.userId, email)).statusCode, 200)
    // The account is removed (by its operator): its records go, the claim of its trial stays.
    await supertokens.deleteUser(first.userId)
    await users.deleteOne({ _id: new ObjectId(first.userId) })
    await records.deleteOne({ _id: new ObjectId(first.userId) })

    const second = await signUp(app, { email, password: 'pw-for-again-2' })
    t.match(await status(app, second), { subscriptionStatus: 'trialing', isReadOnly: false }, 'an address not proven yet claims nothing')
    t.equal((await verifyThroughLink(app, second.userId, email)).statusCode, 200)
    t.match(await status(app, second), { subscriptionStatus: 'trial_expired', isReadOnly: true, trialEndsAt: expired.toISOString() }, 'proven, it is the spent trial')
    t.equal((await write(app, second)).statusCode, 403, 'and writes need a subscription')
    t.notOk(JSON.stringify(await claims.find().toArray()).includes(email.split('@')[0] as string), 'no address kept in clear')

    // A provider account, claimed through Sync's connect: the same rule.
    const outlookAccount = `ms-${new ObjectId().toHexString()}`
    const claim = async (user: SignedIn, userEmail: string) => await app.inject({
      method: 'POST',
      url: '/api/internal/provider-accounts/claim',
      headers: { authorization: `Bearer ${app.config.backend.serviceToken}` },
      payload: { userId: user.userId, provider: 'microsoft', accountId: outlookAccount, email: userEmail }
    })
    const thirdEmail = uniqueEmail('outlook')
    const third = await signUp(app, { email: thirdEmail, password: 'pw-for-again-3' })
    await status(app, third)
    await records.updateOne({ _id: new ObjectId(third.userId) }, { $set: { trialEndsAt: expired } })
    t.match((await claim(third, thirdEmail)).json(), { outcome: 'claimed' })
    // The account is let go (the user record forgets it), so another user may hold it.
    await users.updateOne({ _id: new ObjectId(third.userId) }, { $unset: { microsoft: '' } })
    const fourthEmail = uniqueEmail('outlook-two')
    const fourth = await signUp(app, { email: fourthEmail, password: 'pw-for-again-4' })
    t.match(await status(app, fourth), { subscriptionStatus: 'trialing' })
    t.match((await claim(fourth, fourthEmail)).json(), { outcome: 'claimed' })
    t.match(await status(app, fourth), { subscriptionStatus: 'trial_expired', isReadOnly: true }, 'but not a second trial with it')

    const fresh = await signUp(app, { email: uniqueEmail('fresh'), password: 'pw-for-fresh-1' })
    t.match(await status(app, fresh), { subscriptionStatus: 'trialing', isReadOnly: false }, 'a new person keeps a whole trial')
  })
})

/** What a person's click on the verification link sends (the session library's own endpoint). */
async function verifyThroughLink (app: FastifyInstance, userId: string, email: string) {
  const token = await EmailVerification.createEmailVerificationToken('public', supertokens.convertToRecipeUserId(userId), email)
  if (token.status !== 'OK') throw new Error(`no verification token: ${token.status}`)
  return await app.inject({ method: 'POST', url: '/api/auth/user/email/verify', payload: { method: 'token', token: token.token } })
}

test('Stripe unreachable: 503 with Retry-After, nothing stored, the gate still answers', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps, { extra: { billing: billingBlock('http://127.0.0.1:9') } })
  const user = await signUp(app, { email: uniqueEmail('down'), password: 'pw-for-down-1' })
  const checkout = await app.inject({ method: 'POST', url: '/api/billing/checkout', headers: user.headers })
  t.equal(checkout.statusCode, 503)
  t.equal(checkout.json().code, 'BILLING_UNAVAILABLE')
  t.equal(checkout.headers['retry-after'], '5')
  const stored = await app.mongo.db.collection('billing').findOne({ _id: new ObjectId(user.userId) })
  t.equal(stored?.['customerId'], undefined, 'no customer recorded')
  t.equal((await write(app, user)).statusCode, 204, 'the trial does not depend on Stripe')
  const config = await app.inject({ method: 'GET', url: '/api/config', headers: user.headers })
  t.same(config.json().billing, { publishableKey: PUBLISHABLE_KEY, trialDays: 7 }, 'no price while Stripe cannot tell')
})

test('without the billing block: no routes, no gate', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const user = await signUp(app, { email: uniqueEmail('selfhost'), password: 'pw-for-selfhost-1' })
  for (const [method, url] of [['GET', '/api/billing/status'], ['POST', '/api/billing/checkout'], ['POST', '/api/billing/webhook']] as const) {
    const answer = await app.inject({ method, url, headers: user.headers })
    t.equal(answer.statusCode, 404, `${method} ${url} ${answer.body}`)
  }
  t.equal((await write(app, user)).statusCode, 204)
  t.equal(await app.mongo.db.collection('billing').countDocuments(), 0, 'no billing record')
  t.equal((await app.inject({ method: 'GET', url: '/api/config', headers: user.headers })).json().billing, undefined)
})
