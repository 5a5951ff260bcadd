// In Chromium against the whole system with billing on against the Stripe stand-in: a new account
// sees its card-less trial, subscribes through the stand-in's hosted Checkout page, comes back to
// the calendar showing the subscription without a reload; then a renewal payment fails at the
// stand-in and the failed-payment banner with its card fix appears.
import { test } from 'tap'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { signUpThroughUi } from './ui.js'
import { uniqueEmail } from '../helper.js'
import { DEFAULT_PRICE, startStripeStandIn } from '../../dev/stripe/index.js'

const KEYS = { secretKey: 'sk_test_web_0123456789', webhookSecret: 'whsec_web_0123456789', publishableKey: 'pk_test_web_0123456789' }

test('billing in the browser: trial, upgrade through Checkout, a failed payment', async (t) => {
  const stripe = await startStripeStandIn({ ...KEYS, retryDelaysMs: [100, 500] })
  t.teardown(() => stripe.close())
  const stack = await startWebStack(t, { extra: { billing: { ...KEYS, priceId: DEFAULT_PRICE.id, endpointBase: stripe.url } } })
  stripe.setWebhookUrl(`${stack.apiUrl}/billing/webhook`)
  const browser = await launchBrowser(t)
  const page = await (await newContext(browser)).newPage()
  // The stand-in's page has no icon (its 404 is Chromium's own request, not the app's).
  const errors = collectErrors(page, { foreign: (url) => url.startsWith(stripe.url) })

  const email = uniqueEmail('payer')
  await signUpThroughUi(page, stack.webUrl, { name: 'Payer', email, password: 'correct horse 1' })
  const panel = page.getByRole('region', { name: 'Subscription' })
  await panel.getByText('Free trial: 7 days left').waitFor()
  t.pass('the trial is shown, no card asked')

  await panel.getByRole('button', { name: /^Subscribe \(€5\.00 per month\)$/ }).click()
  await page.waitForURL(`${stripe.url}/c/pay/**`)
  await page.getByLabel('Card number').fill('4242 4242 4242 4242')
  await page.getByRole('button', { name: 'Subscribe' }).click()
  await page.waitForURL(`${stack.webUrl}/day**`)
  await panel.getByText('Subscription confirmed.').waitFor({ timeout: 30_000 })
  await panel.getByText(/^Subscribed — first charge on/).waitFor()
  t.notMatch(page.url(), /billing=/, 'the return parameter left the URL')
  t.equal(stripe.state.subscriptions.size, 1, 'one subscription at Stripe')

  await panel.getByRole('button', { name: 'Start paid plan now' }).click()
  await panel.getByText(/^Subscribed\.$/).waitFor()
  const [subscription] = [...stripe.state.subscriptions.values()]
  t.equal(subscription?.['status'], 'active', 'the trial ended at Stripe and the first period began')
  const response = await fetch(`${stripe.url}/control/subscriptions/${subscription?.id ?? ''}/fail-payment`, { method: 'POST' })
  t.equal(response.status, 200, 'fail-payment')
  await stripe.settled()
  // No reload: the panel reads the state again by itself.
  await panel.getByText('Your last payment failed.').waitFor({ timeout: 30_000 })
  t.ok(await panel.getByRole('button', { name: 'Fix card' }).isVisible(), 'the card fix is offered')
  // The signed-out session probe before sign-up answers 401, as in test/web/account.test.ts.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no page errors')
})
