// In Chromium against the whole system with the Google stand-in: a Google calendar's own default
// reminders (set in Google Calendar's settings, kept with the calendar list entry) hold for every
// event of it that keeps the default. The browser notifies at the default's time, the details card
// names the default, the form says what the default is, and adding a reminder there starts from the
// default, which Google then holds as the event's own popups. The event starts at a minute off the
// time field's five-minute steps, as one another client made may: the form still saves it.
import { test } from 'tap'
import { DateTime } from 'luxon'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { consent, detailsCard, eventBlock, RECORD_NOTIFICATIONS, shownNotifications, signUpThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { startFullStack } from '../e2e/stack.js'
import { uniqueEmail } from '../helper.js'
import { waitUntil } from '../processes.js'

const ZONE = 'Europe/Berlin'

test('a Google calendar\'s default reminders in the browser, on an event at a time off the form\'s grid', async (t) => {
  const stack = await startFullStack(t, { web: true })
  const google = stack.google.control
  const email = uniqueEmail('google-reminders')
  google.createAccount({ email, name: 'Gia Example', timeZone: ZONE })
  // One popup a minute before, and an email an hour before, which stays Google's to send.
  google.setDefaultReminders(email, [{ method: 'popup', minutes: 1 }, { method: 'email', minutes: 60 }])
  // Starts 150 s from now or a minute later, at a minute off the form's five-minute grid (9:03, as
  // another client may set it): its default reminder is due about 90 s after the start of the test.
  const wholeMinute = DateTime.fromMillis(Math.ceil((Date.now() + 150_000) / 60_000) * 60_000, { zone: ZONE })
  const start = wholeMinute.minute % 5 === 0 ? wholeMinute.plus({ minutes: 1 }) : wholeMinute
  const bank = google.insertEvent(email, {
    summary: 'Call the bank',
    start: { dateTime: start.toISO({ suppressMilliseconds: true }), timeZone: ZONE },
    end: { dateTime: start.plus({ minutes: 30 }).toISO({ suppressMilliseconds: true }), timeZone: ZONE }
  })
  t.same(bank['reminders'], { useDefault: true }, 'at Google the event keeps the calendar\'s default')
  const day = start.toISODate() as string

  const browser = await launchBrowser(t)
  const context = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
  await context.grantPermissions(['notifications'], { origin: stack.webUrl })
  await context.addInitScript(RECORD_NOTIFICATIONS)
  const page = await context.newPage()
  await page.setViewportSize({ width: 1440, height: 900 })
  const errors = collectErrors(page, { foreign: (url) => url.startsWith(stack.google.url) })
  await signUpThroughUi(page, stack.webUrl, { name: 'Gia', email, password: 'correct horse 2' }, `/day?date=${day}`)
  await page.getByRole('button', { name: 'Connect Google Calendar' }).click()
  await consent(page, stack.google.url, email)
  await page.waitForURL(`${stack.webUrl}/day?date=${day}`)
  await eventBlock(page, 'Call the bank').waitFor({ timeout: 30_000 })

  await t.test('the details card names the calendar\'s default', async (t) => {
    await eventBlock(page, 'Call the bank').click()
    const card = detailsCard(page)
    await card.waitFor()
    t.equal(await card.locator('.details-reminders').textContent(), '1 minute before (the calendar\'s default)', 'the popup; the email is Google\'s to send')
    t.same(await seriousViolations(page), [], 'axe: the card with its reminders')
    await card.getByRole('button', { name: 'Close' }).click()
  })

  await t.test('the browser notifies at the default\'s time', async (t) => {
    const due = start.toMillis() - 60_000
    t.same(await shownNotifications(page), [], 'nothing before its time')
    const deadline = due + 20_000
    while (Date.now() < deadline && (await shownNotifications(page)).length === 0) await page.waitForTimeout(250)
    const shown = await shownNotifications(page)
    t.equal(shown.length, 1, 'one notification')
    t.ok(Date.now() >= due - 1000, 'not before its time')
    t.match(shown[0], { title: 'Call the bank', body: /^In 1 (minute|minutes), at / })
  })

  await t.test('the form says what the default is; a reminder added there starts from it and reaches Google', async (t) => {
    await eventBlock(page, 'Call the bank').click()
    await detailsCard(page).getByRole('button', { name: 'Edit', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Edit event' })
    const reminders = dialog.getByRole('group', { name: 'Reminders' })
    t.equal(await reminders.locator('#event-reminders-none').textContent(), 'The calendar\'s default: 1 minute before.')
    await reminders.getByRole('button', { name: 'Add reminder' }).click()
    t.equal(await reminders.getByLabel('Minutes before, reminder 1').inputValue(), '1', 'the default, now the event\'s own')
    t.equal(await reminders.getByLabel('Reminder 2', { exact: true }).inputValue(), '5', 'and the first preset beside it')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await dialog.waitFor({ state: 'hidden' })
    await waitUntil(() => {
      const stored = google.storedEvents(email).find((event) => event['id'] === bank['id'])
      return JSON.stringify(stored?.['reminders']) === JSON.stringify({ useDefault: false, overrides: [{ method: 'popup', minutes: 1 }, { method: 'popup', minutes: 5 }] })
    }, 'the two popups at Google, the default no longer used', 20_000)
    t.pass('Google holds the event\'s own popups')
    await eventBlock(page, 'Call the bank').click()
    t.equal(await detailsCard(page).locator('.details-reminders').textContent(), '1 minute before, 5 minutes before', 'the card shows the event\'s own now')
  })

  // The session check before signing up answers 401, as in every signed-out start.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
