// Focus refresh in Chromium with the page's clock under the test's control (Playwright's
// page.clock): a user with a healthy Google connection gets one POST /api/connections/refresh
// when the connection first appears, one more after the tab was hidden at least 30 s, none after
// a shorter absence, and one when the Refresh button is clicked while the tab's focus refresh is
// still running; a reload then reads its range once. The tab is hidden for real: another tab of the same window is put in front.
import { test } from 'tap'
import type { Page, Route } from 'playwright-core'
import { launchBrowserWithTabs, collectErrors } from './browser.js'
import { apartFromReminders, signInThroughUi } from './ui.js'
import { connectGoogle, startFullStack, userWithGoogleAccount } from '../e2e/stack.js'
import { waitFor } from '../processes.js'

test('focus refresh: on the first healthy connection, after 30 s hidden, coalesced with the Refresh button', async (t) => {
  const stack = await startFullStack(t, { web: true })
  const user = await userWithGoogleAccount(stack, 'focus')
  stack.google.control.insertEvent(user.email, { summary: 'Standup', start: { dateTime: '2026-03-02T09:00:00+01:00' }, end: { dateTime: '2026-03-02T09:15:00+01:00' } })
  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')

  const { context, page } = await launchBrowserWithTabs(t)
  const errors = collectErrors(page)
  // The user's other tab, in the same window: in front, it hides the calendar's tab.
  const otherTab = await context.newPage()
  const bringToFront = async (tab: Page, calendarState: 'hidden' | 'visible') => {
    await tab.bringToFront()
    // Asked from here: the page's CSP forbids the eval a polling page.waitForFunction(string) does.
    const reached = await waitFor(async () => await page.evaluate('document.visibilityState') === calendarState, 5000)
    t.ok(reached, `the calendar's tab is ${calendarState}`)
  }
  const hide = async () => { await bringToFront(otherTab, 'hidden') }
  const show = async () => { await bringToFront(page, 'visible') }
  await show()
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

  await hide()
  await page.clock.fastForward(29_000)
  await show()
  await page.waitForTimeout(1500)
  t.equal(refreshes.length, 1, 'hidden 29 s: no refresh')

  await hide()
  await page.clock.fastForward(30_000)
  await show()
  await settled(2, 'hidden 30 s, then visible')

  // The focus refresh's request is held until the click has happened, so the two truly overlap.
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  await page.route(`${stack.backendOrigin}/api/connections/refresh`, async (route: Route) => {
    await held
    await route.continue()
  })
  await hide()
  await page.clock.fastForward(45_000)
  await show()
  t.ok(await waitFor(() => refreshes.length === 3, 5000), 'the tab coming back started one request')
  // The user clicks Refresh at once: the click joins the running refresh rather than starting one.
  await page.getByRole('button', { name: 'Refresh events' }).click()
  await page.getByRole('button', { name: 'Refresh events' }).filter({ hasText: 'Refreshing…' }).waitFor()
  release()
  await page.getByRole('button', { name: 'Refresh events' }).filter({ hasText: /^Refresh$/ }).waitFor()
  await settled(3, 'focus refresh and a manual refresh at the same moment')

  await waitFor(() => answered.length === 3, 5000)
  t.same(answered, [200, 200, 200], 'each refresh answered for the signed-in user')

  // A reload reads the shown range once: the focus refresh of the connection appearing again asks
  // for a pull, whose changes come through the stream, and does not read the range a second time.
  await page.unroute(`${stack.backendOrigin}/api/connections/refresh`)
  const reads: string[] = []
  page.on('request', (request) => {
    if (request.method() === 'GET' && request.url().startsWith(`${stack.backendOrigin}/api/event?`)) reads.push(request.url())
  })
  await page.reload()
  await page.locator('.event-body', { hasText: 'Standup' }).waitFor()
  await page.locator('p.status', { hasText: 'Google Calendar up to date' }).waitFor({ timeout: 20_000 })
  await settled(4, 'the connection appearing again after the reload')
  // The reminders read the four weeks ahead of their own, at start and after changes to what is
  // shown (web/README, Reminders); the rest are the day's.
  const { view } = apartFromReminders(reads.map((url) => new URL(url).search))
  t.equal(view.length, 1, 'the day is read once')
  // Before the sign-in the session library tries a refresh, answered 401: there is no session yet.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
