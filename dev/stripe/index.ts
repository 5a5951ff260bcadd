// A Stripe stand-in for development and tests: the subset of Stripe's API that the `stripe` package
// calls for the billing block (customers, prices, Checkout Sessions, subscriptions, invoices), a
// hosted checkout page a person completes or abandons, and a control surface that moves time and
// delivers signed webhooks with retries. See README.md for what follows Stripe's documentation.
import { createHmac, timingSafeEqual } from 'node:crypto'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { listenOnLoopback, refuseProduction } from '../stand-in/index.js'
import { parseStripeForm, record, list, text, type FormValue } from './form.js'
import { newId, StripeState, type Delivery, type Json, type StripeObject, type StripeEvent } from './state.js'
import { checkoutPage, controlPage } from './pages.js'

export interface StripeStandInOptions {
  port?: number
  /** The secret key clients must present (Authorization: Bearer). */
  secretKey: string
  /** Signs every delivery (Stripe-Signature), as the endpoint's whsec_ secret does. */
  webhookSecret: string
  /** Where events are delivered; may be set later with setWebhookUrl. */
  webhookUrl?: string
  price?: { id: string, unitAmount: number, currency: string, interval: string }
  /** Delay before each retry of a failed delivery; Stripe's own schedule spans three days. */
  retryDelaysMs?: number[]
}

export interface StripeStandIn {
  url: string
  state: StripeState
  deliveries: () => Delivery[]
  setWebhookUrl: (url: string) => void
  /** Resolves when every delivery so far has ended (delivered, or out of retries). */
  settled: () => Promise<void>
  close: () => Promise<void>
}

export const DEFAULT_PRICE = { id: 'price_calendar_monthly', unitAmount: 500, currency: 'eur', interval: 'month' }

/** Stripe's signature scheme: HMAC-SHA256 of `${timestamp}.${payload}` with the endpoint secret, as `t=...,v1=...`. */
export function signatureHeader (payload: string, secret: string, timestamp: number): string {
  const signature = createHmac('sha256', secret).update(`${timestamp}.${payload}`).digest('hex')
  return `t=${timestamp},v1=${signature}`
}

function stripeError (reply: FastifyReply, statusCode: number, type: string, message: string, param?: string) {
  return reply.code(statusCode).send({ error: { type, message, ...(param !== undefined ? { param } : {}) } })
}

function sameSecret (given: string, expected: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

function expandList (query: unknown): string[] {
  const parsed = typeof query === 'string' ? parseStripeForm(query) : {}
  return list(parsed['expand']).filter((value): value is string => typeof value === 'string')
}

export async function startStripeStandIn (options: StripeStandInOptions): Promise<StripeStandIn> {
  refuseProduction('dev/stripe (a Stripe stand-in)')
  const state = new StripeState(options.price ?? DEFAULT_PRICE)
  const retryDelays = options.retryDelaysMs ?? [200, 1000, 5000, 15000]
  let webhookUrl = options.webhookUrl
  const deliveries: Delivery[] = []
  const inFlight = new Set<Promise<void>>()
  const idempotent = new Map<string, { statusCode: number, body: unknown }>()
  let closed = false

  async function deliver (event: StripeEvent, delivery: Delivery): Promise<void> {
    const payload = JSON.stringify(event, null, 2)
    for (let attempt = 0; attempt <= retryDelays.length; attempt += 1) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, retryDelays[attempt - 1]))
      if (webhookUrl === undefined || closed) break
      delivery.attempts += 1
      try {
        const response = await fetch(webhookUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/json; charset=utf-8',
            'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
            'stripe-signature': signatureHeader(payload, options.webhookSecret, Math.floor(Date.now() / 1000))
          },
          body: payload,
          signal: AbortSignal.timeout(10_000)
        })
        delivery.lastStatusCode = response.status
        await response.arrayBuffer()
        if (response.ok) {
          delivery.status = 'delivered'
          return
        }
      } catch {
        delivery.lastStatusCode = null
      }
    }
    delivery.status = 'failed'
  }

  state.onEvent((event) => {
    const delivery: Delivery = { eventId: event.id, type: event.type, attempts: 0, status: 'pending', lastStatusCode: null }
    deliveries.push(delivery)
    const running = deliver(event, delivery).finally(() => inFlight.delete(running))
    inFlight.add(running)
  })

  const app = Fastify({ logger: false })
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, parseStripeForm(String(body)))
  })

  function hasKey (request: FastifyRequest): boolean {
    const header = request.headers.authorization ?? ''
    return sameSecret(header.startsWith('Bearer ') ? header.slice(7) : '', options.secretKey)
  }

  // The API under /v1: the secret key, and Idempotency-Key on POST (a repeated key answers the first result).
  await app.register(async (api) => {
    api.addHook('onRequest', async (request, reply) => {
      if (!hasKey(request)) return stripeError(reply, 401, 'invalid_request_error', 'Invalid API Key provided')
      const key = request.headers['idempotency-key']
      const replayed = request.method === 'POST' && typeof key === 'string' ? idempotent.get(`${request.url} ${key}`) : undefined
      if (replayed !== undefined) return reply.code(replayed.statusCode).header('idempotent-replayed', 'true').send(replayed.body)
      return undefined
    })
    api.addHook('onSend', async (request, reply, payload) => {
      const key = request.headers['idempotency-key']
      if (request.method === 'POST' && typeof key === 'string' && typeof payload === 'string' && reply.getHeader('idempotent-replayed') === undefined) {
        idempotent.set(`${request.url} ${key}`, { statusCode: reply.statusCode, body: JSON.parse(payload) as unknown })
      }
      return payload
    })
    const body = (request: FastifyRequest): Record<string, FormValue> => (request.body ?? {}) as Record<string, FormValue>
    const found = <T extends StripeObject>(map: Map<string, T>, id: string, reply: FastifyReply, kind: string): T | undefined => {
      const object = map.get(id)
      if (object === undefined) stripeError(reply, 404, 'invalid_request_error', `No such ${kind}: '${id}'`, 'id')
      return object
    }

    api.post('/customers', async (request) => {
      const input = body(request)
      const customer: StripeObject = {
        id: newId('cus'),
        object: 'customer',
        email: text(input['email']) ?? null,
        metadata: record(input['metadata']),
        created: state.now(),
        invoice_settings: { default_payment_method: null },
        livemode: false
      }
      state.customers.set(customer.id, customer)
      return customer
    })
    api.get<{ Params: { id: string } }>('/customers/:id', async (request, reply) => found(state.customers, request.params.id, reply, 'customer') ?? reply)
    api.get<{ Params: { id: string } }>('/prices/:id', async (request, reply) => found(state.prices, request.params.id, reply, 'price') ?? reply)

    api.post('/checkout/sessions', async (request, reply) => {
      const input = body(request)
      const mode = text(input['mode'])
      const customer = text(input['customer'])
      const successUrl = text(input['success_url'])
      if (mode !== 'subscription' && mode !== 'setup') return stripeError(reply, 400, 'invalid_request_error', 'mode must be subscription or setup here', 'mode')
      if (customer === undefined || !state.customers.has(customer)) return stripeError(reply, 400, 'invalid_request_error', `No such customer: '${customer ?? ''}'`, 'customer')
      if (successUrl === undefined) return stripeError(reply, 400, 'invalid_request_error', 'Missing required param: success_url.', 'success_url')
      const lineItems = list(input['line_items']).map((item) => ({ price: text(record(item)['price']) ?? '', quantity: Number(text(record(item)['quantity']) ?? 1) }))
      if (mode === 'subscription' && (lineItems.length === 0 || !lineItems.every((item) => state.prices.has(item.price)))) {
        return stripeError(reply, 400, 'invalid_request_error', 'line_items must name an existing recurring price', 'line_items')
      }
      const subscriptionData = record(input['subscription_data'])
      const trialEnd = text(subscriptionData['trial_end'])
      if (trialEnd !== undefined && Number(trialEnd) < state.now() + 48 * 60 * 60) {
        return stripeError(reply, 400, 'invalid_request_error', 'subscription_data.trial_end must be at least 48 hours in the future', 'subscription_data[trial_end]')
      }
      if (mode === 'setup' && text(input['currency']) === undefined && list(input['allowed_payment_method_types']).length === 0) {
        return stripeError(reply, 400, 'invalid_request_error', 'currency is required in setup mode when allowed_payment_method_types is not set', 'currency')
      }
      const id = newId('cs_test')
      const session: StripeObject = {
        id,
        object: 'checkout.session',
        mode,
        status: 'open',
        payment_status: mode === 'setup' ? 'no_payment_required' : 'unpaid',
        customer,
        client_reference_id: text(input['client_reference_id']) ?? null,
        success_url: successUrl,
        cancel_url: text(input['cancel_url']) ?? null,
        url: `${standIn.url}/c/pay/${id}`,
        subscription: null,
        setup_intent: null,
        metadata: record(input['metadata']),
        line_items: lineItems,
        subscription_data: { metadata: record(subscriptionData['metadata']), ...(trialEnd !== undefined ? { trial_end: Number(trialEnd) } : {}) },
        setup_intent_data: { metadata: record(record(input['setup_intent_data'])['metadata']) },
        created: state.now(),
        expires_at: state.now() + 24 * 60 * 60,
        livemode: false
      }
      state.sessions.set(id, session)
      return publicSession(session, [])
    })
    api.get<{ Params: { id: string } }>('/checkout/sessions/:id', async (request, reply) => {
      const session = found(state.sessions, request.params.id, reply, 'checkout.session')
      return session === undefined ? reply : publicSession(session, expandList(request.url.split('?')[1]))
    })

    api.get<{ Params: { id: string } }>('/subscriptions/:id', async (request, reply) => found(state.subscriptions, request.params.id, reply, 'subscription') ?? reply)
    api.post<{ Params: { id: string } }>('/subscriptions/:id', async (request, reply) => {
      const subscription = found(state.subscriptions, request.params.id, reply, 'subscription')
      if (subscription === undefined) return reply
      const input = body(request)
      if (subscription['status'] === 'canceled') return stripeError(reply, 400, 'invalid_request_error', 'A canceled subscription can only update its cancellation_details and metadata.')
      const cancel = text(input['cancel_at_period_end'])
      if (cancel !== undefined) subscription['cancel_at_period_end'] = cancel === 'true'
      const trialEnd = text(input['trial_end'])
      if (trialEnd !== undefined && trialEnd !== 'now') return stripeError(reply, 400, 'invalid_request_error', 'This stand-in moves a trial end only to now', 'trial_end')
      const method = text(input['default_payment_method'])
      if (method !== undefined) {
        if (!state.paymentMethods.has(method)) return stripeError(reply, 400, 'invalid_request_error', `No such PaymentMethod: '${method}'`, 'default_payment_method')
        subscription['default_payment_method'] = method
      }
      // trial_end=now ends the trial at once: the paid period starts and its invoice is charged.
      if (trialEnd === 'now' && subscription['status'] === 'trialing') state.endTrial(subscription)
      else state.emit('customer.subscription.updated', subscription)
      return subscription
    })

    api.get<{ Params: { id: string } }>('/invoices/:id', async (request, reply) => found(state.invoices, request.params.id, reply, 'invoice') ?? reply)
    api.post<{ Params: { id: string } }>('/invoices/:id/pay', async (request, reply) => {
      const invoice = found(state.invoices, request.params.id, reply, 'invoice')
      if (invoice === undefined) return reply
      if (!state.pay(invoice)) return stripeError(reply, 402, 'card_error', 'Your card was declined.')
      return invoice
    })
  }, { prefix: '/v1' })

  function publicSession (session: StripeObject, expand: string[]): StripeObject {
    const { line_items: _items, subscription_data: _data, setup_intent_data: _setup, ...shown } = session
    if (expand.includes('setup_intent') && typeof session['setup_intent'] === 'string') {
      return { ...shown, setup_intent: state.setupIntents.get(session['setup_intent']) ?? null }
    }
    return shown as StripeObject
  }

  // The hosted checkout page (what session.url points at): a person enters a card, or goes back.
  app.get<{ Params: { id: string } }>('/c/pay/:id', async (request, reply) => {
    const session = state.sessions.get(request.params.id)
    if (session === undefined) return reply.code(404).type('text/html').send('<!doctype html><title>Not found</title><p>This checkout link is not valid.')
    const price = state.prices.get(String(((session['line_items'] ?? []) as Array<{ price: string }>)[0]?.price))
    return reply.type('text/html').send(checkoutPage(session, price, undefined))
  })
  app.post<{ Params: { id: string } }>('/c/pay/:id', async (request, reply) => {
    const session = state.sessions.get(request.params.id)
    if (session === undefined || session['status'] !== 'open') return reply.code(410).type('text/html').send('<!doctype html><title>Expired</title><p>This checkout session is no longer open.')
    const card = (text(record(request.body as FormValue)['card']) ?? '').replace(/\s+/g, '')
    const price = state.prices.get(String(((session['line_items'] ?? []) as Array<{ price: string }>)[0]?.price))
    if (!/^\d{12,19}$/.test(card)) return reply.code(400).type('text/html').send(checkoutPage(session, price, 'Your card number is incomplete.'))
    const customerId = String(session['customer'])
    if (session['mode'] === 'subscription' && card === '4000000000000002') {
      return reply.code(402).type('text/html').send(checkoutPage(session, price, 'Your card was declined.'))
    }
    const method = state.addPaymentMethod(customerId, card)
    session['status'] = 'complete'
    if (session['mode'] === 'setup') {
      const intent: StripeObject = {
        id: newId('seti'),
        object: 'setup_intent',
        status: 'succeeded',
        customer: customerId,
        payment_method: method.id,
        metadata: (session['setup_intent_data'] as { metadata: Json }).metadata,
        usage: 'off_session',
        created: state.now()
      }
      state.setupIntents.set(intent.id, intent)
      session['setup_intent'] = intent.id
      state.emit('checkout.session.completed', publicSession(session, []))
    } else {
      const subscription = state.createSubscription(session, method.id)
      session['subscription'] = subscription.id
      session['payment_status'] = 'paid'
      state.announceNewSubscription(publicSession(session, []), subscription)
    }
    return reply.redirect(String(session['success_url']).replace('{CHECKOUT_SESSION_ID}', session.id), 303)
  })

  // The control surface: a page for people, JSON for tests. Each action is what Stripe would do
  // when that time comes, with the events it sends.
  app.get('/control', async (_request, reply) => reply.type('text/html').send(controlPage(state, deliveries)))
  app.get('/control/state.json', async () => ({
    now: state.now(),
    customers: [...state.customers.values()],
    subscriptions: [...state.subscriptions.values()],
    invoices: [...state.invoices.values()],
    events: state.events.map((event) => ({ id: event.id, type: event.type, created: event.created })),
    deliveries
  }))
  const actions: Record<string, (subscription: StripeObject) => void> = {
    'end-trial': (subscription) => state.endTrial(subscription),
    renew: (subscription) => state.renew(subscription),
    'fail-payment': (subscription) => state.renew(subscription, { forceFailure: true }),
    cancel: (subscription) => state.cancel(subscription)
  }
  app.post<{ Params: { id: string, action: string } }>('/control/subscriptions/:id/:action', async (request, reply) => {
    const subscription = state.subscriptions.get(request.params.id)
    const action = actions[request.params.action]
    if (subscription === undefined || action === undefined) return reply.code(404).send({ error: 'no such subscription or action' })
    try {
      action(subscription)
    } catch (error) {
      return reply.code(409).send({ error: (error as Error).message })
    }
    const wantsPage = (request.headers.accept ?? '').includes('text/html')
    return wantsPage ? reply.redirect('/control', 303) : subscription
  })
  app.post('/control/webhook', async (request, reply) => {
    const url = text(record(request.body as FormValue)['url'])
    if (url === undefined || !/^https?:\/\//.test(url)) return reply.code(400).send({ error: 'url is required' })
    webhookUrl = url
    return { url }
  })

  const standIn: StripeStandIn = {
    url: '',
    state,
    deliveries: () => deliveries,
    setWebhookUrl: (url) => { webhookUrl = url },
    settled: async () => {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight])
    },
    close: async () => {
      closed = true
      await app.close()
    }
  }
  standIn.url = await listenOnLoopback(app, options.port, 'dev/stripe')
  return standIn
}
