// In Chromium against the whole system with the Microsoft stand-in: a person signs in from the
// sign-in dialog with "Continue with Microsoft", consents on the stand-in's page, comes back through
// /auth/extprovider/callback, and lands signed in on the page they left, with the Microsoft
// calendar (asked for in the same consent) imported.
import { test } from 'tap'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { eventBlock } from './ui.js'
import { defaultMicrosoftCalendar, MICROSOFT_CLIENT, startFullStack, withMicrosoft } from '../e2e/stack.js'
import { uniqueEmail } from '../helper.js'

const DAY = '2026-11-26'

test('Continue with Microsoft: consent at the stand-in, back through the callback, signed in with the calendar', async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { web: true, microsoft: true }))
  const email = uniqueEmail('marie')
  stack.microsoft.control.createAccount({ email, name: 'Marie Curie', timeZone: 'W. Europe Standard Time' })
  const at = (dateTime: string) => ({ dateTime, timeZone: 'W. Europe Standard Time' })
  stack.microsoft.control.insertEvent(defaultMicrosoftCalendar(stack, email), { subject: 'Train to Lyon', start: at(`${DAY}T07:00:00`), end: at(`${DAY}T10:00:00`) })

  const browser = await launchBrowser(t)
  const page = await (await newContext(browser)).newPage()
  // The stand-in's pages have no favicon; that is not the client's error.
  const errors = collectErrors(page, { foreign: (url) => url.startsWith(stack.microsoft.url) })

  await page.goto(`${stack.webUrl}/day?date=${DAY}&auth=login`)
  const dialog = page.getByRole('dialog', { name: 'Sign in' })
  await dialog.getByRole('button', { name: 'Continue with Microsoft' }).waitFor()
  t.equal(await dialog.getByRole('button', { name: 'Continue with Google' }).count(), 1, 'Google is offered beside it')
  t.equal(await dialog.getByRole('button', { name: 'Continue with Apple' }).count(), 0, 'Apple is not: the bundle has no services id')

  const callback = page.waitForRequest((request) => request.url().startsWith(`${stack.webUrl}/auth/extprovider/callback?`))
  const signInUp = page.waitForRequest((request) => request.method() === 'POST' && request.url() === `${stack.backendOrigin}/api/auth/signinup`)
  await dialog.getByRole('button', { name: 'Continue with Microsoft' }).click()
  await page.waitForURL((url) => url.href.startsWith(`${stack.microsoft.url}/common/oauth2/v2.0/authorize`))
  const asked = new URL(page.url()).searchParams
  t.equal(asked.get('client_id'), MICROSOFT_CLIENT.clientId, 'the client id fixed into the bundle')
  t.match(asked.get('scope'), /offline_access.*Calendars\.ReadWrite/, 'one consent for the sign-in and the calendar')
  await page.getByLabel(email).check()
  await page.getByRole('button', { name: 'Accept' }).click()

  t.match(new URL((await callback).url()).searchParams.get('code'), /.+/, 'the stand-in sent the browser back with a code')
  const request = await signInUp
  t.match(request.postDataJSON(), {
    thirdPartyId: 'microsoft',
    redirectURIInfo: { redirectURIOnProviderDashboard: `${stack.webUrl}/auth/extprovider/callback`, redirectURIQueryParams: { code: /.+/, state: /^[A-Za-z0-9_-]{43}$/ } }
  }, 'the code went to the session library\'s sign-in-up route as Microsoft\'s')
  const answer = await request.response()
  t.equal(answer?.status(), 200, `sign-in-up answered ${await answer?.text() ?? ''}`)
  t.match(await answer?.json(), { status: 'OK', summary: { provider: 'microsoft', calendar: 'import' } })

  await page.waitForURL(`${stack.webUrl}/day?date=${DAY}`)
  t.pass('back on the page the sign-in started from')
  await page.getByRole('banner').getByText(email, { exact: true }).waitFor()
  t.pass('signed in as the Microsoft account')
  await eventBlock(page, 'Train to Lyon').waitFor({ timeout: 20_000 })
  t.match(await eventBlock(page, 'Train to Lyon').textContent(), /\b7:00 – 10:00/, 'the Microsoft calendar, in the browser\'s zone')
  t.same(await page.evaluate('Object.keys(sessionStorage).filter((key) => key.startsWith("oauthIntent:"))'), [], 'the intent was taken')

  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
