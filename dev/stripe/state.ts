// The Stripe world of the stand-in: customers, prices, Checkout Sessions, subscriptions, invoices,
// setup intents and events, shaped as Stripe's API reference describes them (API version
// 2026-10-28: the billing period lives on the subscription item; an invoice names its subscription
// under parent.subscription_details). A period or trial ends when the control surface says so.
import { randomBytes } from 'node:crypto'

export type Json = Record<string, unknown>

export interface StripeObject extends Json { id: string, object: string }

export interface StripeEvent extends StripeObject {
  type: string
  created: number
  data: { object: StripeObject }
}

/** A card number whose charges are declined (Stripe's test card 4000 0000 0000 0341 attaches, then fails). */
const DECLINING_CARDS = new Set(['4000000000000002', '4000000000000341'])

const DAY = 24 * 60 * 60

export function newId (prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`
}

export class StripeState {
  readonly customers = new Map<string, StripeObject>()
  readonly prices = new Map<string, StripeObject>()
  readonly sessions = new Map<string, StripeObject>()
  readonly subscriptions = new Map<string, StripeObject>()
  readonly invoices = new Map<string, StripeObject>()
  readonly setupIntents = new Map<string, StripeObject>()
  readonly paymentMethods = new Map<string, StripeObject & { card: { last4: string, number: string } }>()
  readonly events: StripeEvent[] = []
  private readonly listeners: Array<(event: StripeEvent) => void> = []

  constructor (price: { id: string, unitAmount: number, currency: string, interval: string }) {
    this.prices.set(price.id, {
      id: price.id,
      object: 'price',
      active: true,
      currency: price.currency,
      unit_amount: price.unitAmount,
      type: 'recurring',
      recurring: { interval: price.interval, interval_count: 1 },
      livemode: false
    })
  }

  now (): number {
    return Math.floor(Date.now() / 1000)
  }

  onEvent (listener: (event: StripeEvent) => void): void {
    this.listeners.push(listener)
  }

  emit (type: string, object: StripeObject): StripeEvent {
    const event: StripeEvent = {
      id: newId('evt'),
      object: 'event',
      api_version: '2026-10-28.endive',
      created: this.now(),
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type,
      data: { object: structuredClone(object) }
    }
    this.events.push(event)
    for (const listener of this.listeners) listener(event)
    return event
  }

  private intervalSeconds (priceId: string): number {
    const price = this.prices.get(priceId)
    const interval = (price?.['recurring'] as { interval?: string } | undefined)?.interval
    return interval === 'year' ? 365 * DAY : interval === 'week' ? 7 * DAY : interval === 'day' ? DAY : 30 * DAY
  }

  private item (subscription: StripeObject): Json {
    return ((subscription['items'] as { data: Json[] }).data)[0] ?? {}
  }

  private priceOf (subscription: StripeObject): StripeObject | undefined {
    return this.prices.get(String((this.item(subscription)['price'] as Json | undefined)?.['id']))
  }

  private cardDeclines (paymentMethodId: unknown): boolean {
    const method = typeof paymentMethodId === 'string' ? this.paymentMethods.get(paymentMethodId) : undefined
    return method === undefined || DECLINING_CARDS.has(method.card.number)
  }

  addPaymentMethod (customerId: string, cardNumber: string): StripeObject {
    const number = cardNumber.replace(/\s+/g, '')
    const method = {
      id: newId('pm'),
      object: 'payment_method',
      type: 'card',
      customer: customerId,
      card: { brand: 'visa', last4: number.slice(-4), number },
      created: this.now()
    }
    this.paymentMethods.set(method.id, method)
    return method
  }

  /** Issues the invoice of the period that starts now and tries to pay it with the subscription's card. */
  private invoiceFor (subscription: StripeObject, options: { forceFailure?: boolean } = {}): StripeObject {
    const price = this.priceOf(subscription)
    const amount = subscription['status'] === 'trialing' ? 0 : Number(price?.['unit_amount'] ?? 0)
    const declined = amount > 0 && (options.forceFailure === true || this.cardDeclines(subscription['default_payment_method']))
    const invoice: StripeObject = {
      id: newId('in'),
      object: 'invoice',
      customer: subscription['customer'],
      currency: price?.['currency'] ?? 'eur',
      amount_due: amount,
      amount_paid: declined ? 0 : amount,
      amount_remaining: declined ? amount : 0,
      attempted: amount > 0,
      attempt_count: amount > 0 ? 1 : 0,
      status: declined ? 'open' : 'paid',
      created: this.now(),
      parent: { type: 'subscription_details', subscription_details: { subscription: subscription.id, metadata: subscription['metadata'] } },
      livemode: false
    }
    this.invoices.set(invoice.id, invoice)
    subscription['latest_invoice'] = invoice.id
    return invoice
  }

  private settle (subscription: StripeObject, invoice: StripeObject): void {
    if (invoice['status'] === 'open') {
      subscription['status'] = 'past_due'
      this.emit('invoice.payment_failed', invoice)
    } else {
      this.emit('invoice.paid', invoice)
    }
    this.emit('customer.subscription.updated', subscription)
  }

  private startPeriod (subscription: StripeObject, start: number): void {
    const item = this.item(subscription)
    item['current_period_start'] = start
    item['current_period_end'] = start + this.intervalSeconds(String((item['price'] as Json)['id']))
  }

  /** Checkout in subscription mode completed with a card: the subscription and its first invoice. */
  createSubscription (session: StripeObject, paymentMethodId: string): StripeObject {
    const data = (session['subscription_data'] ?? {}) as { trial_end?: number, metadata?: Json }
    const lineItem = ((session['line_items'] ?? []) as Array<{ price: string, quantity?: number }>)[0]
    const price = this.prices.get(lineItem?.price ?? '')
    const now = this.now()
    const trialEnd = typeof data.trial_end === 'number' && data.trial_end > now ? data.trial_end : null
    const subscription: StripeObject = {
      id: newId('sub'),
      object: 'subscription',
      customer: session['customer'],
      status: trialEnd !== null ? 'trialing' : 'active',
      cancel_at_period_end: false,
      cancel_at: null,
      canceled_at: null,
      ended_at: null,
      created: now,
      start_date: now,
      trial_start: trialEnd !== null ? now : null,
      trial_end: trialEnd,
      metadata: data.metadata ?? {},
      default_payment_method: paymentMethodId,
      latest_invoice: null,
      currency: price?.['currency'] ?? 'eur',
      items: {
        object: 'list',
        data: [{ id: newId('si'), object: 'subscription_item', price, quantity: lineItem?.quantity ?? 1, current_period_start: now, current_period_end: now }]
      },
      livemode: false
    }
    if (trialEnd !== null) {
      const item = this.item(subscription)
      item['current_period_end'] = trialEnd
    } else {
      this.startPeriod(subscription, now)
    }
    this.subscriptions.set(subscription.id, subscription)
    const invoice = this.invoiceFor(subscription)
    if (invoice['status'] === 'open') subscription['status'] = 'incomplete'
    return subscription
  }

  announceNewSubscription (session: StripeObject, subscription: StripeObject): void {
    this.emit('checkout.session.completed', session)
    this.emit('customer.subscription.created', subscription)
    const invoice = this.invoices.get(String(subscription['latest_invoice']))
    if (invoice !== undefined) this.emit(invoice['status'] === 'paid' ? 'invoice.paid' : 'invoice.payment_failed', invoice)
  }

  /** The trial ends now: the first paid period starts and its invoice is charged. */
  endTrial (subscription: StripeObject): void {
    if (subscription['status'] !== 'trialing') throw new Error('the subscription is not trialing')
    const now = this.now()
    subscription['trial_end'] = now
    subscription['status'] = 'active'
    this.startPeriod(subscription, now)
    this.settle(subscription, this.invoiceFor(subscription))
  }

  /** The current period ends: a cancellation at period end takes effect, otherwise the next one is charged. */
  renew (subscription: StripeObject, options: { forceFailure?: boolean } = {}): void {
    if (['canceled', 'incomplete_expired'].includes(String(subscription['status']))) throw new Error('the subscription has ended')
    // Like a test clock attached to this one customer: the period is taken to have ended now, so
    // the next one starts now; other customers' clocks and event times stay real.
    if (subscription['cancel_at_period_end'] === true) {
      this.cancel(subscription)
      return
    }
    if (subscription['status'] === 'trialing') subscription['trial_end'] = this.now()
    subscription['status'] = 'active'
    this.startPeriod(subscription, this.now())
    this.settle(subscription, this.invoiceFor(subscription, options))
  }

  cancel (subscription: StripeObject): void {
    const now = this.now()
    subscription['status'] = 'canceled'
    subscription['canceled_at'] = now
    subscription['ended_at'] = now
    this.emit('customer.subscription.deleted', subscription)
  }

  /** POST /v1/invoices/:id/pay with the subscription's current card. */
  pay (invoice: StripeObject): boolean {
    if (invoice['status'] !== 'open') return invoice['status'] === 'paid'
    const subscription = this.subscriptions.get(String((invoice['parent'] as { subscription_details: { subscription: string } }).subscription_details.subscription))
    invoice['attempt_count'] = Number(invoice['attempt_count']) + 1
    if (subscription === undefined || this.cardDeclines(subscription['default_payment_method'])) {
      this.emit('invoice.payment_failed', invoice)
      return false
    }
    invoice['status'] = 'paid'
    invoice['amount_paid'] = invoice['amount_due']
    invoice['amount_remaining'] = 0
    subscription['status'] = 'active'
    this.emit('invoice.paid', invoice)
    this.emit('customer.subscription.updated', subscription)
    return true
  }
}

/** One event's delivery to the webhook endpoint, as the dashboard shows it. */
export interface Delivery {
  eventId: string
  type: string
  attempts: number
  status: 'pending' | 'delivered' | 'failed'
  lastStatusCode: number | null
}
