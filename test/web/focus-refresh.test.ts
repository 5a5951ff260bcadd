// Focus refresh in Chromium with the page's clock under the test's control (Playwright's
// page.clock): a user with a healthy Google connection gets one POST /api/connections/refresh
// when the connection first appears, one more after the tab was hidden at least 30 s, none after
// a shorter absence, and one for a manual Refresh and a focus refresh at the same moment.
import { test } from 'tap'
import type { Page, Route } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { signInThroughUi } from './ui.js'
import { connectGoogle, startFullStack, userWithGoogleAccount } from '../e2e/stack.js'
import { waitFor } from '../processes.js'

/**
 * Headless Chromium keeps every tab visible (neither another tab in front nor a minimised window
 * hides it), so the page is told what a browser tells it when a tab is hidden or shown: the
 * document's visibility state and a `visibilitychange` event.
 */
// A script as text: the test runner's compiler would wrap named functions in a helper the page lacks.
function visibilityScript (state: 'hidden' | 'visible'): string {
  return `Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => '${state}' });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => ${String(state === 'hidden')} });
    document.dispatchEvent(new Event('visibilitychange'))`
}

async function setVisibility (page: Page, state: 'hidden' | 'visible'): Promise<void> {
  await page.evaluate(visibilityScript(state))
}

test('focus refresh: on the first healthy connection, after 30 s hidden, coalesced with the Refresh button', async (t) => {
  const stack = await startFullStack(t, { web: true })
  const user = await userWithGoogleAccount(stack, 'focus')
  stack.google.control.insertEvent(user.email, { summary: 'Standup', start: { dateTime: '2026-03-02T09:00:00+01:00' }, end: { dateTime: '2026-03-02T09:15:00+01:00' } })
  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')

  const browser = await launchBrowser(t)
  const page = await (await newContext(browser)).newPage()
  const errors = collectErrors(page)
  const refreshes: number[] = []
  page.on('request', (request) => {
    if (request.method() === 'POST' && request.url() === `${stack.backendOrigin}/api/connections/refresh`) refreshes.push(Date.now())
  })
  const answered: number[] = []
  page.on('response', (response) => { if (response.url() === `${stack.backendOrigin}/api/connections/refresh`) answered.push(response.status()) })
  // Nothing more may arrive: long enough for a stray second request to have been sent.
  const settled = async (expected: number, what: string) => {
    t.ok(await waitFor(() => refreshes.length >= expected, 10_000), `${what}: the request was made`)
    await page.waitForTimeout(1500)
    t.equal(refreshes.length, expected, `${what}: exactly ${expected} refresh request(s) so far`)
  }
  await page.clock.install()

  await page.goto(`${stack.webUrl}/day?date=2026-03-02&auth=login`)
  await signInThroughUi(page, { email: user.email, password: 'pw-for-focus-1' })
  await page.locator('p.status', { hasText: 'Google Calendar up to date' }).waitFor({ timeout: 20_000 })
  await page.locator('.event-body', { hasText: 'Standup' }).waitFor()
  await settled(1, 'a refreshable connection appeared after mount')

  await setVisibility(page, 'hidden')
  await page.clock.fastForward(29_000)
  await setVisibility(page, 'visible')
  await page.waitForTimeout(1500)
  t.equal(refreshes.length, 1, 'hidden 29 s: no refresh')

  await setVisibility(page, 'hidden')
  await page.clock.fastForward(30_000)
  await setVisibility(page, 'visible')
  await settled(2, 'hidden 30 s, then visible')

  // The first request is held until both have started, so they truly overlap.
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  await page.route(`${stack.backendOrigin}/api/connections/refresh`, async (route: Route) => {
    await held
    await route.continue()
  })
  await setVisibility(page, 'hidden')
  await page.clock.fastForward(45_000)
  // One task of the page: the click and the tab coming back happen at the same moment.
  await page.evaluate(`document.querySelector('button[aria-label="Refresh events"]').click(); ${visibilityScript('visible')}`)
  await page.getByRole('button', { name: 'Refresh events' }).filter({ hasText: 'Refreshing…' }).waitFor()
  t.ok(await waitFor(() => refreshes.length === 3, 5000), 'the manual refresh started one request')
  release()
  await page.getByRole('button', { name: 'Refresh events' }).filter({ hasText: /^Refresh$/ }).waitFor()
  await settled(3, 'manual and focus refresh at the same moment')

  await waitFor(() => answered.length === 3, 5000)
  t.same(answered, [200, 200, 200], 'each refresh answered for the signed-in user')
  // Before the sign-in the session library tries a refresh, answered 401: there is no session yet.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
