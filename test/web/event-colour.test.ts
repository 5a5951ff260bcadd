// In Chromium against the whole system: an event's own colour chosen in the event form with the
// keyboard alone (Tab to the colour row, the arrow keys to Tomato), stored, drawn in that colour in
// the day, week, month and agenda views after a reload, shown chosen when the form opens again, and
// set back to the calendar's colour; axe finds nothing serious in the form and in every view, light and dark.
import { test } from 'tap'
import { DateTime } from 'luxon'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { openEvent, signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'

const ZONE = 'Europe/Berlin'
const TOMATO = '#d50000'

/** The colour an event is drawn in: the `--calendar` of the nearest element that sets it. */
async function drawnColour (page: Page, title: string): Promise<string> {
  const element = page.locator('[style*="--calendar"]', { hasText: title }).last()
  await element.waitFor()
  return (await element.evaluate((node) => node.ownerDocument.defaultView?.getComputedStyle(node).getPropertyValue('--calendar') ?? '')).trim()
}

test('an event\'s own colour: chosen by keyboard, drawn in every view, kept after a reload, axe clean', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('colour'), password: 'colour password 1' }
  const account = await signUp(app, { ...user, name: 'Cora Colour' })
  const day = DateTime.now().setZone(ZONE).plus({ days: 1 }).startOf('day')
  const date = day.toISODate() as string
  const answer = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: account.headers,
    payload: { title: 'Colour review', startDate: day.set({ hour: 10 }).toISO({ suppressMilliseconds: true }), endDate: day.set({ hour: 11 }).toISO({ suppressMilliseconds: true }), timeZone: ZONE }
  })
  t.equal(answer.statusCode, 204, answer.body)
  const stored = async () => {
    const read = await app.inject({ method: 'GET', url: `/api/events/search?q=${encodeURIComponent('colour review')}`, headers: account.headers })
    return read.json<{ events: Array<{ color?: string }> }>().events[0]
  }

  const browser = await launchBrowser(t)
  const context = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
  const page = await context.newPage()
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/day?date=${date}&auth=login`)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
  const calendarColour = await drawnColour(page, 'Colour review')
  t.not(calendarColour, TOMATO, 'drawn in its calendar\'s colour at first')

  await t.test('the colour chosen with the keyboard alone', async (t) => {
    const dialog = await openEvent(page, 'Colour review')
    const colours = dialog.getByRole('group', { name: 'Colour' })
    t.equal(await colours.getByRole('radio').count(), 12, 'the calendar\'s colour and Google\'s eleven')
    t.ok(await colours.getByRole('radio', { name: 'Calendar colour' }).isChecked(), 'the calendar\'s colour until chosen')
    await dialog.getByLabel('Description').focus()
    await page.keyboard.press('Tab')
    t.equal(await page.evaluate('document.activeElement?.getAttribute("aria-label")'), 'Calendar colour', 'one Tab from the description reaches the colours')
    for (let step = 0; step < 11; step++) await page.keyboard.press('ArrowRight')
    t.equal(await page.evaluate('document.activeElement?.getAttribute("aria-label")'), 'Tomato', 'the arrows move through the eleven')
    t.ok(await colours.getByRole('radio', { name: 'Tomato' }).isChecked(), 'chosen as it is reached')
    t.same(await seriousViolations(page), [], 'axe: the form with its colours')
    await dialog.getByRole('button', { name: 'Save' }).press('Enter')
    await dialog.waitFor({ state: 'hidden' })
    let saved: string | undefined
    for (let tries = 0; tries < 40 && saved === undefined; tries++) {
      saved = (await stored())?.color
      if (saved === undefined) await page.waitForTimeout(250)
    }
    t.equal(saved, 'tomato', 'stored with the event')
    t.equal(await drawnColour(page, 'Colour review'), TOMATO, 'drawn in it at once')
  })

  await t.test('drawn in its colour in every view after a reload, light and dark, axe clean', async (t) => {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      for (const view of ['day', 'week', 'month', 'agenda']) {
        await page.goto(`${stack.webUrl}/${view}?date=${date}`)
        t.equal(await drawnColour(page, 'Colour review'), TOMATO, `${view} (${scheme})`)
        t.same(await seriousViolations(page), [], `axe: ${view} (${scheme})`)
      }
    }
    await page.emulateMedia({ colorScheme: 'light' })
  })

  await t.test('the form shows it chosen, and the calendar\'s colour can be chosen again', async (t) => {
    await page.goto(`${stack.webUrl}/day?date=${date}`)
    const dialog = await openEvent(page, 'Colour review')
    const colours = dialog.getByRole('group', { name: 'Colour' })
    t.ok(await colours.getByRole('radio', { name: 'Tomato' }).isChecked(), 'Tomato after the reload')
    await colours.getByRole('radio', { name: 'Tomato' }).focus()
    await page.keyboard.press('ArrowRight')
    t.equal(await page.evaluate('document.activeElement?.getAttribute("aria-label")'), 'Calendar colour', 'past the last colour the row starts again')
    t.ok(await colours.getByRole('radio', { name: 'Calendar colour' }).isChecked(), 'chosen as it is reached')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await dialog.waitFor({ state: 'hidden' })
    let cleared = false
    for (let tries = 0; tries < 40 && !cleared; tries++) {
      cleared = (await stored())?.color === undefined
      if (!cleared) await page.waitForTimeout(250)
    }
    t.ok(cleared, 'stored without a colour of its own')
    // The page draws what it reads again after the save, which can come after the store has it.
    let drawn = await drawnColour(page, 'Colour review')
    for (let tries = 0; tries < 40 && drawn !== calendarColour; tries++) {
      await page.waitForTimeout(250)
      drawn = await drawnColour(page, 'Colour review')
    }
    t.equal(drawn, calendarColour, 'drawn in its calendar\'s colour again')
  })

  // The session check before signing in answers 401, as in every signed-out start.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
