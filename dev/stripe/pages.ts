// The stand-in's two pages: Stripe Checkout's hosted page (a card field, pay, or go back) and the
// control page that moves time. Plain forms, no script: every value shown is escaped.
import { escapeHtml } from '../mail/page.js'
import type { Delivery } from './state.js'
import type { StripeObject, StripeState } from './state.js'

const STYLE = 'body{font:16px system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}' +
  'label,input,button{display:block;font:inherit;margin:.5rem 0}input{padding:.5rem;width:100%}' +
  'button{padding:.5rem 1rem}.error{color:#b00020}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .5rem}' +
  'form.inline{display:inline}form.inline button{display:inline}'

function page (title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><style>${STYLE}</style></head><body>${body}</body></html>`
}

function formatAmount (price: StripeObject | undefined): string {
  if (price === undefined) return ''
  const amount = Number(price['unit_amount']) / 100
  const currency = String(price['currency']).toUpperCase()
  const interval = String((price['recurring'] as { interval?: string } | undefined)?.interval ?? 'month')
  return `${new Intl.NumberFormat('en', { style: 'currency', currency }).format(amount)} per ${interval}`
}

export function checkoutPage (session: StripeObject, price: StripeObject | undefined, error: string | undefined): string {
  const setup = session['mode'] === 'setup'
  const trialEnd = (session['subscription_data'] as { trial_end?: number } | undefined)?.trial_end
  const summary = setup
    ? '<p>Save a card for your subscription. It will be used for the next payment.</p>'
    : `<p>Subscribe to Calendar: <strong>${escapeHtml(formatAmount(price))}</strong>` +
      (trialEnd !== undefined ? `, first charge on ${escapeHtml(new Date(trialEnd * 1000).toDateString())}` : '') + '.</p>'
  const back = typeof session['cancel_url'] === 'string' ? `<p><a href="${escapeHtml(session['cancel_url'])}">← Back</a></p>` : ''
  return page(setup ? 'Update your card' : 'Subscribe', `${back}<h1>${setup ? 'Update your card' : 'Subscribe'}</h1>${summary}` +
    (error !== undefined ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '') +
    `<form method="post" action="/c/pay/${escapeHtml(session.id)}"><label for="card">Card number</label>` +
    '<input id="card" name="card" inputmode="numeric" autocomplete="cc-number" placeholder="4242 4242 4242 4242" required>' +
    `<button type="submit">${setup ? 'Save card' : 'Subscribe'}</button></form>` +
    '<p><small>Test cards: 4242 4242 4242 4242 succeeds; 4000 0000 0000 0341 is saved but its charges fail; 4000 0000 0000 0002 is declined.</small></p>')
}

function action (subscription: StripeObject, name: string, label: string): string {
  return `<form class="inline" method="post" action="/control/subscriptions/${escapeHtml(subscription.id)}/${name}"><button type="submit">${label}</button></form>`
}

export function controlPage (state: StripeState, deliveries: Delivery[]): string {
  const rows = [...state.subscriptions.values()].map((subscription) => {
    const item = (subscription['items'] as { data: Array<{ current_period_end: number }> }).data[0]
    const customer = state.customers.get(String(subscription['customer']))
    return `<tr><td>${escapeHtml(subscription.id)}</td><td>${escapeHtml(String(customer?.['email'] ?? ''))}</td><td>${escapeHtml(String(subscription['status']))}` +
      `${subscription['cancel_at_period_end'] === true ? ' (cancels at period end)' : ''}</td>` +
      `<td>${item === undefined ? '' : escapeHtml(new Date(item.current_period_end * 1000).toISOString())}</td><td>` +
      action(subscription, 'end-trial', 'End trial') + action(subscription, 'renew', 'Renew period') +
      action(subscription, 'fail-payment', 'Fail next payment') + action(subscription, 'cancel', 'Cancel now') + '</td></tr>'
  }).join('')
  const events = deliveries.slice(-30).reverse().map((delivery) =>
    `<tr><td>${escapeHtml(delivery.eventId)}</td><td>${escapeHtml(delivery.type)}</td><td>${delivery.status}</td><td>${delivery.attempts}</td><td>${delivery.lastStatusCode ?? ''}</td></tr>`).join('')
  return page('Stripe stand-in: control', '<h1>Stripe stand-in</h1>' +
    `<p>Clock: ${escapeHtml(new Date(state.now() * 1000).toISOString())}. Reload to see new deliveries.</p>` +
    `<h2>Subscriptions</h2><table><tr><th>id</th><th>customer</th><th>status</th><th>period end</th><th>move time</th></tr>${rows}</table>` +
    `<h2>Webhook deliveries</h2><table><tr><th>event</th><th>type</th><th>status</th><th>attempts</th><th>last answer</th></tr>${events}</table>`)
}
