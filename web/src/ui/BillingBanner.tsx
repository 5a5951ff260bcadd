// The billing panel above the calendar: days left of the trial with the upgrade, a failed payment
// with the card fix, the read-only explanation with the checkout in the same place, and a
// cancellation at period end with its resume. Every failure is said on the page.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { ApiError } from '../data/api.js'
import {
  checkoutUrl, daysLeft, endTrialNow, fetchBillingOffer, fetchBillingStatus, formatPrice, setCancelAtPeriodEnd, takeCheckoutReturn,
  type BillingOffer, type BillingStatus
} from '../data/billing.js'

/** How often the state is read again while the page is open: a renewal or a failed payment shows without a reload. */
const REFRESH_MS = 10_000
/** After Checkout, Stripe's webhook may land a moment after the person: read again until it has. */
const RETURN_POLL_MS = 1000
const RETURN_POLL_TRIES = 30

function dateOf (iso: string | null): string {
  return iso === null ? '' : new Date(iso).toLocaleDateString(undefined, { dateStyle: 'medium' })
}

/** Why the state could not be read, for the person: fetch rejects only when no answer came. */
function loadFailure (failure: unknown): string {
  return failure instanceof ApiError
    ? `Billing status could not be loaded: the server answered ${failure.status}.`
    : 'Billing status could not be loaded: no connection. It is read again when the connection returns.'
}

export function BillingBanner (props: { signedIn: boolean }) {
  const [status, setStatus] = useState<BillingStatus | null>(null)
  const [offer, setOffer] = useState<BillingOffer | null>(null)
  const [busy, setBusy] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [note, setNote] = useState<string | null>(null)
  const [loadError, setLoadError] = useState<string | null>(null)
  // Each attempt reads the offer and the state anew: Retry, or the connection coming back.
  const [attempt, setAttempt] = useState(0)
  const alive = useRef(true)

  const load = useCallback(async () => {
    const next = await fetchBillingStatus()
    if (alive.current) {
      setStatus(next)
      setLoadError(null)
    }
    return next
  }, [])

  useEffect(() => {
    alive.current = true
    if (!props.signedIn) {
      setStatus(null)
      setLoadError(null)
      return
    }
    const outcome = takeCheckoutReturn()
    if (outcome === 'cancelled') setNote('Checkout was cancelled; nothing was charged.')
    let timer: ReturnType<typeof setInterval> | undefined
    const onVisible = () => { if (document.visibilityState === 'visible') load().catch(() => {}) }
    const onOnline = () => setAttempt((count) => count + 1)
    window.addEventListener('online', onOnline)
    // A deployment without billing says so in /config: then no status is asked for, now or later.
    fetchBillingOffer().then(async (billingOffer) => {
      if (billingOffer === null || !alive.current) return
      setOffer(billingOffer)
      timer = setInterval(() => { load().catch(() => {}) }, REFRESH_MS)
      document.addEventListener('visibilitychange', onVisible)
      const first = await load()
      if (first === null) return
      if (outcome !== 'success' && outcome !== 'card-updated') return
      setNote(outcome === 'success' ? 'Thank you! Confirming your subscription…' : 'Card saved. Confirming the payment…')
      for (let tries = 0; tries < RETURN_POLL_TRIES && alive.current; tries += 1) {
        const current = await load()
        const settled = outcome === 'success' ? current?.hasSubscription === true : current?.needsPaymentMethod === false
        if (settled) {
          setNote(outcome === 'success' ? 'Subscription confirmed.' : 'Payment method updated.')
          return
        }
        await new Promise((resolve) => setTimeout(resolve, RETURN_POLL_MS))
      }
      setNote('Stripe has not confirmed yet; this updates by itself.')
    }).catch((failure: unknown) => { if (alive.current) setLoadError(loadFailure(failure)) })
    return () => {
      alive.current = false
      clearInterval(timer)
      document.removeEventListener('visibilitychange', onVisible)
      window.removeEventListener('online', onOnline)
    }
  }, [props.signedIn, load, attempt])

  if (!props.signedIn || (status === null && error === null && loadError === null)) return null

  async function go (kind: 'subscribe' | 'fix-card') {
    setBusy(kind)
    setError(null)
    try {
      location.assign(await checkoutUrl(kind))
    } catch (failure) {
      setError(`${kind === 'subscribe' ? 'Checkout' : 'The card update'} could not start: ${(failure as Error).message}`)
      setBusy(null)
    }
  }

  async function change (kind: 'cancel' | 'resume' | 'end-trial', call: () => Promise<BillingStatus>) {
    setBusy(kind)
    setError(null)
    try {
      setStatus(await call())
    } catch (failure) {
      const action = { cancel: 'Cancelling', resume: 'Resuming', 'end-trial': 'Starting the paid plan' }[kind]
      setError(`${action} failed: ${(failure as Error).message}`)
    } finally {
      setBusy(null)
    }
  }
  const toggleCancel = async (cancel: boolean) => { await change(cancel ? 'cancel' : 'resume', async () => await setCancelAtPeriodEnd(cancel)) }

  const price = formatPrice(offer?.price)
  const subscribeButton = (
    <button type='button' class='primary' disabled={busy !== null} onClick={() => { go('subscribe').catch(() => {}) }}>
      {busy === 'subscribe' ? 'Opening checkout…' : `Subscribe${price === '' ? '' : ` (${price})`}`}
    </button>
  )
  const fixButton = (
    <button type='button' class='primary' disabled={busy !== null} onClick={() => { go('fix-card').catch(() => {}) }}>
      {busy === 'fix-card' ? 'Opening…' : 'Fix card'}
    </button>
  )

  let body = null
  if (status !== null && !status.bypass) {
    if (status.isReadOnly) {
      body = (
        <div class='banner billing-readonly' role='alert'>
          <p>
            <strong>Your calendar is read-only.</strong>{' '}
            {status.subscriptionStatus === 'trial_expired' ? 'Your free trial has ended.' : 'Your subscription is not active.'}{' '}
            You can still see and export your events and sign out; subscribe to make changes again.
          </p>
          {status.needsPaymentMethod && status.hasSubscription ? fixButton : subscribeButton}
        </div>
      )
    } else if (status.needsPaymentMethod) {
      body = (
        <div class='banner billing-past-due' role='alert'>
          <p><strong>Your last payment failed.</strong> Update your card to keep your subscription.</p>
          {fixButton}
        </div>
      )
    } else if (status.subscriptionStatus === 'trialing' && !status.hasSubscription) {
      const left = daysLeft(status.trialEndsAt)
      body = (
        <div class='banner billing-trial'>
          <p>Free trial: <strong>{left} {left === 1 ? 'day' : 'days'} left</strong>. No card needed until you subscribe.</p>
          {subscribeButton}
        </div>
      )
    } else if (status.cancelAtPeriodEnd) {
      body = (
        <div class='banner billing-ending'>
          <p>Your subscription ends on {dateOf(status.currentPeriodEnd)}.</p>
          <button type='button' disabled={busy !== null} onClick={() => { toggleCancel(false).catch(() => {}) }}>{busy === 'resume' ? 'Resuming…' : 'Resume subscription'}</button>
        </div>
      )
    } else if (status.hasSubscription) {
      body = (
        <div class='banner billing-active'>
          <p>
            Subscribed{status.subscriptionStatus === 'trialing' ? ` — first charge on ${dateOf(status.trialEndsAt)}` : ''}.
          </p>
          {status.subscriptionStatus === 'trialing' && (
            <button type='button' disabled={busy !== null} onClick={() => { change('end-trial', endTrialNow).catch(() => {}) }}>{busy === 'end-trial' ? 'Starting…' : 'Start paid plan now'}</button>
          )}
          <button type='button' disabled={busy !== null} onClick={() => { toggleCancel(true).catch(() => {}) }}>{busy === 'cancel' ? 'Cancelling…' : 'Cancel at period end'}</button>
        </div>
      )
    }
  }

  return (
    <section class='billing-panel' aria-label='Subscription'>
      {body}
      {note !== null && <p class='banner billing-note' role='status'>{note}</p>}
      {loadError !== null && (
        <div class='banner billing-error' role='alert'>
          <p>{loadError}</p>
          <button type='button' onClick={() => setAttempt((count) => count + 1)}>Retry</button>
        </div>
      )}
      {error !== null && <p class='banner billing-error' role='alert'>{error}</p>}
    </section>
  )
}
