// In Chromium against the whole system: the agenda (/agenda, key a) lists a signed-in user's events
// by day in order with a heading per day and no empty days, loads the next 30 days with "Show more"
// and on scrolling to its end, says so when nothing is coming, and opens an event with the mouse
// and from the keyboard alone; signed out it lists the browser's own events. The 4-day view
// (/4days, key x) shows four day columns from the shown date and moves by four. Both are in the
// view switcher, and axe finds nothing serious in either at 1440x900 and on a 390x844 phone.
import { test } from 'tap'
import { DateTime } from 'luxon'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'

const ZONE = 'Europe/Berlin'
const FIRST = '2026-03-02' // a Monday

/** The agenda's day headings as a screen reader names them, in page order. */
async function dayHeadings (page: Page): Promise<Array<string | null>> {
  return await page.locator('.agenda-date').evaluateAll((headings) => headings.map((heading) => heading.getAttribute('aria-label')))
}

/**
 * An event's name in the list: its parts said with a pause between (the browser puts a space on
 * each side of a comma hidden between the laid-out parts).
 */
function named (...parts: string[]): RegExp {
  return new RegExp(`^${parts.map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('\\s*,\\s*')}$`)
}

/** The titles listed under the day heading named `name`. */
async function titlesOf (page: Page, name: string): Promise<string[]> {
  return await page.getByRole('region', { name, exact: true }).locator('.agenda-title').allTextContents()
}

test('agenda and 4-day views', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('agenda'), password: 'agenda password 1' }
  const account = await signUp(app, { ...user, name: 'Ada Agenda' })
  const post = async (payload: unknown[]) => {
    const answer = await app.inject({ method: 'POST', url: '/api/event', headers: { ...account.headers, 'content-type': 'application/json' }, payload: JSON.stringify(payload) })
    if (answer.statusCode !== 204) throw new Error(`POST /api/event: ${answer.statusCode} ${answer.body}`)
  }
  const timed = (title: string, day: string, start: string, end: string, extra: Record<string, unknown> = {}) => ({ title, startDate: `${day}T${start}:00+01:00`, endDate: `${day}T${end}:00+01:00`, timeZone: ZONE, ...extra })
  const today = DateTime.now().setZone(ZONE).startOf('day')
  await post([
    timed('Standup', FIRST, '09:00', '09:15', { location: 'Room 4' }),
    timed('Review', '2026-03-04', '14:00', '15:00'),
    timed('Breakfast', '2026-03-04', '08:00', '08:30'),
    { title: 'Conference day', startDate: '2026-03-04', endDate: '2026-03-05', isAllDay: true, timeZone: ZONE },
    timed('Dentist', '2026-03-10', '11:00', '11:30', { location: 'Main Street 1' }),
    // The second page (1 to 30 April): one event, then 25 days of walks, enough to scroll.
    { title: 'Far away', startDate: '2026-04-08T10:00:00+02:00', endDate: '2026-04-08T11:00:00+02:00', timeZone: ZONE },
    { title: 'Walk', startDate: '2026-04-10T07:00:00+02:00', endDate: '2026-04-10T07:30:00+02:00', timeZone: ZONE, recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=21'] } },
    // The third page (1 to 30 May), reached by scrolling to the end.
    { title: 'Much later', startDate: '2026-05-20T18:00:00+02:00', endDate: '2026-05-20T19:00:00+02:00', timeZone: ZONE },
    { title: 'Today thing', startDate: today.toISODate(), endDate: today.plus({ days: 1 }).toISODate(), isAllDay: true, timeZone: ZONE }
  ])

  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const context = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
  const page = await context.newPage()
  await page.setViewportSize({ width: 1440, height: 900 })
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/agenda?date=${FIRST}&auth=login`)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()

  await t.test('the agenda lists the days with events in order, each under its date, empty days left out', async (t) => {
    t.match(page.url(), /\/agenda\?date=2026-03-02$/)
    await page.getByRole('heading', { name: 'From 2 Mar 2026' }).waitFor()
    await page.getByText('Dentist').waitFor()
    t.same(await dayHeadings(page), ['Monday, 2 March 2026', 'Wednesday, 4 March 2026', 'Tuesday, 10 March 2026'], 'three days, in order; the empty days between are not listed')
    t.same(await titlesOf(page, 'Wednesday, 4 March 2026'), ['Conference day', 'Breakfast', 'Review'], 'all day first, then by start')
    const review = page.getByRole('button', { name: named('14:00 – 15:00', 'Review') })
    t.equal(await review.count(), 1, 'an event is a button named by its time and title')
    t.equal(await page.getByRole('button', { name: named('All day', 'Conference day') }).count(), 1, 'an all-day event says so')
    t.equal(await page.getByRole('button', { name: named('9:00 – 9:15', 'Standup', 'Room 4') }).count(), 1, 'with its location')
    const dot = await page.locator('.agenda-event', { hasText: 'Standup' }).locator('.agenda-dot').evaluate((element) => element.ownerDocument.defaultView?.getComputedStyle(element).backgroundColor)
    t.notMatch(dot, /rgba\(0, 0, 0, 0\)|transparent/, `the calendar's colour (${dot ?? ''})`)
    t.equal(await page.getByText('Far away').count(), 0, 'beyond the first 30 days: not read yet')
    t.equal(await page.getByText('Showing events until 31 Mar 2026.').count(), 1)
  })

  await t.test('"Show more" reads the next 30 days; scrolling to the end the 30 after', async (t) => {
    await page.getByRole('button', { name: 'Show more' }).click()
    await page.getByText('Far away').waitFor()
    t.same(await titlesOf(page, 'Wednesday, 8 April 2026'), ['Far away'])
    t.equal(await page.getByRole('region', { name: /April 2026/ }).count(), 22, 'the day of Far away and the 21 of the walks')
    await page.getByText('Showing events until 30 Apr 2026.').waitFor()
    t.equal(await page.getByText('Much later').count(), 0)
    await page.locator('.agenda').evaluate((element) => { element.scrollTop = element.scrollHeight })
    await page.getByText('Much later').waitFor()
    t.same(await titlesOf(page, 'Wednesday, 20 May 2026'), ['Much later'], 'the third page, read on reaching the end')
    await page.getByText('Showing events until 30 May 2026.').waitFor()
  })

  await t.test('an event opens with the mouse, and with the keyboard alone', async (t) => {
    await page.getByRole('button', { name: named('14:00 – 15:00', 'Review') }).click()
    const card = page.getByRole('dialog', { name: 'Review', exact: true })
    await card.waitFor()
    t.match(await card.locator('.details-when').textContent(), /Wednesday, 4 March 2026, 14:00 – 15:00/, 'a click shows the event\'s details, as in the grid')
    await card.getByRole('button', { name: 'Edit', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Edit event' })
    await dialog.waitFor()
    t.equal(await dialog.getByLabel('Title').inputValue(), 'Review', 'and Edit the event dialog')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'hidden' })

    await page.goto(`${stack.webUrl}/agenda?date=${FIRST}`)
    await page.getByText('Dentist').waitFor()
    let reached = false
    for (let presses = 0; presses < 60 && !reached; presses++) {
      await page.keyboard.press('Tab')
      reached = await page.evaluate('document.activeElement?.textContent?.includes("Dentist") === true') as boolean
    }
    t.ok(reached, 'Tab reaches the event')
    await page.keyboard.press('Enter')
    await page.getByRole('dialog', { name: 'Dentist', exact: true }).waitFor()
    t.pass('Enter shows its details')
    await page.keyboard.press('Enter')
    await dialog.waitFor()
    t.equal(await dialog.getByLabel('Title').inputValue(), 'Dentist', 'Enter again (on Edit) opens it')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
    t.ok(await page.evaluate('document.activeElement?.textContent?.includes("Dentist") === true'), 'the focus comes back to the event')
  })

  await t.test('previous and next move by the 30 days shown; today is marked', async (t) => {
    await page.keyboard.press('n')
    await page.waitForURL(/\/agenda\?date=2026-04-01$/)
    await page.getByRole('heading', { name: 'From 1 Apr 2026' }).waitFor()
    await page.getByText('Far away').waitFor()
    t.equal(await page.getByText('Dentist').count(), 0)
    await page.getByRole('button', { name: 'Previous 30 days' }).click()
    await page.waitForURL(/\/agenda\?date=2026-03-02$/)
    await page.getByText('Dentist').waitFor()
    await page.keyboard.press('t')
    await page.waitForURL(/\/agenda$/)
    const heading = page.getByRole('heading', { name: `Today, ${today.setLocale('en-GB').toLocaleString(DateTime.DATE_HUGE)}` })
    await heading.waitFor()
    t.same(await titlesOf(page, `Today, ${today.setLocale('en-GB').toLocaleString(DateTime.DATE_HUGE)}`), ['Today thing'])
  })

  await t.test('nothing coming: said, with a New event button', async (t) => {
    await page.goto(`${stack.webUrl}/agenda?date=2031-01-01`)
    await page.getByText('No events in the next 30 days').waitFor()
    await page.getByRole('main').getByRole('button', { name: 'New event' }).click()
    const dialog = page.getByRole('dialog', { name: 'New event' })
    await dialog.waitFor()
    t.equal(await dialog.getByLabel('Start date').inputValue(), '2031-01-01', 'on the day shown')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
  })

  await t.test('the 4-day view: four day columns from the shown date, moving by four', async (t) => {
    await page.goto(`${stack.webUrl}/agenda?date=${FIRST}`)
    await page.getByRole('navigation', { name: 'View' }).getByRole('link', { name: '4 days' }).click()
    await page.waitForURL(/\/4days\?date=2026-03-02$/)
    await page.getByRole('heading', { name: '2 Mar – 5 Mar 2026' }).waitFor()
    t.equal(await page.locator('.day-column').count(), 4, 'four day columns')
    t.same(await page.locator('.day-column').evaluateAll((columns) => columns.map((column) => column.getAttribute('aria-label'))), ['Monday, 2 March 2026', 'Tuesday, 3 March 2026', 'Wednesday, 4 March 2026', 'Thursday, 5 March 2026'])
    await page.locator('.event-body', { hasText: 'Review' }).waitFor()
    await page.keyboard.press('n')
    await page.waitForURL(/\/4days\?date=2026-03-06$/)
    await page.getByRole('heading', { name: '6 Mar – 9 Mar 2026' }).waitFor()
    await page.getByRole('button', { name: 'Next 4 days' }).click()
    await page.waitForURL(/\/4days\?date=2026-03-10$/)
    await page.locator('.event-body', { hasText: 'Dentist' }).waitFor()
    t.equal(await page.locator('.day-column').count(), 4)
    await page.keyboard.press('k')
    await page.waitForURL(/\/4days\?date=2026-03-06$/)
    t.pass('previous moves back by four')
  })

  await t.test('both views from their keys and the switcher; the shortcuts list names them', async (t) => {
    await page.keyboard.press('a')
    await page.waitForURL(/\/agenda\?date=2026-03-06$/)
    await page.getByRole('heading', { name: 'From 6 Mar 2026' }).waitFor()
    t.equal(await page.getByRole('navigation', { name: 'View' }).getByRole('link', { name: 'Agenda' }).getAttribute('aria-current'), 'page')
    await page.keyboard.press('x')
    await page.waitForURL(/\/4days\?date=2026-03-06$/)
    await page.getByRole('navigation', { name: 'View' }).getByRole('link', { name: 'Agenda' }).click()
    await page.waitForURL(/\/agenda\?date=2026-03-06$/)
    await page.keyboard.press('?')
    const shortcuts = page.getByRole('dialog', { name: 'Keyboard shortcuts' })
    await shortcuts.waitFor()
    t.match(await shortcuts.textContent(), /x4-day view/)
    t.match(await shortcuts.textContent(), /aAgenda/)
    await shortcuts.getByRole('button', { name: 'Close' }).click()
  })

  await t.test('axe: nothing serious in either view at 1440x900 and at 390x844', async (t) => {
    for (const size of [{ width: 1440, height: 900 }, { width: 390, height: 844 }]) {
      await page.setViewportSize(size)
      await page.goto(`${stack.webUrl}/agenda?date=${FIRST}`)
      await page.getByText('Dentist').waitFor()
      t.same(await seriousViolations(page), [], `agenda at ${size.width}x${size.height}`)
      const overflow = await page.locator('.agenda').evaluate((element) => element.scrollWidth - element.clientWidth)
      t.ok(overflow <= 0, `the agenda fits its width at ${size.width} px`)
      await page.goto(`${stack.webUrl}/4days?date=${FIRST}`)
      await page.locator('.event-body', { hasText: 'Review' }).waitFor()
      t.same(await seriousViolations(page), [], `4 days at ${size.width}x${size.height}`)
    }
  })

  await t.test('signed out: the browser\'s own events in the agenda, a new one listed', async (t) => {
    const outContext = await newContext(browser, { timezoneId: ZONE })
    const out = await outContext.newPage()
    const outErrors = collectErrors(out)
    await out.goto(`${stack.webUrl}/agenda`)
    const todayName = `Today, ${today.setLocale('en-GB').toLocaleString(DateTime.DATE_HUGE)}`
    await out.getByRole('heading', { name: todayName }).waitFor()
    t.ok((await titlesOf(out, todayName)).includes('Lunch with Sam'), 'the demo events of today')
    const day = today.plus({ days: 5 })
    await out.getByRole('banner').getByRole('button', { name: 'New event' }).click()
    const dialog = out.getByRole('dialog', { name: 'New event' })
    await dialog.getByLabel('Title').fill('Picnic')
    await dialog.getByLabel('Start date').fill(day.toISODate() as string)
    await dialog.getByLabel('Start time').fill('12:00')
    await dialog.getByLabel('End date').fill(day.toISODate() as string)
    await dialog.getByLabel('End time').fill('14:00')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await dialog.waitFor({ state: 'hidden' })
    const name = day.setLocale('en-GB').toLocaleString(DateTime.DATE_HUGE)
    await out.getByRole('region', { name, exact: true }).getByText('Picnic').waitFor()
    t.ok((await titlesOf(out, name)).includes('Picnic'), 'listed under its day')
    t.same(outErrors.filter((error) => !/status of 401/.test(error)), [])
    await outContext.close()
  })

  // The session library's first look for a session, signed out, answers 401.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
