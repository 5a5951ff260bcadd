// Printing (web/src/ui/print.css), with Chromium's print media emulated: in the day, week and
// agenda views the toolbar, the calendar list, the buttons and any open dialog are not shown; the
// events and their times are, in black on white, the whole day laid out rather than a scrolled
// part of it; axe finds nothing serious in print; back on screen everything is there again.
import { test, type Test } from 'tap'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { detailsCard, eventBlock } from './ui.js'
import { seriousViolations } from './axe.js'

async function style (page: Page, selector: string, property: string): Promise<string> {
  return await page.locator(selector).first().evaluate((element, name) => {
    const view = element.ownerDocument.defaultView as unknown as { getComputedStyle: (element: unknown) => Record<string, string> }
    return view.getComputedStyle(element)[name] ?? ''
  }, property)
}

async function controlsHidden (t: Test, page: Page, view: string): Promise<void> {
  t.notOk(await page.locator('header.topbar').isVisible(), `${view}: no toolbar`)
  for (const name of ['New event', 'Today', 'Refresh events', 'Sign in']) {
    t.notOk(await page.getByRole('button', { name, exact: true }).isVisible(), `${view}: no "${name}" button`)
  }
  t.notOk(await page.getByRole('complementary', { name: 'Calendars' }).isVisible(), `${view}: no calendar list`)
}

test('printing the day, week and agenda views', async (t) => {
  const stack = await startWebStack(t)
  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const page = await (await newContext(browser, { bypassCSP: true })).newPage()
  await page.setViewportSize({ width: 1280, height: 800 })
  const errors = collectErrors(page)

  // Signed out: today's demo events, among them "Deep work" and "Lunch with Sam".
  await page.goto(`${stack.webUrl}/day`)
  await eventBlock(page, 'Deep work').waitFor()

  await t.test('the day view: events in black on white, the whole day, no controls', async (t) => {
    await page.emulateMedia({ media: 'print' })
    await controlsHidden(t, page, 'day')
    t.ok(await eventBlock(page, 'Deep work').isVisible(), 'the event is shown')
    t.ok(await eventBlock(page, 'Lunch with Sam').isVisible(), 'and the others')
    t.match(await eventBlock(page, 'Deep work').locator('.event-time').textContent(), /\d:\d\d – \d+:\d\d/, 'with its time')
    t.equal(await style(page, '.event-title', 'color'), 'rgb(0, 0, 0)', 'the title in black')
    t.equal(await style(page, '.event-time', 'color'), 'rgb(0, 0, 0)', 'the time in black')
    t.equal(await style(page, '.event', 'backgroundColor'), 'rgb(255, 255, 255)', 'on white')
    t.equal(await style(page, '.grid-scroll', 'overflowY'), 'visible', 'the day is not cut to a scrolled window')
    t.same(await seriousViolations(page), [], 'axe: nothing serious in print')
    await page.emulateMedia({ media: 'screen' })
    t.ok(await page.getByRole('button', { name: 'New event' }).isVisible(), 'on screen the toolbar is back')
  })

  await t.test('an open dialog is not printed', async (t) => {
    await eventBlock(page, 'Deep work').focus()
    await page.keyboard.press('Enter')
    await detailsCard(page).waitFor()
    await page.emulateMedia({ media: 'print' })
    t.notOk(await detailsCard(page).isVisible(), 'the details card is not printed')
    t.ok(await eventBlock(page, 'Deep work').isVisible(), 'the calendar under it is')
    await page.emulateMedia({ media: 'screen' })
    await page.keyboard.press('Escape')
    await detailsCard(page).waitFor({ state: 'hidden' })
  })

  await t.test('the week view', async (t) => {
    await page.getByRole('link', { name: 'Week', exact: true }).click()
    await page.waitForURL(/\/week/)
    await eventBlock(page, 'Deep work').waitFor()
    await page.emulateMedia({ media: 'print' })
    await controlsHidden(t, page, 'week')
    t.ok(await eventBlock(page, 'Deep work').isVisible(), 'the event is shown')
    t.ok(await page.locator('.day-head').first().isVisible(), 'under its days')
    t.equal(await style(page, '.event-title', 'color'), 'rgb(0, 0, 0)')
    t.same(await seriousViolations(page), [], 'axe: nothing serious in print')
    await page.emulateMedia({ media: 'screen' })
  })

  await t.test('the agenda', async (t) => {
    await page.getByRole('link', { name: 'Agenda', exact: true }).click()
    await page.waitForURL(/\/agenda/)
    const item = page.locator('.agenda-event', { hasText: 'Deep work' })
    await item.waitFor()
    await page.emulateMedia({ media: 'print' })
    await controlsHidden(t, page, 'agenda')
    t.ok(await item.isVisible(), 'the event is listed')
    t.ok(await item.locator('.agenda-time').isVisible(), 'with its time')
    t.ok(await page.locator('.agenda-date').first().isVisible(), 'under its day')
    t.equal(await style(page, '.agenda-title', 'color'), 'rgb(0, 0, 0)')
    t.equal(await style(page, '.agenda-event', 'backgroundColor'), 'rgb(255, 255, 255)')
    t.notOk(await page.locator('.agenda-end').isVisible(), 'no "Show more" and loading line')
    t.same(await seriousViolations(page), [], 'axe: nothing serious in print')
    await page.emulateMedia({ media: 'screen' })
  })

  t.same(errors, [], 'no errors in the page')
})
