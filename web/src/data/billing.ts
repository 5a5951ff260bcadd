// The billing state of the signed-in user (GET /api/billing/status) and its actions. A deployment
// without a billing block has no `billing` in /api/config and no billing routes: then nothing
// billing-related is asked for or shown.
import { api, ApiError } from './api.js'

export interface BillingStatus {
  subscriptionStatus: 'trialing' | 'active' | 'past_due' | 'incomplete' | 'incomplete_expired' | 'unpaid' | 'paused' | 'canceled' | 'trial_expired'
  trialEndsAt: string | null
  currentPeriodEnd: string | null
  isReadOnly: boolean
  cancelAtPeriodEnd: boolean
  needsPaymentMethod: boolean
  hasSubscription: boolean
  bypass: boolean
}

export interface BillingOffer {
  trialDays: number
  price?: { unitAmount: number, currency: string, interval: string }
}

export async function fetchBillingStatus (): Promise<BillingStatus | null> {
  try {
    return await api<BillingStatus>('/billing/status')
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null
    throw error
  }
}

export async function fetchBillingOffer (): Promise<BillingOffer | null> {
  const config = await api<{ billing?: BillingOffer }>('/config')
  return config.billing ?? null
}

/** Where Stripe Checkout takes the person: to subscribe, or (setup) to replace the card. */
export async function checkoutUrl (kind: 'subscribe' | 'fix-card'): Promise<string> {
  const { url } = await api<{ url: string }>(kind === 'subscribe' ? '/billing/checkout' : '/billing/payment-method', { method: 'POST' })
  return url
}

export async function setCancelAtPeriodEnd (cancel: boolean): Promise<BillingStatus> {
  return await api<BillingStatus>(`/billing/subscription/${cancel ? 'cancel' : 'resume'}`, { method: 'POST' })
}

/** The subscription's trial ends now and its first period is charged. */
export async function endTrialNow (): Promise<BillingStatus> {
  return await api<BillingStatus>('/billing/trial/end', { method: 'POST' })
}

export function formatPrice (price: BillingOffer['price']): string {
  if (price === undefined) return ''
  const amount = new Intl.NumberFormat(undefined, { style: 'currency', currency: price.currency.toUpperCase() }).format(price.unitAmount / 100)
  return `${amount} per ${price.interval}`
}

export function daysLeft (until: string | null, now = Date.now()): number {
  if (until === null) return 0
  return Math.max(0, Math.ceil((Date.parse(until) - now) / (24 * 60 * 60 * 1000)))
}

/** The `billing` query parameter Stripe Checkout returns with (success, card-updated, cancelled). */
export function takeCheckoutReturn (): string | null {
  const url = new URL(location.href)
  const outcome = url.searchParams.get('billing')
  if (outcome === null) return null
  url.searchParams.delete('billing')
  history.replaceState(history.state, '', `${url.pathname}${url.search}${url.hash}`)
  return outcome
}
