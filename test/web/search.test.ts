// In Chromium against the whole system: search from the toolbar, as a Google Calendar user does it.
// Signed in, with the mouse (type, the results by day with time, title, location and colour, a
// click opens the event on its date) and with the keyboard only ("/", type, arrows, Enter, Escape
// giving focus back); "More results" reads the next page with the cursor; nothing found and a
// failed request (routed) say so, with Retry; signed out, the events in the browser are searched
// the same way without asking the server; axe finds nothing serious with results shown.
import { test } from 'tap'
import type { Page, Route } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { createEventThroughUi, EVENTUALLY_MS, signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

const ZONE = 'Europe/Berlin'

/** The focused element's text, as a screen reader would start to read it. */
async function focusedText (page: Page): Promise<string> {
  return await page.evaluate('(document.activeElement?.textContent ?? "").trim()') as string
}

async function focusedId (page: Page): Promise<string> {
  return await page.evaluate('document.activeElement?.id ?? ""') as string
}

test('search from the toolbar', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('search'), password: 'search password 1' }
  const account = await signUp(app, { ...user, name: 'Sam Search' })
  const timed = (title: string, start: string, end: string, extra: Record<string, string> = {}) => ({ title, startDate: start, endDate: end, timeZone: ZONE, ...extra })
  const answer = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: { ...account.headers, 'content-type': 'application/json' },
    payload: JSON.stringify([
      timed('Quarterly review', '2026-03-10T14:00:00+01:00', '2026-03-10T15:00:00+01:00', { location: 'Room Zürich' }),
      timed('Review lunch', '2026-04-02T12:30:00+02:00', '2026-04-02T13:30:00+02:00', { location: 'Café Lumière' }),
      { title: 'Team review day', startDate: '2026-05-01', endDate: '2026-05-02', isAllDay: true, timeZone: ZONE },
      timed('Dentist', '2026-03-03T08:00:00+01:00', '2026-03-03T09:00:00+01:00'),
      // Two pages of the server's 25.
      ...Array.from({ length: 27 }, (_, index) => {
        const day = `2026-01-${String(index + 1).padStart(2, '0')}`
        return timed(`Standup ${index + 1}`, `${day}T09:30:00+01:00`, `${day}T09:45:00+01:00`)
      })
    ])
  })
  t.equal(answer.statusCode, 204)

  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const context = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
  const page = await context.newPage()
  const errors = collectErrors(page)
  const searches: URL[] = []
  page.on('request', (request) => {
    const url = new URL(request.url())
    if (url.pathname === '/api/events/search') searches.push(url)
  })
  await page.goto(`${stack.webUrl}/week?date=2026-03-02&auth=login`)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
  const field = page.getByRole('searchbox', { name: 'Search events' })
  const count = page.locator('#search-count')
  const results = (query: string) => page.getByRole('list', { name: `Search results for “${query}”` })

  await t.test('with the mouse: typing lists the events found by day; a click opens one on its date', async (t) => {
    await field.click()
    await field.fill('revi')
    await results('revi').waitFor({ timeout: EVENTUALLY_MS })
    t.equal(await count.textContent(), '3 events found', 'the count, in the polite live region')
    t.equal(await count.getAttribute('role'), 'status')
    t.same(await results('revi').locator('h3').allTextContents(), ['Tuesday, 10 March 2026', 'Thursday, 2 April 2026', 'Friday, 1 May 2026'], 'grouped by day, in start order')
    const items = results('revi').locator('.search-result')
    t.same(await items.locator('.search-time').allTextContents(), ['14:00 – 15:00', '12:30 – 13:30', 'All day'], 'each with its time, or All day')
    t.same(await items.locator('.search-title').allTextContents(), ['Quarterly review', 'Review lunch', 'Team review day'])
    t.same(await items.locator('.search-location').allTextContents(), ['Room Zürich', 'Café Lumière'], 'and its location')
    t.equal(await page.evaluate('getComputedStyle(document.querySelector(".search-result .search-dot")).backgroundColor'), 'rgb(29, 78, 216)', 'in its calendar\'s colour (My calendar)')
    t.match(await items.nth(1).textContent(), /Thursday, 2 April 2026/, 'each result names its day for a screen reader')
    t.same(searchTermsIn(searches), ['revi'], 'one request for what was typed (the pause, not each letter)')
    t.same(await seriousViolations(page), [], 'axe: nothing serious with results shown')
    if (process.env.SEARCH_SCREENSHOTS !== undefined) await page.screenshot({ path: `${process.env.SEARCH_SCREENSHOTS}/search.png` })

    await items.nth(1).click()
    await page.getByRole('dialog', { name: 'Review lunch', exact: true }).getByRole('button', { name: 'Edit', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Edit event' })
    await dialog.waitFor()
    t.equal(await dialog.getByLabel('Title').inputValue(), 'Review lunch', 'the event\'s details, then its dialog, open as a click in the grid does')
    await page.waitForURL(/\/week\?date=2026-04-02$/)
    await page.getByRole('heading', { name: /30 Mar – 5 Apr 2026/ }).waitFor()
    t.pass('the calendar moved to the event\'s week')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'hidden' })
    t.match(await focusedText(page), /Review lunch/, 'closing the dialog puts focus back on the result')
    await page.keyboard.press('Escape')
    await results('revi').waitFor({ state: 'hidden' })
    t.pass('Escape closes the results')
  })

  await t.test('with the keyboard only: "/", type, arrows, Enter, Escape', async (t) => {
    await page.goto(`${stack.webUrl}/week?date=2026-03-02`)
    await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
    await page.getByRole('button', { name: 'Today' }).focus()
    await page.keyboard.press('/')
    t.ok(await waitFor(async () => await focusedId(page) === 'search-input', 5_000), '"/" puts the focus in the search field')
    t.equal(await field.inputValue(), '', 'without typing the slash')
    await page.keyboard.type('review')
    await results('review').waitFor({ timeout: EVENTUALLY_MS })
    t.equal(await count.textContent(), '3 events found')
    await page.keyboard.press('ArrowDown')
    t.match(await focusedText(page), /^14:00 – 15:00.*Quarterly review/, 'ArrowDown: the first result')
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('ArrowDown')
    t.match(await focusedText(page), /^All day.*Team review day/, 'the third')
    await page.keyboard.press('ArrowDown')
    t.match(await focusedText(page), /Team review day/, 'and stays on the last')
    await page.keyboard.press('ArrowUp')
    t.match(await focusedText(page), /Review lunch/, 'ArrowUp: the one before')
    await page.keyboard.press('ArrowRight')
    t.match(page.url(), /\/week\?date=2026-03-02$/, 'the arrows in the results do not move the calendar')
    await page.keyboard.press('Enter')
    await page.getByRole('dialog', { name: 'Review lunch', exact: true }).waitFor()
    await page.keyboard.press('Enter')
    const dialog = page.getByRole('dialog', { name: 'Edit event' })
    await dialog.waitFor()
    t.equal(await dialog.getByLabel('Title').inputValue(), 'Review lunch', 'Enter shows the focused result\'s details, Enter again (on Edit) its event dialog')
    await page.waitForURL(/\/week\?date=2026-04-02$/)
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
    t.match(await focusedText(page), /Review lunch/, 'Escape closes the dialog, focus back on the result')
    await page.keyboard.press('ArrowUp')
    await page.keyboard.press('ArrowUp')
    t.equal(await focusedId(page), 'search-input', 'ArrowUp from the first result: back in the field')
    await page.keyboard.press('Escape')
    await results('review').waitFor({ state: 'hidden' })
    t.equal(await focusedText(page), 'Today', 'Escape closes the results and gives focus back where it was')
    t.equal(await field.inputValue(), 'review', 'the words stay in the field')

    await page.keyboard.press('?')
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' })
    await help.waitFor()
    t.match(await help.textContent(), /\/Search events/, 'the list of shortcuts names "/"')
    await page.keyboard.press('Escape')
    await help.waitFor({ state: 'hidden' })
  })

  await t.test('"More results" reads the next page with the cursor', async (t) => {
    searches.length = 0
    await field.fill('standup')
    await results('standup').waitFor({ timeout: EVENTUALLY_MS })
    const items = results('standup').locator('.search-result')
    t.equal(await count.textContent(), '25 events found, more available')
    t.equal(await items.count(), 25, 'the first page')
    await page.getByRole('button', { name: 'More results' }).click()
    await page.getByText('27 events found', { exact: true }).waitFor({ timeout: EVENTUALLY_MS })
    t.equal(await items.count(), 27, 'the second page under the first')
    t.same((await items.locator('.search-title').allTextContents()).slice(23), ['Standup 24', 'Standup 25', 'Standup 26', 'Standup 27'])
    t.equal(await page.getByRole('button', { name: 'More results' }).count(), 0, 'no more on the last page')
    t.match(await focusedText(page), /Standup 26/, 'the focus on the first new result')
    t.equal(searches.length, 2)
    t.equal(searches[0]?.searchParams.get('cursor'), null)
    t.ok((searches[1]?.searchParams.get('cursor') ?? '').length > 0, 'the second request sends the first page\'s cursor')
  })

  await t.test('nothing found; a failed request says so, with Retry', async (t) => {
    await field.fill('zebra')
    await page.getByText('No events match “zebra”', { exact: true }).waitFor({ timeout: EVENTUALLY_MS })
    t.equal(await page.locator('.search-result').count(), 0, 'no results')

    const failing = async (route: Route) => { await route.fulfill({ status: 500, contentType: 'application/json', body: JSON.stringify({ statusCode: 500, error: 'Internal Server Error', message: 'boom' }) }) }
    const isSearch = (url: URL) => url.pathname === '/api/events/search'
    await page.route(isSearch, failing)
    await field.fill('quarterly')
    await page.getByText('The search failed: the server answered 500.', { exact: true }).waitFor({ timeout: EVENTUALLY_MS })
    t.pass('the failure in words')
    await page.unroute(isSearch, failing)
    await page.getByRole('button', { name: 'Retry' }).click()
    await results('quarterly').waitFor({ timeout: EVENTUALLY_MS })
    t.equal(await count.textContent(), '1 event found', 'Retry searches again')
    await page.keyboard.press('Escape')
  })

  await t.test('signed out: the events kept in the browser, searched in the browser', async (t) => {
    const local = await (await newContext(browser, { timezoneId: ZONE, bypassCSP: true })).newPage()
    const localErrors = collectErrors(local)
    const asked: string[] = []
    local.on('request', (request) => { if (request.url().includes('/api/events/search')) asked.push(request.url()) })
    await local.goto(`${stack.webUrl}/week?date=2026-06-15`)
    await local.getByRole('button', { name: 'Create account' }).waitFor()
    await createEventThroughUi(local, { title: 'Piano lesson', day: '2026-06-17', start: '17:00', end: '18:00', location: 'Musikschule Köln' })
    const localField = local.getByRole('searchbox', { name: 'Search events' })
    await localField.fill('corner cafe')
    await local.getByRole('list', { name: 'Search results for “corner cafe”' }).waitFor({ timeout: EVENTUALLY_MS })
    t.same(await local.locator('.search-title').allTextContents(), ['Lunch with Sam'], 'a demo event, found by its location without its accent')
    await localField.fill('musik koln')
    const list = local.getByRole('list', { name: 'Search results for “musik koln”' })
    await list.waitFor({ timeout: EVENTUALLY_MS })
    t.equal(await local.locator('#search-count').textContent(), '1 event found')
    t.same(await seriousViolations(local), [], 'axe: nothing serious with results shown, signed out')
    await localField.press('ArrowDown')
    await local.keyboard.press('Enter')
    await local.getByRole('dialog', { name: 'Piano lesson', exact: true }).waitFor()
    await local.keyboard.press('Enter')
    const dialog = local.getByRole('dialog', { name: 'Edit event' })
    await dialog.waitFor()
    t.equal(await dialog.getByLabel('Title').inputValue(), 'Piano lesson', 'Enter opens the local event')
    t.equal(await dialog.getByLabel('Start date').inputValue(), '2026-06-17')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'hidden' })
    await local.keyboard.press('Escape')

    // A phone: the field waits behind a Search button, then takes the toolbar's width.
    await local.setViewportSize({ width: 390, height: 844 })
    t.notOk(await localField.isVisible(), 'on a phone the field is folded')
    if (process.env.SEARCH_SCREENSHOTS !== undefined) await local.screenshot({ path: `${process.env.SEARCH_SCREENSHOTS}/search-phone-folded.png` })
    const toggle = local.getByRole('button', { name: 'Search', exact: true })
    await toggle.click()
    t.ok(await waitFor(async () => await toggle.getAttribute('aria-expanded') === 'true', 5_000), 'the Search button says it is expanded once drawn again')
    t.ok(await waitFor(async () => await focusedId(local) === 'search-input', 5_000), 'the Search button opens the field and focuses it')
    await local.keyboard.type('lunch')
    const phoneList = local.getByRole('list', { name: 'Search results for “lunch”' })
    await phoneList.waitFor({ timeout: EVENTUALLY_MS })
    const [panel, fieldBox] = [await local.locator('.search-results').boundingBox(), await localField.boundingBox()]
    t.ok(panel !== null && panel.x >= 0 && panel.x + panel.width <= 390, 'the results fit the phone\'s width')
    t.ok(fieldBox !== null && fieldBox.width > 250, 'the field takes the toolbar\'s width')
    if (process.env.SEARCH_SCREENSHOTS !== undefined) await local.screenshot({ path: `${process.env.SEARCH_SCREENSHOTS}/search-phone.png` })
    t.same(await seriousViolations(local), [], 'axe: nothing serious on the phone with results shown')
    await local.keyboard.press('Escape')
    await phoneList.waitFor({ state: 'hidden' })
    t.notOk(await localField.isVisible(), 'Escape folds the field again')

    t.same(asked, [], 'no request to the server')
    t.same(localErrors, [], 'no errors in the signed-out page')
  })

  t.same(errors.filter((error) => !/status of (401|500)/.test(error)), [], 'no errors in the page')
})

function searchTermsIn (urls: URL[]): string[] {
  return urls.map((url) => url.searchParams.get('q') ?? '')
}
