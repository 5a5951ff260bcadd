// In Chromium against the whole system, one signed-in user: the empty time of the week and day
// grids is reached from the keyboard. The grid's slots are one tab stop; the arrow keys move
// between half hours and days (past the last day, into the next week); each slot is named by its
// day and time (and the events there); Enter opens the New event dialog at the slot's time, and
// what is saved there is stored at that time. axe-core finds nothing serious with a slot focused.
import { test } from 'tap'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { EVENTUALLY_MS, eventBlock, signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

const ZONE = 'Europe/Berlin'
const MONDAY = '2026-03-02'

/** What has the focus: its class and accessible name (aria-label, else its text). */
async function focused (page: Page): Promise<{ slot: boolean, name: string }> {
  return await page.evaluate(`(() => {
    const el = document.activeElement
    return { slot: el.classList.contains('slot'), name: (el.getAttribute('aria-label') || el.textContent || '').trim() }
  })()`) as { slot: boolean, name: string }
}

test('the time slots of the week and day grids from the keyboard', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('slots'), password: 'slots password 1' }
  const account = await signUp(app, { ...user, name: 'Kim Keys' })
  const answer = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: { ...account.headers, 'content-type': 'application/json' },
    payload: JSON.stringify([{ title: 'Planning', startDate: `${MONDAY}T09:00:00+01:00`, endDate: `${MONDAY}T10:00:00+01:00`, timeZone: ZONE }])
  })
  t.equal(answer.statusCode, 204)
  const events = app.mongo.db.collection<{ title: string, startDate: string, endDate: string }>('events')

  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const page = await (await newContext(browser, { timezoneId: ZONE, bypassCSP: true })).newPage()
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/week?date=${MONDAY}&auth=login`)
  await signInThroughUi(page, user)
  await eventBlock(page, 'Planning').waitFor()

  // Tab from the top of the page, as a person would, until the grid is reached.
  const reached: Array<{ slot: boolean, name: string }> = []
  await page.locator('body').focus()
  for (let presses = 0; presses < 60 && !reached.some((element) => element.slot); presses++) {
    await page.keyboard.press('Tab')
    reached.push(await focused(page))
  }
  const slot = reached.find((element) => element.slot)
  t.equal(slot?.name, 'Monday, 2 March 2026, 09:00, during Planning', 'Tab reaches the grid: its slot is named by day and time, and what is there')
  t.equal(await page.locator('.grid-body .slot').count(), 1, 'the grid is one tab stop (one slot element at a time)')
  await page.keyboard.press('Tab')
  t.notOk((await focused(page)).slot, 'the next Tab leaves the slots')
  await page.keyboard.press('Shift+Tab')
  t.same(await focused(page), { slot: true, name: 'Monday, 2 March 2026, 09:00, during Planning' }, 'and Shift+Tab comes back to the same slot')

  await page.keyboard.press('ArrowDown')
  await page.keyboard.press('ArrowDown')
  t.same(await focused(page), { slot: true, name: 'Monday, 2 March 2026, 10:00' }, 'ArrowDown: the next half hour, twice (free time says nothing more)')
  await page.keyboard.press('ArrowRight')
  t.same(await focused(page), { slot: true, name: 'Tuesday, 3 March 2026, 10:00' }, 'ArrowRight: the next day')
  await page.keyboard.press('ArrowUp')
  await page.keyboard.press('ArrowDown')
  t.equal(new URL(page.url()).search, `?date=${MONDAY}`, 'the arrows inside the grid do not change the week')
  t.same(await seriousViolations(page), [], 'axe: nothing serious with a slot focused')
  const [slotBox, column] = [await page.locator('.grid-body .slot').boundingBox(), await page.getByRole('region', { name: 'Tuesday, 3 March 2026' }).boundingBox()]
  t.ok(slotBox !== null && column !== null && slotBox.x >= column.x && slotBox.x + slotBox.width <= column.x + column.width, 'the focused slot is drawn in Tuesday\'s column')
  t.ok(await page.locator('.grid-body .slot').isVisible() && await page.locator('.grid-body .slot').textContent() === '+ 10:00', 'showing its time')

  await page.keyboard.press('Enter')
  const dialog = page.getByRole('dialog', { name: 'New event' })
  await dialog.waitFor()
  t.equal(await dialog.getByLabel('Start date').inputValue(), '2026-03-03', 'Enter: the New event dialog, on the slot\'s day')
  t.equal(await dialog.getByLabel('Start time').inputValue(), '10:00', 'at the slot\'s time')
  t.equal(await dialog.getByLabel('End time').inputValue(), '11:00', 'for an hour')
  await page.keyboard.type('Made from the grid')
  await page.keyboard.press('Enter')
  await dialog.waitFor({ state: 'hidden' })
  t.ok(await waitFor(async () => await events.countDocuments({ title: 'Made from the grid', startDate: '2026-03-03T10:00:00+01:00', endDate: '2026-03-03T11:00:00+01:00' }) === 1, EVENTUALLY_MS), 'stored at the slot\'s time')
  await eventBlock(page, 'Made from the grid').waitFor()
  t.same(await focused(page), { slot: true, name: 'Tuesday, 3 March 2026, 10:00, during Made from the grid' }, 'focus comes back to the slot, which now names the event')

  for (let day = 0; day < 5; day++) await page.keyboard.press('ArrowRight')
  t.same(await focused(page), { slot: true, name: 'Sunday, 8 March 2026, 10:00' }, 'to the last day of the week')
  await page.keyboard.press('ArrowRight')
  await page.waitForURL(/\/week\?date=2026-03-09$/)
  t.same(await focused(page), { slot: true, name: 'Monday, 9 March 2026, 10:00' }, 'past it: the next week, on its first day, focus kept')

  await page.goto(`${stack.webUrl}/day?date=${MONDAY}`)
  await eventBlock(page, 'Planning').waitFor()
  await page.getByRole('button', { name: 'Monday, 2 March 2026, 09:00, during Planning' }).focus()
  await page.keyboard.press('ArrowUp')
  await page.keyboard.press('ArrowUp')
  t.same(await focused(page), { slot: true, name: 'Monday, 2 March 2026, 08:00' }, 'the day view has the same slots')
  await page.keyboard.press('End')
  t.same(await focused(page), { slot: true, name: 'Monday, 2 March 2026, 23:30' }, 'End: the last slot of the day')
  await page.keyboard.press('Home')
  t.same(await focused(page), { slot: true, name: 'Monday, 2 March 2026, 00:00' }, 'Home: the first')
  await page.keyboard.press('Enter')
  await dialog.waitFor()
  t.equal(await dialog.getByLabel('Start time').inputValue(), '00:00')
  await page.keyboard.press('Escape')
  await dialog.waitFor({ state: 'hidden' })
  t.same(await seriousViolations(page), [], 'axe: nothing serious in the day view')
  await page.keyboard.press('ArrowLeft')
  await page.waitForURL(/\/day\?date=2026-03-01$/)
  t.same(await focused(page), { slot: true, name: 'Sunday, 1 March 2026, 00:00' }, 'ArrowLeft in the day view: the day before, focus kept')

  // Before the sign-in the session library asks for a refresh, answered 401: there is no session yet.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
