// In Chromium against the whole system with the Google stand-in: after connecting a Google account
// with two calendars (primary and "Family", each with its colour at Google), the calendar list
// names both, each in its own default colour, events are drawn in their calendar's colour, a calendar hidden
// stays hidden across a reload (kept for this account), a new event made in "Family" through
// the dialog's calendar picker reaches Family at Google, and a dialog opened before the list
// arrived takes the primary calendar once it does. A calendar added at Google afterwards comes with
// Refresh once Sync reads the calendar list again (ten minutes after it last did).
import { test } from 'tap'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { consent, eventBlock, signInThroughUi, signUpThroughUi } from './ui.js'
import { startFullStack } from '../e2e/stack.js'
import { uniqueEmail } from '../helper.js'
import { waitUntil } from '../processes.js'

const DAY = '2026-03-02'

/** The colour the block is drawn in: its left edge. */
async function edgeColor (page: Page, title: string): Promise<string> {
  return await eventBlock(page, title).evaluate((body) => body.ownerDocument.defaultView?.getComputedStyle(body.parentElement as typeof body).borderLeftColor ?? '')
}

test('calendars of a Google account: names, colours, visibility kept, the picker, one added at Google later', async (t) => {
  const stack = await startFullStack(t, { web: true })
  const google = stack.google.control
  const email = uniqueEmail('cal')
  google.createAccount({ email, name: 'Cal Example', timeZone: 'Europe/Berlin' })
  const family = google.addCalendar(email, { summary: 'Family', backgroundColor: '#f83a22', timeZone: 'Europe/Berlin' })
  const primaryColor = google.listAccounts().find((account) => account.email === email)?.calendars.find((calendar) => calendar.primary)?.backgroundColor
  google.insertEvent(email, { summary: 'Dentist', start: { dateTime: `${DAY}T09:00:00+01:00` }, end: { dateTime: `${DAY}T10:00:00+01:00` } })
  google.insertEvent(family.id, { summary: 'Swim class', start: { dateTime: `${DAY}T17:00:00+01:00` }, end: { dateTime: `${DAY}T18:00:00+01:00` } })

  const browser = await launchBrowser(t)
  const page = await (await newContext(browser)).newPage()
  const errors = collectErrors(page, { foreign: (url) => url.startsWith(stack.google.url) })

  await signUpThroughUi(page, stack.webUrl, { name: 'Cal', email, password: 'correct horse 1' }, `/day?date=${DAY}`)
  await page.getByRole('button', { name: 'Connect Google Calendar' }).click()
  await consent(page, stack.google.url, email)
  await page.waitForURL(`${stack.webUrl}/day?date=${DAY}`)
  await eventBlock(page, 'Swim class').waitFor({ timeout: 20_000 })
  await eventBlock(page, 'Dentist').waitFor()

  await t.test('the list names each calendar in its own colour; events are drawn in it', async (t) => {
    const list = page.getByRole('complementary', { name: 'Calendars' })
    await list.getByLabel('Family').waitFor({ timeout: 10_000 })
    t.ok(await list.getByLabel('My calendar').isChecked())
    t.ok(await list.getByLabel(email).isChecked(), 'the primary calendar under its name at Google')
    t.ok(await list.getByLabel('Family').isChecked())
    // Defaults from the palette by position (lib/preferences.ts), not Google's colours, which may repeat.
    t.ok(primaryColor !== undefined)
    t.equal(await edgeColor(page, 'Dentist'), 'rgb(11, 128, 67)', 'the primary calendar: the palette\'s second colour (the own calendar has the first)')
    t.equal(await edgeColor(page, 'Swim class'), 'rgb(213, 0, 0)', 'Family: the third')
  })

  await t.test('hiding a calendar hides its events, and stays so after a reload', async (t) => {
    const list = page.getByRole('complementary', { name: 'Calendars' })
    await list.getByLabel('Family').uncheck()
    await eventBlock(page, 'Swim class').waitFor({ state: 'detached' })
    t.equal(await eventBlock(page, 'Dentist').count(), 1, 'the other calendar\'s events stay')
    await page.reload()
    await eventBlock(page, 'Dentist').waitFor()
    t.notOk(await page.getByRole('complementary', { name: 'Calendars' }).getByLabel('Family').isChecked(), 'still hidden after a reload')
    t.equal(await eventBlock(page, 'Swim class').count(), 0)

    // Another device of the same account: its own browser, signed in there, with nothing kept locally.
    const elsewhere = await (await newContext(browser)).newPage()
    const elsewhereErrors = collectErrors(elsewhere, { foreign: (url) => url.startsWith(stack.google.url) })
    await elsewhere.goto(`${stack.webUrl}/day?date=${DAY}&auth=login`)
    await signInThroughUi(elsewhere, { email, password: 'correct horse 1' })
    await eventBlock(elsewhere, 'Dentist').waitFor({ timeout: 20_000 })
    const elsewhereList = elsewhere.getByRole('complementary', { name: 'Calendars' })
    await elsewhereList.getByLabel('Family').waitFor({ timeout: 10_000 })
    t.notOk(await elsewhereList.getByLabel('Family').isChecked(), 'hidden on the other device too: kept with the account')
    t.equal(await eventBlock(elsewhere, 'Swim class').count(), 0)
    // The choice is drawn at once and reaches the account a moment later: the device is closed
    // only once the server has taken it, as a person would close it after a while.
    const taken = elsewhere.waitForResponse((response) => response.url().endsWith('/api/calendars/hidden') && response.request().method() === 'PUT')
    await elsewhereList.getByLabel('Family').check()
    await eventBlock(elsewhere, 'Swim class').waitFor()
    t.equal((await taken).status(), 200, 'the account took the choice')
    t.same(elsewhereErrors.filter((error) => !/status of 401/.test(error)), [], 'no errors on the other device')
    await elsewhere.context().close()

    // Back on the first device, the choice made elsewhere arrives when the tab is looked at again.
    // Headless Chromium never hides a tab: the event a browser sends on coming back is dispatched here.
    await page.evaluate('document.dispatchEvent(new Event("visibilitychange"))')
    await eventBlock(page, 'Swim class').waitFor()
    t.ok(await page.getByRole('complementary', { name: 'Calendars' }).getByLabel('Family').isChecked(), 'shown again here')
  })

  await t.test('a new event made in Family through the picker reaches Family at Google', async (t) => {
    await page.getByRole('button', { name: 'New event' }).click()
    const dialog = page.getByRole('dialog', { name: 'New event' })
    await dialog.getByLabel('Title').fill('Piano recital')
    await dialog.getByLabel('Start date').fill(DAY)
    await dialog.getByLabel('Start time').fill('19:00')
    await dialog.getByLabel('End date').fill(DAY)
    await dialog.getByLabel('End time').fill('20:00')
    const picker = dialog.getByLabel('Calendar', { exact: true })
    t.equal(await picker.inputValue(), email, 'a new event is in the account\'s primary calendar until another is picked')
    await picker.selectOption({ label: 'Family' })
    await dialog.getByRole('button', { name: 'Save' }).click()
    await eventBlock(page, 'Piano recital').waitFor()
    t.equal(await edgeColor(page, 'Piano recital'), 'rgb(213, 0, 0)', 'drawn in Family\'s colour at once')
    await waitUntil(() => google.storedEvents(family.id).some((event) => event.summary === 'Piano recital'), 'the event in Family at Google', 20_000)
    t.notOk(google.storedEvents(email).some((event) => event.summary === 'Piano recital'), 'not in the primary calendar')
  })

  await t.test('a dialog opened before the calendar list arrives takes the primary calendar once it does', async (t) => {
    let release = (): void => {}
    const listHeld = new Promise<void>((resolve) => { release = resolve })
    const calendarList = `${stack.backendOrigin}/api/calendars`
    await page.route(calendarList, async (route) => {
      await listHeld
      await route.continue()
    })
    await page.reload()
    await eventBlock(page, 'Dentist').waitFor()
    await page.getByRole('button', { name: 'New event' }).click()
    const dialog = page.getByRole('dialog', { name: 'New event' })
    await dialog.getByLabel('Title').fill('Opened early')
    t.equal(await dialog.getByLabel('Calendar', { exact: true }).count(), 0, 'no picker while only the own calendar is known')
    release()
    const picker = dialog.getByLabel('Calendar', { exact: true })
    await picker.waitFor({ timeout: 10_000 })
    await waitUntil(async () => await picker.inputValue() === email, 'the picker on the primary calendar', 10_000)
    t.equal(await picker.inputValue(), email, 'the account\'s primary calendar, as for a dialog opened after the list arrived')
    t.equal(await dialog.getByLabel('Title').inputValue(), 'Opened early', 'what was typed stays')
    await page.unroute(calendarList)
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
  })

  await t.test('a calendar added at Google later: Refresh ten minutes on brings it, named in the list with its events', async (t) => {
    const book = google.addCalendar(email, { summary: 'Book club', timeZone: 'Europe/Berlin' })
    google.insertEvent(book.id, { summary: 'Reading night', start: { dateTime: `${DAY}T20:00:00+01:00` }, end: { dateTime: `${DAY}T21:00:00+01:00` } })
    // As if Sync had last read the calendar list ten minutes ago.
    await stack.sync.syncDb.db.collection('calendars').updateMany({}, { $set: { listedAt: new Date(Date.now() - 10 * 60_000) } })
    await page.getByRole('button', { name: 'Refresh events' }).click()
    await eventBlock(page, 'Reading night').waitFor({ timeout: 20_000 })
    const list = page.getByRole('complementary', { name: 'Calendars' })
    await list.getByLabel('Book club').waitFor({ timeout: 10_000 })
    t.ok(await list.getByLabel('Book club').isChecked(), 'named in the list, shown')
    await eventBlock(page, 'Reading night').click()
    t.equal(await page.getByRole('dialog').locator('.details-calendar').textContent(), 'Book club', 'the details card names it')
    await page.keyboard.press('Escape')
  })

  // The session library's first look for a session, signed out, answers 401 (as in the neighbouring tests).
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
