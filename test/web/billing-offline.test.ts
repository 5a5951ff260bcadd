// In Chromium against the whole system with billing on against the Stripe stand-in: signed in,
// the page reloaded offline (from the service worker) says in a banner that the billing status
// could not be loaded, and the banner goes by itself, the status read, when the connection returns.
import { test } from 'tap'
import { launchBrowser, newContext } from './browser.js'
import { startWebStack } from './stack.js'
import { signUpThroughUi } from './ui.js'
import { uniqueEmail } from '../helper.js'
import { DEFAULT_PRICE, startStripeStandIn } from '../../dev/stripe/index.js'

const KEYS = { secretKey: 'sk_test_web_offline_0123', webhookSecret: 'whsec_web_offline_0123', publishableKey: 'pk_test_web_offline_0123' }

test('billing status that could not be loaded offline is a banner that goes when the connection returns', async (t) => {
  const stripe = await startStripeStandIn(KEYS)
  t.teardown(() => stripe.close())
  const stack = await startWebStack(t, { extra: { billing: { ...KEYS, priceId: DEFAULT_PRICE.id, endpointBase: stripe.url } } })
  const browser = await launchBrowser(t)
  const context = await newContext(browser)
  const page = await context.newPage()
  await signUpThroughUi(page, stack.webUrl, { name: 'Offline payer', email: uniqueEmail('offline-payer'), password: 'correct horse 1' })
  const panel = page.getByRole('region', { name: 'Subscription' })
  await panel.getByText('Free trial: 7 days left').waitFor()
  await page.waitForFunction('navigator.serviceWorker.controller !== null')

  await context.setOffline(true)
  await page.reload()
  const failure = panel.getByRole('alert').filter({ hasText: 'Billing status could not be loaded' })
  await failure.waitFor()
  t.notMatch(await failure.textContent(), /Failed to fetch/, 'said for a person')
  const look = await failure.evaluate((element) => {
    const style = element.ownerDocument.defaultView?.getComputedStyle(element) ?? { paddingLeft: '0px', backgroundColor: 'rgba(0, 0, 0, 0)' }
    return { banner: element.classList.contains('banner'), padding: style.paddingLeft, background: style.backgroundColor }
  })
  t.ok(look.banner && look.padding !== '0px' && look.background !== 'rgba(0, 0, 0, 0)', `styled as the other messages of the panel (${JSON.stringify(look)})`)

  await context.setOffline(false)
  await panel.getByText('Free trial: 7 days left').waitFor({ timeout: 15_000 })
  t.equal(await failure.count(), 0, 'the message went by itself, no reload')
})
