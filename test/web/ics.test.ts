// In Chromium against the whole system: each calendar in the list has "Export .ics", which saves
// the calendar's file (the download holds its events), and "Import .ics", a file picker whose
// file's events appear in the grid, with a sentence saying what was imported; a second import of
// the same file adds nothing. Both are reached with the keyboard alone, and axe finds nothing serious.
import { text as textOf } from 'node:stream/consumers'
import { test } from 'tap'
import ICAL from 'ical.js'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { eventTitles, signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'

const ZONE = 'Europe/Berlin'
const DAY = '2026-12-02'
const FILE = [
  'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Apple Inc.//macOS 15.0//EN',
  'BEGIN:VEVENT', 'UID:web-ics-lunch', 'DTSTAMP:20261101T100000Z', 'DTSTART;TZID=Europe/Berlin:20261202T123000', 'DTEND;TZID=Europe/Berlin:20261202T133000', 'SUMMARY:Lunch from a file', 'END:VEVENT',
  'BEGIN:VEVENT', 'UID:web-ics-review', 'DTSTAMP:20261101T100000Z', 'DTSTART:20261202T150000Z', 'DTEND:20261202T160000Z', 'SUMMARY:Review from a file', 'END:VEVENT',
  'END:VCALENDAR', ''
].join('\r\n')

test('calendar files in the web client', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('web-ics'), password: 'ics password 1' }
  const account = await signUp(app, { ...user, name: 'Ada Files' })
  const made = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: account.headers,
    payload: [
      { title: 'Standup', startDate: `${DAY}T09:00:00+01:00`, endDate: `${DAY}T09:15:00+01:00`, timeZone: ZONE, recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=5'] } },
      { title: 'Dentist', startDate: `${DAY}T11:00:00+01:00`, endDate: `${DAY}T11:30:00+01:00`, timeZone: ZONE }
    ]
  })
  t.equal(made.statusCode, 204, made.body)

  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const context = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
  const page = await context.newPage()
  await page.setViewportSize({ width: 1440, height: 900 })
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/day?date=${DAY}&auth=login`)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
  await page.getByText('Dentist').first().waitFor()

  await t.test('Export .ics saves the calendar\'s file with its events', async (t) => {
    const downloaded = page.waitForEvent('download')
    await page.getByRole('button', { name: 'Export .ics of My calendar' }).click()
    const download = await downloaded
    t.equal(download.suggestedFilename(), 'My calendar.ics')
    // The browser runs apart from the test: the file is read from its stream.
    const text = await textOf(await download.createReadStream())
    const vevents = new ICAL.Component(ICAL.parse(text)).getAllSubcomponents('vevent')
    t.same(vevents.map((vevent) => vevent.getFirstPropertyValue('summary')).sort(), ['Dentist', 'Standup'])
    const standup = vevents.find((vevent) => vevent.getFirstPropertyValue('summary') === 'Standup')
    t.equal(String(standup?.getFirstPropertyValue('rrule')), 'FREQ=DAILY;COUNT=5', 'the series with its rule')
    t.equal(standup?.getFirstProperty('dtstart')?.getParameter('tzid'), ZONE)
  })

  // Named "Import .ics" and described by its calendar's name.
  const importPicker = page.locator('.calendar-item', { hasText: 'My calendar' }).getByLabel('Import .ics')
  await t.test('Import .ics adds the file\'s events, says so, and a second import adds nothing', async (t) => {
    await importPicker.setInputFiles({ name: 'lunch.ics', mimeType: 'text/calendar', buffer: Buffer.from(FILE) })
    const status = page.locator('.calendar-file-status')
    await status.getByText('Imported 2 events into My calendar.').waitFor()
    await page.getByText('Lunch from a file').first().waitFor()
    await page.getByText('Review from a file').first().waitFor()
    t.same((await eventTitles(page)).filter((title) => title.endsWith('from a file')).sort(), ['Lunch from a file', 'Review from a file'], 'the events appear in the grid')
    await importPicker.setInputFiles({ name: 'lunch.ics', mimeType: 'text/calendar', buffer: Buffer.from(FILE) })
    await status.getByText('Imported 0 events into My calendar; 2 events already there.').waitFor()
    t.equal((await eventTitles(page)).filter((title) => title === 'Lunch from a file').length, 1, 'nothing twice')
    await importPicker.setInputFiles({ name: 'notes.ics', mimeType: 'text/calendar', buffer: Buffer.from('just some notes') })
    await status.getByText(/^My calendar: body is not a readable iCalendar file/).waitFor()
    t.pass('a file that is no calendar is named as such')
  })

  await t.test('both are reached and used with the keyboard alone; axe finds nothing serious', async (t) => {
    await page.goto(`${stack.webUrl}/day?date=${DAY}`)
    // Playwright asks Chromium to hand it file choosers only once someone listens, and does not wait
    // for the answer: listening before the Tab presses lets that settle before Space is pressed.
    const chooser = page.waitForEvent('filechooser', { timeout: 120_000 })
    await page.getByText('Dentist').first().waitFor()
    const focused = async () => await page.evaluate('document.activeElement?.closest(".calendar-file") ? (document.activeElement.tagName + " " + document.activeElement.textContent) : ""') as string
    let reached = ''
    for (let presses = 0; presses < 80 && !reached.includes('Export'); presses++) {
      await page.keyboard.press('Tab')
      reached = await focused()
    }
    t.match(reached, /^BUTTON Export \.ics/, 'Tab reaches Export .ics')
    const downloaded = page.waitForEvent('download')
    await page.keyboard.press('Enter')
    t.equal((await downloaded).suggestedFilename(), 'My calendar.ics', 'Enter saves the file')
    await page.keyboard.press('Tab')
    t.match(await focused(), /^INPUT/, 'the next Tab is the file picker of Import .ics')
    t.equal(await page.evaluate('document.getElementById(document.activeElement.getAttribute("aria-describedby")).textContent'), 'My calendar', 'described by its calendar')
    await page.keyboard.press('Space')
    await (await chooser).setFiles({ name: 'lunch.ics', mimeType: 'text/calendar', buffer: Buffer.from(FILE) })
    await page.locator('.calendar-file-status').getByText('Imported 0 events into My calendar; 2 events already there.').waitFor()
    t.pass('Space opens the picker, and the chosen file is imported')
    t.same(await seriousViolations(page), [], 'axe: no serious violations')
    await page.setViewportSize({ width: 390, height: 844 })
    t.same(await seriousViolations(page), [], 'axe on a phone: no serious violations')
  })

  // Before sign-in the session SDK's refresh is refused; the file that is no calendar is a 400 on purpose.
  t.same(errors.filter((error) => !/status of 401/.test(error) && !/status of 400 .*\/api\/events\/import/s.test(error)), [], 'no errors in the page')
})
