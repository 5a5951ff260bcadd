// In Chromium against the whole system: an event's reminder is shown as a browser notification at
// its time, by one of two open tabs only, with the permission granted; the event form's reminders
// field (presets, custom minutes, at most five) is saved and read back, offers "Allow
// notifications" only while the browser has not been asked, and axe finds nothing serious in it.
import { test } from 'tap'
import type { BrowserContext, Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { RECORD_NOTIFICATIONS, shownNotifications as shown, signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'

const ZONE = 'Europe/Berlin'

async function openTab (context: BrowserContext, url: string): Promise<Page> {
  const page = await context.newPage()
  await page.goto(url)
  return page
}

test('reminders as browser notifications, and the form\'s reminders field', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('reminders'), password: 'reminders password 1' }
  const account = await signUp(app, { ...user, name: 'Rita Reminder' })
  // Starts 75 s from now with a reminder a minute before: due about 15 s after the tabs open.
  const start = new Date(Math.ceil((Date.now() + 75_000) / 1000) * 1000)
  const answer = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: { ...account.headers, 'content-type': 'application/json' },
    payload: JSON.stringify({ title: 'Call the dentist', location: 'Phone', startDate: start.toISOString().replace(/\.\d{3}Z$/, 'Z'), endDate: new Date(start.getTime() + 15 * 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z'), timeZone: ZONE, reminders: [{ minutes: 1 }] })
  })
  t.equal(answer.statusCode, 204, answer.body)

  const browser = await launchBrowser(t)
  const context = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
  await context.grantPermissions(['notifications'], { origin: stack.webUrl })
  await context.addInitScript(RECORD_NOTIFICATIONS)
  const page = await openTab(context, `${stack.webUrl}/day?auth=login`)
  const errors = collectErrors(page)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
  const second = await openTab(context, `${stack.webUrl}/day`)
  await second.getByRole('banner').getByText(user.email, { exact: true }).waitFor()

  await t.test('the reminder is shown at its time, by one of the two tabs', async (t) => {
    const due = start.getTime() - 60_000
    t.ok(Date.now() < due, 'both tabs open before the reminder\'s time')
    t.same([...await shown(page), ...await shown(second)], [], 'nothing before its time')
    const deadline = due + 20_000
    while (Date.now() < deadline && (await shown(page)).length + (await shown(second)).length === 0) await page.waitForTimeout(250)
    const all = [...await shown(page), ...await shown(second)]
    t.equal(all.length, 1, 'one notification')
    t.ok(Date.now() >= due - 1000, 'not before its time')
    const time = new Intl.DateTimeFormat('en-GB', { timeZone: ZONE, hour: '2-digit', minute: '2-digit', hour12: false }).format(start)
    t.match(all[0], { title: 'Call the dentist', body: new RegExp(`^In 1 (minute|minutes), at ${time} · Phone$`) })
    await page.waitForTimeout(3000)
    t.equal((await shown(page)).length + (await shown(second)).length, 1, 'and no second one from the other tab')
    // The other tab's copy of local storage learns of the record a moment after it is written: the
    // showing tab keeps its claim while the reminder is due, so the other cannot take it meanwhile.
    const held = await second.evaluate<string[]>('navigator.locks.query().then((state) => state.held.map((lock) => lock.name))')
    t.ok(held.some((name) => name.startsWith('calendar-reminder:')), 'the claim on the reminder is still held')
  })

  await t.test('the form sets reminders: presets, custom minutes, at most five; saved and read back', async (t) => {
    await second.close()
    await page.getByRole('button', { name: 'New event' }).click()
    const dialog = page.getByRole('dialog')
    await dialog.getByLabel('Title').fill('Team lunch')
    const reminders = dialog.getByRole('group', { name: 'Reminders' })
    await reminders.getByText('No reminders.').waitFor()
    await reminders.getByRole('button', { name: 'Add reminder' }).click()
    t.equal(await reminders.getByLabel('Reminder 1', { exact: true }).inputValue(), '5', 'the first preset')
    await reminders.getByLabel('Reminder 1', { exact: true }).selectOption('60')
    await reminders.getByRole('button', { name: 'Add reminder' }).click()
    await reminders.getByLabel('Reminder 2', { exact: true }).selectOption('custom')
    await reminders.getByLabel('Minutes before, reminder 2').fill('45')
    t.equal(await reminders.getByRole('button', { name: 'Allow notifications' }).count(), 0, 'granted already: nothing to ask')
    t.same(await seriousViolations(page), [], 'axe: the form with its reminders')
    for (let count = 2; count < 5; count++) await reminders.getByRole('button', { name: 'Add reminder' }).click()
    t.equal(await reminders.getByRole('button', { name: 'Add reminder' }).count(), 0, 'no sixth')
    for (const index of [5, 4, 3]) await reminders.getByRole('button', { name: `Remove reminder ${index}` }).click()
    await dialog.getByRole('button', { name: 'Save' }).click()
    let saved: Array<{ minutes: number }> | undefined
    for (let tries = 0; tries < 40 && saved === undefined; tries++) {
      const read = await app.inject({ method: 'GET', url: `/api/events/search?q=${encodeURIComponent('team lunch')}`, headers: account.headers })
      saved = read.json<{ events: Array<{ reminders?: Array<{ minutes: number }> }> }>().events[0]?.reminders
      if (saved === undefined) await page.waitForTimeout(250)
    }
    t.same(saved, [{ minutes: 45 }, { minutes: 60 }], 'saved, nearest the start first')
  })

  await t.test('permission is offered from a click only, while the browser has not been asked', async (t) => {
    const fresh = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
    const other = await openTab(fresh, `${stack.webUrl}/day`)
    t.equal(await other.evaluate('Notification.permission'), 'default', 'not asked on load')
    await other.getByRole('button', { name: 'New event' }).click()
    const reminders = other.getByRole('dialog').getByRole('group', { name: 'Reminders' })
    t.equal(await reminders.getByRole('button', { name: 'Allow notifications' }).count(), 0, 'no reminder, no offer')
    await reminders.getByRole('button', { name: 'Add reminder' }).click()
    await reminders.getByRole('button', { name: 'Allow notifications' }).waitFor()
    t.same(await seriousViolations(other), [], 'axe: the form with the offer')
  })

  // The session check before signing in answers 401, as in every signed-out start.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
