// In Chromium against the whole system: quick add beside New event. From the keyboard alone, "Lunch
// with Sam tomorrow 1pm" and Enter make the event through the same create as the dialog's Save: the
// calendar moves to tomorrow and shows it, the account stores it. Text it cannot read opens New
// event with that text as the title. Offline, a quick add is kept and marked like any change and
// reaches the account when the connection returns. With a default reminder chosen in Preferences,
// the quick-added event is stored with it, as one made with New event is. axe finds nothing serious.
import { test } from 'tap'
import { DateTime } from 'luxon'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { EVENTUALLY_MS, eventBlock, signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

const ZONE = 'Europe/Berlin'

async function focusedId (page: Page): Promise<string> {
  return await page.evaluate('document.activeElement?.id ?? ""') as string
}

test('quick add', async (t) => {
  const stack = await startWebStack(t)
  const user = { email: uniqueEmail('quick'), password: 'quick add password 1' }
  const account = await signUp(stack.backend.app, { ...user, name: 'Quinn' })
  const events = stack.backend.app.mongo.db.collection<{ title: string, startDate: string, endDate: string, isAllDay: boolean }>('events')
  const tomorrow = DateTime.now().setZone(ZONE).startOf('day').plus({ days: 1 })

  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const context = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
  const page = await context.newPage()
  await page.setViewportSize({ width: 1440, height: 900 })
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/day?auth=login`)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
  const field = page.getByRole('textbox', { name: 'Quick add' })

  await t.test('from the keyboard: typed, Enter, the event is made and shown on its day', async (t) => {
    t.same(await seriousViolations(page), [], 'axe: nothing serious with the field in the toolbar')
    await page.getByRole('button', { name: 'New event' }).focus()
    await page.keyboard.press('Shift+Tab')
    await page.keyboard.press('Shift+Tab')
    t.equal(await focusedId(page), 'quick-add-input', 'the field comes before its Add button and New event')
    await page.keyboard.type('Lunch with Sam tomorrow 1pm')
    await page.keyboard.press('Enter')
    await page.waitForURL(new RegExp(`/day\\?date=${tomorrow.toISODate() ?? ''}$`))
    t.pass('the calendar moves to tomorrow')
    await eventBlock(page, 'Lunch with Sam').waitFor()
    t.match(await eventBlock(page, 'Lunch with Sam').locator('.event-time').textContent(), /13:00 – 14:00/, 'at 1pm, for an hour')
    t.equal(await field.inputValue(), '', 'the field is emptied for the next one')
    t.ok(await waitFor(async () => await events.countDocuments({
      title: 'Lunch with Sam', isAllDay: false, startDate: tomorrow.set({ hour: 13 }).toISO({ suppressMilliseconds: true }) as string, endDate: tomorrow.set({ hour: 14 }).toISO({ suppressMilliseconds: true }) as string
    }) === 1, EVENTUALLY_MS), 'stored in the account, in the zone')
    await page.locator('.undo-toast').waitFor()
    t.pass('and undo is offered, as for a change made in the dialog')
  })

  await t.test('the Add button, and an all-day event', async (t) => {
    await field.fill('Conference all day tomorrow')
    await page.getByRole('button', { name: 'Add', exact: true }).click()
    await page.locator('.all-day-event', { hasText: 'Conference' }).waitFor()
    t.ok(await waitFor(async () => await events.countDocuments({ title: 'Conference', isAllDay: true, startDate: tomorrow.toISODate() as string }) === 1, EVENTUALLY_MS), 'stored as an all-day event')
  })

  await t.test('what it cannot read opens New event with the text as the title', async (t) => {
    await field.fill('Call the plumber 12/3')
    await field.press('Enter')
    const dialog = page.getByRole('dialog', { name: 'New event' })
    await dialog.waitFor()
    t.equal(await dialog.getByLabel('Title').inputValue(), 'Call the plumber 12/3', 'the text, whole')
    t.same(await seriousViolations(page), [], 'axe: nothing serious in the dialog')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
    t.equal(await events.countDocuments({ title: /plumber/ }), 0, 'nothing made without the person\'s Save')
  })

  await t.test('offline: kept and marked like any change, sent when the connection returns', async (t) => {
    await context.setOffline(true)
    await field.fill('Dentist tomorrow 9am for 30 min')
    await field.press('Enter')
    await eventBlock(page, 'Dentist').waitFor()
    await page.getByRole('group', { name: /not saved: Dentist$/i }).waitFor()
    t.pass('drawn at once, marked not saved')
    await context.setOffline(false)
    t.ok(await waitFor(async () => await events.countDocuments({ title: 'Dentist', startDate: tomorrow.set({ hour: 9 }).toISO({ suppressMilliseconds: true }) as string, endDate: tomorrow.set({ hour: 9, minute: 30 }).toISO({ suppressMilliseconds: true }) as string }) === 1, EVENTUALLY_MS), 'the account has it once the connection is back')
    await page.getByRole('group', { name: /not saved: Dentist$/i }).waitFor({ state: 'detached', timeout: EVENTUALLY_MS })
    t.pass('and the mark goes')
  })

  await t.test('the account\'s default reminder, as New event gives it', async (t) => {
    const preferences = page.getByRole('button', { name: 'Preferences' })
    await preferences.focus()
    await page.keyboard.press('Enter')
    const dialog = page.getByRole('dialog', { name: 'Preferences' })
    await dialog.getByLabel('Default reminder').selectOption('10')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await dialog.waitFor({ state: 'detached' })
    await field.focus()
    await page.keyboard.type('Standup tomorrow 10am')
    await page.keyboard.press('Enter')
    await eventBlock(page, 'Standup').waitFor()
    const start = tomorrow.set({ hour: 10 })
    const range = `start=${encodeURIComponent(start.toUTC().toISO() as string)}&end=${encodeURIComponent(start.plus({ hours: 1 }).toUTC().toISO() as string)}`
    const read = async () => {
      const answer = await stack.backend.app.inject({ method: 'GET', url: `/api/event?${range}`, headers: account.headers })
      return answer.json<Array<{ title: string, reminders?: Array<{ minutes: number }> }>>().find((event) => event.title === 'Standup')
    }
    t.ok(await waitFor(async () => await read() !== undefined, EVENTUALLY_MS), 'the account has the event')
    t.same((await read())?.reminders, [{ minutes: 10 }], 'read back through the API with the default reminder, 10 minutes before')
  })

  t.same(errors.filter((error) => !/status of 401|ERR_INTERNET_DISCONNECTED|Failed to fetch/.test(error)), [], 'no errors in the page')
})
