// In Chromium against the whole system: the Preferences dialog (reached from the keyboard, axe
// clean) changes every view and is kept with the account. A browser in en-US starts the week on
// Sunday with a 12-hour clock; chosen, the week starts on Monday with 14:00; de-DE names the days
// in German; a second zone (Asia/Kolkata) is a second column of hours; working hours are shaded on
// working days. A colour chosen for a calendar draws its events, after a reload and in a second
// browser of the account; another tab of this browser follows at once. Signed out the choice is
// kept in browser storage. With Google's two calendars, an Outlook one and a CalDAV one listed
// (the list answered by a routed GET /api/calendars, as the providers' colours come: two alike,
// Outlook's blue equal to the own calendar's), every calendar has its own default colour. The
// dialog's code is not loaded with the page: it is fetched when the dialog is first opened, and
// the service worker has it, so the dialog opens offline too.
import { test } from 'tap'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { eventBlock, signInThroughUi, EVENTUALLY_MS } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'
import { waitUntil } from '../processes.js'

const ZONE = 'Europe/Berlin'
const DAY = '2026-03-04' // a Wednesday
const HOUR_PX = 48

async function context (browser: Browser, locale: string) {
  // bypassCSP: axe is put into the page as an inline script, which the page's policy refuses.
  return await browser.newContext({ timezoneId: ZONE, locale, viewport: { width: 1280, height: 900 }, bypassCSP: true })
}

async function weekdays (page: Page): Promise<string[]> {
  return await page.locator('.grid-head .weekday').allTextContents()
}

async function hourLabels (page: Page, selector = '.hour-label:not(.hour-second)'): Promise<string[]> {
  return await page.locator(selector).allTextContents()
}

async function edgeColor (page: Page, title: string): Promise<string> {
  return await eventBlock(page, title).first().evaluate((body) => body.ownerDocument.defaultView?.getComputedStyle(body.parentElement as typeof body).borderLeftColor ?? '')
}

/** Opens Preferences from the keyboard alone: focus walks to the button, Enter opens it. */
async function openPreferences (page: Page) {
  const button = page.getByRole('button', { name: 'Preferences' })
  await button.focus()
  await page.keyboard.press('Enter')
  const dialog = page.getByRole('dialog', { name: 'Preferences' })
  await dialog.waitFor()
  return dialog
}

async function save (page: Page) {
  const dialog = page.getByRole('dialog', { name: 'Preferences' })
  await dialog.getByRole('button', { name: 'Save' }).click()
  await dialog.waitFor({ state: 'detached' })
}

test('preferences: week, clock, language, zones, working hours and colours, kept with the account', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('prefs'), password: 'prefs password 1' }
  const account = await signUp(app, { ...user, name: 'Pat Prefs' })
  const post = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: { ...account.headers, 'content-type': 'application/json' },
    payload: JSON.stringify([{ title: 'Planning', startDate: `${DAY}T14:00:00+01:00`, endDate: `${DAY}T15:00:00+01:00`, timeZone: ZONE }])
  })
  t.equal(post.statusCode, 204)
  const stored = async () => (await app.inject({ method: 'GET', url: '/api/user/preferences', headers: account.headers })).json() as Record<string, unknown>

  const browser = await launchBrowser(t)
  const page = await (await context(browser, 'en-US')).newPage()
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/week?date=${DAY}&auth=login`)
  await signInThroughUi(page, user)
  await eventBlock(page, 'Planning').waitFor({ timeout: EVENTUALLY_MS })

  await t.test('nothing chosen: the browser\'s own (en-US: Sunday first, 12-hour)', async (t) => {
    t.equal((await weekdays(page))[0], 'Sun')
    t.ok((await hourLabels(page)).includes('2 PM'), 'hours as 2 PM')
    t.match(await eventBlock(page, 'Planning').textContent(), /2:00\sPM/)
  })

  await t.test('the dialog from the keyboard, without serious axe findings', async (t) => {
    const dialog = await openPreferences(page)
    t.same(await seriousViolations(page), [], 'axe: nothing serious with the dialog open')
    t.equal(await dialog.getByLabel('Week starts on').inputValue(), 'sunday', 'the form shows what is in use')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
    t.ok(await page.getByRole('button', { name: 'Preferences' }).evaluate((button) => button === button.ownerDocument.activeElement), 'focus back on the button')
  })

  await t.test('week from Monday, 24-hour clock', async (t) => {
    const dialog = await openPreferences(page)
    await dialog.getByLabel('Week starts on').selectOption('monday')
    await dialog.getByLabel('Time format').selectOption('24h')
    await save(page)
    await waitUntil(async () => (await weekdays(page))[0] === 'Mon', 'the week from Monday', EVENTUALLY_MS)
    t.same(await weekdays(page), ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'])
    t.ok((await hourLabels(page)).includes('14:00'), 'hours as 14:00')
    t.match(await eventBlock(page, 'Planning').textContent(), /14:00/)
    await page.goto(`${stack.webUrl}/month?date=${DAY}`)
    t.equal(await page.locator('.month-weekday').first().textContent(), 'Mon', 'the month too')
    await page.goto(`${stack.webUrl}/week?date=${DAY}`)
    await waitUntil(async () => (await stored()).weekStart === 'monday', 'stored with the account', EVENTUALLY_MS)
    t.match(await stored(), { weekStart: 'monday', timeFormat: '24h', locale: 'en-US', timeZone: ZONE })
  })

  await t.test('German day names, a second zone, working hours shaded', async (t) => {
    const dialog = await openPreferences(page)
    await dialog.getByLabel('Language of dates').selectOption('de-DE')
    await dialog.getByLabel('Second time zone (day and week views)').selectOption('Asia/Kolkata')
    await dialog.getByLabel('Shade working hours in the day and week views').check()
    t.same(await seriousViolations(page), [], 'axe: nothing serious with every part of the form shown')
    await save(page)
    await waitUntil(async () => (await weekdays(page))[0] === 'Mo', 'German day names', EVENTUALLY_MS)
    t.same(await weekdays(page), ['Mo', 'Di', 'Mi', 'Do', 'Fr', 'Sa', 'So'])
    t.match(await page.getByRole('heading', { level: 2 }).first().textContent(), /März/, 'the title\'s month in German')
    t.match(await page.locator('.zone-second').textContent(), /GMT\+5:30/, 'the second zone named in the corner')
    const second = await hourLabels(page, '.hour-second')
    t.ok(second.includes('18:30'), 'Berlin\'s 14:00 beside Kolkata\'s 18:30')
    const shaded = page.locator('.working-hours')
    t.equal(await shaded.count(), 5, 'working hours on the five working days')
    t.same(await shaded.first().evaluate((band) => [band.style.top, band.style.height]), [`${9 * HOUR_PX}px`, `${8 * HOUR_PX}px`], '09:00 to 17:00')
    t.same(await seriousViolations(page), [], 'axe: nothing serious in the week with both zones')
    await page.goto(`${stack.webUrl}/day?date=${DAY}`)
    t.equal(await page.locator('.working-hours').count(), 1, 'the day view shades its working day')
    t.ok((await hourLabels(page, '.hour-second')).includes('18:30'), 'and shows the second zone')
    await page.goto(`${stack.webUrl}/week?date=${DAY}`)
    await waitUntil(async () => (await stored()).locale === 'de-DE', 'stored with the account', EVENTUALLY_MS)
    t.match(await stored(), { locale: 'de-DE', secondTimeZone: 'Asia/Kolkata', workingHours: { start: '09:00', end: '17:00', days: [1, 2, 3, 4, 5] } })
  })

  await t.test('a new event takes the default length and the default reminder', async (t) => {
    const dialog = await openPreferences(page)
    await dialog.getByLabel('Default length').selectOption('30')
    await dialog.getByLabel('Default reminder').selectOption('10')
    await save(page)
    await waitUntil(async () => (await stored()).defaultReminderMinutes === 10, 'stored with the account', EVENTUALLY_MS)
    await page.getByRole('button', { name: 'New event' }).click()
    const form = page.getByRole('dialog')
    const reminders = form.getByRole('group', { name: 'Reminders' })
    t.equal(await reminders.getByLabel('Reminder 1', { exact: true }).inputValue(), '10', 'the default reminder is there to keep or change')
    t.equal(await reminders.getByLabel('Reminder 2', { exact: true }).count(), 0, 'and only it')
    const [startTime, endTime] = await Promise.all([form.getByLabel('Start time').inputValue(), form.getByLabel('End time').inputValue()])
    const minutesOf = (time: string): number => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5))
    t.equal(minutesOf(endTime) - minutesOf(startTime), 30, `half an hour long (${startTime} to ${endTime})`)
    await page.keyboard.press('Escape')
    await form.waitFor({ state: 'hidden' })
  })

  await t.test('a calendar\'s own reminder for new events, over the default reminder', async (t) => {
    const dialog = await openPreferences(page)
    const byCalendar = dialog.getByRole('group', { name: 'New events\' reminder, by calendar' })
    t.equal(await byCalendar.getByLabel('Reminder in My calendar').inputValue(), '', 'each calendar starts with the default reminder')
    await byCalendar.getByLabel('Reminder in My calendar').selectOption('60')
    await save(page)
    await waitUntil(async () => (await stored()).calendarReminderMinutes !== undefined, 'stored with the account', EVENTUALLY_MS)
    t.same((await stored()).calendarReminderMinutes, { own: 60 }, 'by calendar key')
    t.equal((await stored()).defaultReminderMinutes, 10, 'the default reminder stays')
    await page.getByRole('button', { name: 'New event' }).click()
    const form = page.getByRole('dialog')
    const reminders = form.getByRole('group', { name: 'Reminders' })
    t.equal(await reminders.getByLabel('Reminder 1', { exact: true }).inputValue(), '60', 'a new event in My calendar starts with its reminder, an hour before')
    t.equal(await reminders.getByLabel('Reminder 2', { exact: true }).count(), 0, 'and only it')
    await page.keyboard.press('Escape')
    await form.waitFor({ state: 'hidden' })

    // With a Google calendar listed: a new event moved to it takes its reminder, until the person sets one.
    const family = { connectionId: 'c'.repeat(24), provider: 'google', calendarId: 'family@group.calendar.google.com', name: 'Family', color: '#8e24aa', primary: false, defaultReminders: [] }
    await page.route(`${stack.apiUrl}/calendars`, async (route) => { await route.fulfill({ json: { calendars: [family] } }) })
    await page.reload()
    await page.getByRole('complementary', { name: 'Calendars' }).getByLabel('Family').waitFor({ timeout: EVENTUALLY_MS })
    const again = await openPreferences(page)
    const rows = again.getByRole('group', { name: 'New events\' reminder, by calendar' })
    await rows.getByLabel(/^Reminder in Family \(Google/).selectOption('1440')
    await save(page)
    await waitUntil(async () => ((await stored()).calendarReminderMinutes as Record<string, number> | undefined)?.[family.calendarId] === 1440, 'stored', EVENTUALLY_MS)
    await page.getByRole('button', { name: 'New event' }).click()
    const reminder = form.getByRole('group', { name: 'Reminders' }).getByLabel('Reminder 1', { exact: true })
    t.equal(await reminder.inputValue(), '60', 'My calendar\'s reminder')
    await form.getByLabel('Calendar', { exact: true }).selectOption({ label: 'Family' })
    t.equal(await reminder.inputValue(), '1440', 'moved to Family, the new event takes Family\'s reminder, a day before')
    await reminder.selectOption('5')
    await form.getByLabel('Calendar', { exact: true }).selectOption({ label: 'My calendar' })
    t.equal(await reminder.inputValue(), '5', 'a reminder the person set stays when the calendar changes')
    await page.keyboard.press('Escape')
    await form.waitFor({ state: 'hidden' })

    const cleared = await openPreferences(page)
    await cleared.getByRole('group', { name: 'New events\' reminder, by calendar' }).getByLabel('Reminder in My calendar').selectOption('')
    await cleared.getByRole('group', { name: 'New events\' reminder, by calendar' }).getByLabel(/^Reminder in Family \(Google/).selectOption('')
    await save(page)
    await waitUntil(async () => (await stored()).calendarReminderMinutes === undefined, 'the calendars\' own reminders cleared', EVENTUALLY_MS)
    await page.unroute(`${stack.apiUrl}/calendars`)
    await page.reload()
  })

  await t.test('a chosen colour draws the events, after a reload, in another tab and on another browser', async (t) => {
    await eventBlock(page, 'Planning').waitFor()
    const before = await edgeColor(page, 'Planning')
    t.equal(before, 'rgb(29, 78, 216)', 'the own calendar\'s default: the first palette colour')
    const tab = await page.context().newPage()
    await tab.goto(`${stack.webUrl}/week?date=${DAY}`)
    await eventBlock(tab, 'Planning').waitFor({ timeout: EVENTUALLY_MS })

    const dialog = await openPreferences(page)
    await dialog.getByLabel('My calendar', { exact: true }).selectOption({ label: 'Grape' })
    await save(page)
    await waitUntil(async () => await edgeColor(page, 'Planning') === 'rgb(142, 36, 170)', 'drawn in Grape', EVENTUALLY_MS)
    t.pass('drawn in the chosen colour')
    await waitUntil(async () => await edgeColor(tab, 'Planning') === 'rgb(142, 36, 170)', 'the other tab follows', EVENTUALLY_MS)
    t.pass('the other tab of this browser follows without a reload')
    await tab.close()

    await page.reload()
    await eventBlock(page, 'Planning').waitFor({ timeout: EVENTUALLY_MS })
    t.equal(await edgeColor(page, 'Planning'), 'rgb(142, 36, 170)', 'kept after a reload')
    t.match(await stored(), { calendarColors: { own: '#8e24aa' } })

    const elsewhere = await (await context(browser, 'en-US')).newPage()
    await elsewhere.goto(`${stack.webUrl}/week?date=${DAY}&auth=login`)
    await signInThroughUi(elsewhere, user)
    await eventBlock(elsewhere, 'Planning').waitFor({ timeout: EVENTUALLY_MS })
    await waitUntil(async () => await edgeColor(elsewhere, 'Planning') === 'rgb(142, 36, 170)', 'the colour on the other browser', EVENTUALLY_MS)
    t.same(await weekdays(elsewhere), ['Mo', 'Di', 'Mi', 'Do', 'Fr', 'Sa', 'So'], 'and the account\'s week and language')
    await elsewhere.context().close()
  })

  await t.test('changed on another device: read again when the tab comes back', async (t) => {
    const put = await app.inject({ method: 'PUT', url: '/api/user/preferences', headers: account.headers, payload: { ...(await stored()), weekStart: 'saturday', locale: 'en-GB' } })
    t.equal(put.statusCode, 200)
    // Headless Chromium never hides a tab: the event a browser sends on coming back is dispatched here.
    await page.evaluate('document.dispatchEvent(new Event("visibilitychange"))')
    await waitUntil(async () => (await weekdays(page))[0] === 'Sat', 'the week from Saturday', EVENTUALLY_MS)
    t.pass('the week from Saturday, in English')
  })

  await t.test('distinct default colours with Google, Microsoft and CalDAV calendars listed', async (t) => {
    const put = await app.inject({ method: 'PUT', url: '/api/user/preferences', headers: account.headers, payload: {} })
    t.equal(put.statusCode, 200)
    const calendars = [
      { connectionId: 'c'.repeat(24), provider: 'google', calendarId: user.email, name: user.email, color: '#ac725e', primary: true },
      { connectionId: 'c'.repeat(24), provider: 'google', calendarId: 'family@group.calendar.google.com', name: 'Family', color: '#ac725e', primary: false },
      { connectionId: 'd'.repeat(24), provider: 'microsoft', calendarId: 'AAMkOutlook', name: 'Calendar', color: '#1d4ed8', primary: true },
      { connectionId: 'e'.repeat(24), provider: 'caldav', calendarId: 'https://dav.example.com/home/', name: 'Home', color: '#8e8e93', primary: true }
    ]
    await page.route(`${stack.apiUrl}/calendars`, async (route) => { await route.fulfill({ json: { calendars } }) })
    await page.reload()
    const list = page.getByRole('complementary', { name: 'Calendars' })
    await list.getByLabel('Family').waitFor({ timeout: EVENTUALLY_MS })
    const colors = await page.locator('.calendar-item').evaluateAll((items) => items.map((item) => item.ownerDocument.defaultView?.getComputedStyle(item).getPropertyValue('--calendar').trim() ?? ''))
    t.equal(colors.length, 5, 'My calendar and four provider calendars')
    t.equal(new Set(colors).size, 5, `five colours: ${colors.join(' ')}`)
    const dialog = await openPreferences(page)
    t.equal(await dialog.getByLabel(/^Family \(Google/).inputValue(), colors[2], 'the dialog shows each calendar\'s colour')
    t.same(await seriousViolations(page), [], 'axe: nothing serious with five calendars\' colours')
    await page.keyboard.press('Escape')
    await page.unroute(`${stack.apiUrl}/calendars`)
  })

  await t.test('signed out, preferences are kept in this browser', async (t) => {
    const local = await (await context(browser, 'en-US')).newPage()
    await local.goto(`${stack.webUrl}/week?date=${DAY}`)
    await local.locator('.grid-head').waitFor()
    t.equal((await weekdays(local))[0], 'Sun')
    const dialog = await openPreferences(local)
    await dialog.getByLabel('Week starts on').selectOption('monday')
    await save(local)
    await local.reload()
    await local.locator('.grid-head').waitFor()
    t.equal((await weekdays(local))[0], 'Mon', 'after a reload')
    t.match(await local.evaluate('localStorage.getItem("preferences:local")'), /"weekStart":"monday"/)
    await local.context().close()
  })

  await t.test('the dialog\'s code comes when it is opened, and offline from the service worker', async (t) => {
    const fresh = await (await context(browser, 'en-US')).newPage()
    const scripts: string[] = []
    fresh.on('request', (request) => {
      if (request.resourceType() === 'script') scripts.push(new URL(request.url()).pathname)
    })
    await fresh.goto(`${stack.webUrl}/day?date=${DAY}`)
    await fresh.locator('.grid[aria-busy="false"]').waitFor()
    t.ok(scripts.length > 0 && !scripts.some((path) => /PreferencesDialog/.test(path)), `the page loads without it (${scripts.join(', ')})`)
    await fresh.waitForFunction('navigator.serviceWorker.controller !== null')
    await fresh.context().setOffline(true)
    const dialog = await openPreferences(fresh)
    t.ok(scripts.some((path) => /PreferencesDialog/.test(path)), 'fetched on opening')
    t.equal(await dialog.getByLabel('Week starts on').inputValue(), 'sunday', 'and the dialog is there, offline, with the browser\'s own week')
    await fresh.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
    t.equal(await fresh.evaluate('document.activeElement?.textContent'), 'Preferences', 'Escape goes back to the button')
    await fresh.context().close()
  })

  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
