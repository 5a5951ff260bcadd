// In Chromium against the whole system with the Microsoft stand-in: a person signed in with email
// and password connects their Microsoft calendar from the toolbar ("Connect Microsoft calendar",
// pressed from the keyboard): `POST /api/auth/connections/begin` with provider microsoft and intent
// connect, the stand-in's consent page, back through the Sync service's callback to the calendar,
// which says so; the Microsoft calendar is in the list, its events arrive, and the button is gone.
import { test } from 'tap'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { eventBlock, signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { defaultMicrosoftCalendar, startFullStack, userWithMicrosoftAccount, withMicrosoft } from '../e2e/stack.js'

const DAY = '2026-11-26'

test('Connect Microsoft calendar: begin, consent at the stand-in, back with the calendar and its events', async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { web: true, microsoft: true }))
  const user = await userWithMicrosoftAccount(stack, 'otto')
  const at = (dateTime: string) => ({ dateTime, timeZone: 'W. Europe Standard Time' })
  stack.microsoft.control.insertEvent(defaultMicrosoftCalendar(stack, user.email), { subject: 'Board meeting', start: at(`${DAY}T14:00:00`), end: at(`${DAY}T15:30:00`) })

  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const page = await (await newContext(browser, { timezoneId: 'Europe/Berlin', bypassCSP: true })).newPage()
  // The stand-in's pages have no favicon; that is not the client's error.
  const errors = collectErrors(page, { foreign: (url) => url.startsWith(stack.microsoft.url) })

  await page.goto(`${stack.webUrl}/day?date=${DAY}&auth=login`)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
  const connect = page.getByRole('button', { name: 'Connect Microsoft calendar' })
  await connect.waitFor()
  t.equal(await page.getByRole('button', { name: 'Connect Google Calendar' }).count(), 1, 'beside Google\'s')
  t.same(await seriousViolations(page), [], 'axe: nothing serious in the toolbar with the button')

  const begin = page.waitForRequest((request) => request.method() === 'POST' && request.url() === `${stack.backendOrigin}/api/auth/connections/begin`)
  await connect.focus()
  await page.keyboard.press('Enter')
  t.same((await begin).postDataJSON(), { provider: 'microsoft', intent: 'connect' }, 'begin with provider microsoft and intent connect')
  await page.waitForURL((url) => url.href.startsWith(stack.microsoft.url))
  t.pass('the stand-in\'s consent page')
  await page.getByLabel(user.email).check()
  await page.getByRole('button', { name: 'Accept' }).click()

  await page.waitForURL((url) => url.origin === stack.webUrl && url.pathname === '/day')
  await page.getByRole('status').filter({ hasText: 'Outlook calendar is connected.' }).waitFor()
  t.notMatch(page.url(), /status=|cid=/, 'the redirect\'s parameters left the URL')
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
  t.pass('back in the calendar, still signed in')

  const calendars = page.getByRole('complementary', { name: 'Calendars' })
  await calendars.locator('.calendar-provider', { hasText: 'Outlook calendar' }).waitFor({ timeout: 20_000 })
  t.same(await calendars.locator('.calendar-name').allTextContents(), ['My calendar', 'Calendar'], 'the Microsoft calendar in the list')
  await page.goto(`${stack.webUrl}/day?date=${DAY}`)
  await eventBlock(page, 'Board meeting').waitFor({ timeout: 20_000 })
  t.match(await eventBlock(page, 'Board meeting').textContent(), /14:00 – 15:30/, 'its events arrive, in the browser\'s zone')
  // After the reload the connections come with the sync status, which may land after the events.
  await connect.waitFor({ state: 'detached', timeout: 20_000 }).catch(() => {})
  t.equal(await connect.count(), 0, 'connected: the button is gone')

  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
