// In Chromium against the whole system, one signed-in user: the month view and "+N more" (month,
// and a week of overlapping events), a date that does not exist corrected in the address, drag on
// empty time to create, a quick click that opens an event and moves nothing, each keyboard shortcut, a keyboard move across days keeping focus and
// announced, the repeat form written as RRULE and read back, dark mode, a 390 px wide phone and
// the Save button in an 800 px high window.
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'tap'
import type { ObjectId } from 'bson'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { detailsCard, EVENTUALLY_MS, eventBlock, openEvent, signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'
import type { Page } from 'playwright-core'

/** Opens an occurrence of a series just saved, once the calendar shows it as one. */
async function openSeriesOccurrence (page: Page, title: string): Promise<ReturnType<Page['getByRole']>> {
  const edit = page.getByRole('dialog', { name: 'Edit event' })
  const opened = await waitFor(async () => {
    await openEvent(page, title)
    if (await edit.getByLabel('All events').count() === 1) return true
    await edit.getByRole('button', { name: 'Cancel' }).click()
    return false
  }, EVENTUALLY_MS)
  if (!opened) throw new Error(`${title} never opened as an occurrence of its series`)
  return edit
}

const ZONE = 'Europe/Berlin'
const DAY = '2026-03-04' // a Wednesday

test('month, week and day views, shortcuts, drag, repeat, dark and narrow', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('views'), password: 'views password 1' }
  const account = await signUp(app, { ...user, name: 'Vera Views' })
  const events = app.mongo.db.collection<{ _id: ObjectId, title: string, startDate: string, endDate: string, recurrence?: { rule?: string[] } }>('events')
  const post = async (payload: unknown[]) => {
    const answer = await app.inject({ method: 'POST', url: '/api/event', headers: { ...account.headers, 'content-type': 'application/json' }, payload: JSON.stringify(payload) })
    if (answer.statusCode !== 204) throw new Error(`POST /api/event: ${answer.statusCode} ${answer.body}`)
  }
  const timed = (title: string, day: string, start: string, end: string) => ({ title, startDate: `${day}T${start}:00+01:00`, endDate: `${day}T${end}:00+01:00`, timeZone: ZONE })
  // A busy Wednesday: five events (the month cell shows two and "+3 more"), ten overlapping in one hour.
  await post([
    ...['Breakfast', 'Standup', 'Review', 'Lunch', 'Gym'].map((title, index) => timed(title, DAY, `0${index + 5}:00`, `0${index + 5}:30`)),
    ...Array.from({ length: 10 }, (_, index) => timed(`Clash ${index + 1}`, '2026-03-05', '14:00', '15:00'))
  ])

  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const context = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
  const page = await context.newPage()
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/month?date=${DAY}&auth=login`)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()

  await t.test('month view: a day that overflows shows "+N more", which lists the rest', async (t) => {
    t.match(page.url(), /\/month\?date=2026-03-04$/)
    await page.getByRole('heading', { name: 'March 2026' }).waitFor()
    const day = page.getByRole('region', { name: 'Wednesday, 4 March 2026' })
    await day.getByText('Breakfast').waitFor()
    // As many as the row's height holds (test/web/month.test.ts checks the cells at two sizes).
    const titles = ['Breakfast', 'Standup', 'Review', 'Lunch', 'Gym']
    const shown = await day.locator('.month-event .event-title').allTextContents()
    t.ok(shown.length >= 1 && shown.length < titles.length, `some of the day's events in the cell, the rest behind "+N more" (${shown.length} shown)`)
    t.same(shown, titles.slice(0, shown.length), `the first ${shown.length}, in start order`)
    const more = day.getByRole('button', { name: `${5 - shown.length} more events, Wednesday, 4 March 2026` })
    t.equal(await more.textContent(), `+${5 - shown.length} more`)
    await more.click()
    const list = page.getByRole('dialog', { name: 'Wednesday, 4 March 2026' })
    await list.locator('.event-title').nth(4).waitFor()
    t.same(await list.locator('.event-title').allTextContents(), titles, 'the day\'s whole list')
    t.same(await seriousViolations(page), [], 'axe: nothing serious in the month view with its "+N more" list open')
    await list.getByRole('button', { name: /^Gym/ }).click()
    await detailsCard(page).getByRole('heading', { name: 'Gym' }).waitFor()
    await detailsCard(page).getByRole('button', { name: 'Edit', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Edit event' })
    t.equal(await dialog.getByLabel('Title').inputValue(), 'Gym', 'an event of the list opens in its details, then the event dialog')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    t.equal(await page.locator('.month-week').count(), 6, 'March 2026 spans six weeks, from Monday 23 February to Sunday 5 April')
    await day.getByRole('button', { name: 'Open Wednesday, 4 March 2026' }).click()
    await page.waitForURL(/\/day\?date=2026-03-04$/)
    t.pass('the day\'s number opens the day')
  })

  await t.test('week view: ten events at once are one readable column and "+N more", not ten slivers', async (t) => {
    await page.goto(`${stack.webUrl}/week?date=2026-03-05`)
    await eventBlock(page, 'Clash 1').waitFor()
    t.equal(await page.locator('.event-body', { hasText: 'Clash' }).count(), 1, 'one event beside the "+N more"')
    const more = page.getByRole('button', { name: /^9 more events, from 14:00, Thursday, 5 March 2026$/ })
    t.equal(await more.textContent(), '+9 more')
    const title = await eventBlock(page, 'Clash 1').locator('.event-title').evaluate((element) => ({ shown: element.getBoundingClientRect().width, needed: element.scrollWidth }))
    t.ok(title.shown >= title.needed - 1, `the title is shown whole (${Math.round(title.shown)} px)`)
    await more.click()
    const list = page.getByRole('dialog', { name: /Thursday, 5 March 2026/ })
    // The list draws after the click answers: wait for its ninth title before counting all of them.
    await list.locator('.event-title').nth(8).waitFor()
    t.equal(await list.locator('.event-title').count(), 9)
    await list.getByRole('button', { name: 'Close' }).click()
    t.match(await page.locator('.zone-label').textContent(), /Europe\/Berlin.*GMT\+1/, 'the grid names its time zone')
  })

  await t.test('a date that does not exist is corrected in the address bar, and said so', async (t) => {
    await page.goto(`${stack.webUrl}/month?date=2027-02-30`)
    await page.getByRole('heading', { name: 'February 2027' }).waitFor()
    t.match(page.url(), /\/month\?date=2027-02-28$/)
    await page.getByText('There is no 2027-02-30: showing 28 February 2027 instead.').waitFor()
    await page.goto(`${stack.webUrl}/day?date=someday`)
    await page.getByText('"someday" is not a date: showing today instead.').waitFor()
    t.match(page.url(), /\/day$/, 'an unreadable date leaves the address')
  })

  await t.test('drag on empty time creates the dragged span; a click an hour', async (t) => {
    await page.goto(`${stack.webUrl}/day?date=2026-03-10`)
    const column = page.getByRole('region', { name: 'Tuesday, 10 March 2026' })
    await column.waitFor()
    await page.locator('.grid-scroll').evaluate((element) => { element.scrollTop = 8 * 48 })
    const box = await column.boundingBox()
    if (box === null) throw new Error('no day column')
    // The column's box is where it is drawn, scrolled: its top is midnight.
    const yOf = async (minutes: number) => box.y + minutes * 48 / 60
    await page.mouse.move(box.x + 100, await yOf(10 * 60 + 2))
    await page.mouse.down()
    await page.mouse.move(box.x + 100, await yOf(10 * 60 + 45), { steps: 5 })
    await page.mouse.move(box.x + 100, await yOf(11 * 60 + 28), { steps: 5 })
    await page.mouse.up()
    const dialog = page.getByRole('dialog', { name: 'New event' })
    t.equal(await dialog.getByLabel('Start time').inputValue(), '10:00')
    t.equal(await dialog.getByLabel('End time').inputValue(), '11:30')
    await dialog.getByLabel('Title').fill('Dragged')
    await dialog.getByRole('button', { name: 'Save' }).click()
    t.ok(await waitFor(async () => await events.countDocuments({ title: 'Dragged', startDate: '2026-03-10T10:00:00+01:00', endDate: '2026-03-10T11:30:00+01:00' }) === 1, EVENTUALLY_MS), 'stored with the dragged span')

    await page.mouse.click(box.x + 100, await yOf(15 * 60 + 10))
    t.equal(await dialog.getByLabel('Start time').inputValue(), '15:00')
    t.equal(await dialog.getByLabel('End time').inputValue(), '16:00')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
  })

  await t.test('a quick click on an event (press and release in one moment) opens it; the next click elsewhere moves nothing', async (t) => {
    await page.goto(`${stack.webUrl}/day?date=${DAY}`)
    const standup = eventBlock(page, 'Standup')
    await standup.waitFor()
    // Press, release and click before the page draws again, as a fast tap or a quick mouse does.
    await standup.evaluate((block) => {
      const { x, y } = block.getBoundingClientRect()
      const at = { bubbles: true, button: 0, clientX: x + 5, clientY: y + 5, pointerId: 1, isPrimary: true }
      // The page's own constructors (the tests' TypeScript has no DOM library).
      const page = block.ownerDocument.defaultView as unknown as { PointerEvent: new (type: string, init: object) => Event }
      block.dispatchEvent(new page.PointerEvent('pointerdown', at))
      block.dispatchEvent(new page.PointerEvent('pointerup', at))
      ;(block as unknown as { click: () => void }).click()
    })
    const dialog = page.getByRole('dialog', { name: 'Standup' })
    await dialog.waitFor()
    // A person moves the mouse to Close, far from the block, and clicks: a drag left armed would
    // take the move as its own and the release as its end.
    const cancel = dialog.getByRole('button', { name: 'Close' })
    const target = await cancel.boundingBox()
    if (target === null) throw new Error('no Close button')
    await page.mouse.move(target.x + 5, target.y + 5, { steps: 8 })
    await new Promise((resolve) => setTimeout(resolve, 300))
    await cancel.click()
    await dialog.waitFor({ state: 'hidden' })
    await page.mouse.click(5, 5)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    t.equal(await events.countDocuments({ title: 'Standup', startDate: `${DAY}T06:00:00+01:00`, endDate: `${DAY}T06:30:00+01:00` }), 1, 'still at 06:00')
  })

  await t.test('each shortcut, and none while typing', async (t) => {
    await page.goto(`${stack.webUrl}/day?date=2026-03-10`)
    await page.getByRole('heading', { name: 'Tuesday, 10 March 2026' }).waitFor()
    const at = async (pattern: RegExp) => { await page.waitForURL(pattern) }
    await page.keyboard.press('j')
    await at(/\/day\?date=2026-03-11$/)
    await page.keyboard.press('k')
    await page.keyboard.press('k')
    await at(/\/day\?date=2026-03-09$/)
    await page.keyboard.press('ArrowRight')
    await at(/\/day\?date=2026-03-10$/)
    await page.keyboard.press('ArrowLeft')
    await at(/\/day\?date=2026-03-09$/)
    await page.keyboard.press('w')
    await at(/\/week\?date=2026-03-09$/)
    await page.getByRole('heading', { name: /9 Mar – 15 Mar 2026/ }).waitFor()
    await page.keyboard.press('m')
    await at(/\/month\?date=2026-03-09$/)
    await page.keyboard.press('n')
    await at(/\/month\?date=2026-04-09$/)
    await page.keyboard.press('d')
    await at(/\/day\?date=2026-04-09$/)
    await page.keyboard.press('t')
    await at(/\/day$/)
    t.pass('j, k, arrows, n, w, m, d and t move through dates and views')

    await page.keyboard.press('?')
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' })
    t.match(await help.textContent(), /Create an event.*Go to today.*Month view/s)
    t.same(await seriousViolations(page), [], 'axe: nothing serious with the list of shortcuts open')
    await page.keyboard.press('j')
    t.match(page.url(), /\/day$/, 'nothing fires inside a dialog')
    await page.keyboard.press('Escape')
    await help.waitFor({ state: 'hidden' })

    await page.keyboard.press('c')
    const dialog = page.getByRole('dialog', { name: 'New event' })
    await dialog.getByLabel('Title').pressSequentially('wmdtjk c?')
    t.equal(await dialog.getByLabel('Title').inputValue(), 'wmdtjk c?', 'typed letters stay in the field')
    t.match(page.url(), /\/day$/)
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'hidden' })
  })

  await t.test('Alt+Right moves an event to the next day: the view follows, focus stays on it, the move is announced', async (t) => {
    await page.goto(`${stack.webUrl}/day?date=${DAY}`)
    const gym = eventBlock(page, 'Gym')
    await gym.focus()
    await page.keyboard.press('Alt+ArrowRight')
    await page.waitForURL(/\/day\?date=2026-03-05$/)
    await page.getByText('Gym moved to Thursday, 5 March 2026').waitFor({ state: 'attached' })
    // The block is drawn once the new day's read answers (on a loaded machine, after seconds);
    // the focus moves to it as it is drawn.
    await page.getByRole('region', { name: 'Thursday, 5 March 2026' }).locator('.event-body', { hasText: 'Gym' }).waitFor()
    await waitFor(async () => await page.evaluate('document.activeElement?.textContent?.includes("Gym") === true') === true, EVENTUALLY_MS)
    t.match(await page.evaluate('document.activeElement?.textContent ?? ""'), /^Gym/, 'the moved event keeps focus on its new day')
    t.ok(await waitFor(async () => await events.countDocuments({ title: 'Gym', startDate: '2026-03-05T09:00:00+01:00' }) === 1, EVENTUALLY_MS), 'stored a day later')
  })

  await t.test('repeat: every 2 weeks on Monday and Wednesday, 5 times; read back into the same form', async (t) => {
    await page.setViewportSize({ width: 1280, height: 800 })
    await page.goto(`${stack.webUrl}/day?date=2026-03-16`)
    await page.getByRole('button', { name: 'New event' }).click()
    const dialog = page.getByRole('dialog', { name: 'New event' })
    await dialog.getByLabel('Title').fill('Piano')
    await dialog.getByLabel('Start date').fill('2026-03-16')
    await dialog.getByLabel('Start time').fill('17:00')
    await dialog.getByLabel('End date').fill('2026-03-16')
    await dialog.getByLabel('End time').fill('18:00')
    await dialog.getByLabel('Repeat').selectOption('WEEKLY')
    await dialog.getByLabel('Every').fill('2')
    t.ok(await dialog.getByLabel('Monday').isChecked(), 'the start\'s weekday is chosen at first')
    await dialog.getByLabel('Wednesday').check()
    await dialog.getByLabel('After').check()
    await dialog.getByLabel('Number of times').fill('5')
    const save = dialog.getByRole('button', { name: 'Save' })
    const box = await save.boundingBox()
    t.ok(box !== null && box.y + box.height <= 800, 'Save is in view in an 800 px high window with the repeat fields open')
    await save.click()
    t.ok(await waitFor(async () => await events.countDocuments({ title: 'Piano', 'recurrence.rule': ['RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;COUNT=5'] }) === 1, EVENTUALLY_MS), 'stored as one RRULE line')

    // Until the calendar has read the saved series back, the block is the new event as it was
    // sent, not yet an occurrence of a series: opened then, it offers no "All events".
    const edit = await openSeriesOccurrence(page, 'Piano')
    await edit.getByLabel('All events').check()
    await waitFor(async () => await edit.getByLabel('Every').inputValue() === '2', EVENTUALLY_MS)
    t.equal(await edit.getByLabel('Repeat').inputValue(), 'WEEKLY')
    t.equal(await edit.getByLabel('Every').inputValue(), '2')
    t.same([await edit.getByLabel('Monday').isChecked(), await edit.getByLabel('Tuesday').isChecked(), await edit.getByLabel('Wednesday').isChecked()], [true, false, true])
    t.ok(await edit.getByLabel('After').isChecked())
    t.equal(await edit.getByLabel('Number of times').inputValue(), '5')
    // Ending on a date instead: the last day in the user's zone, as UTC.
    await edit.getByLabel('On', { exact: true }).check()
    await edit.getByLabel('Last date').fill('2026-04-30')
    await edit.getByRole('button', { name: 'Save' }).click()
    t.ok(await waitFor(async () => await events.countDocuments({ title: 'Piano', 'recurrence.rule': ['RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;UNTIL=20260430T215959Z'] }) === 1, EVENTUALLY_MS), 'UNTIL is the end of 30 April in Berlin')
    await page.goto(`${stack.webUrl}/day?date=2026-04-29`)
    const again = await openEvent(page, 'Piano')
    await again.getByLabel('All events').check()
    await waitFor(async () => await again.getByLabel('On', { exact: true }).isChecked(), EVENTUALLY_MS)
    t.equal(await again.getByLabel('Last date').inputValue(), '2026-04-30', 'read back as the same day')
    await again.getByRole('button', { name: 'Cancel' }).click()
  })

  await t.test('dark mode and a 390 px phone', async (t) => {
    const shots = await mkdtemp(join(tmpdir(), 'calendar-views-'))
    await page.emulateMedia({ colorScheme: 'dark' })
    await page.setViewportSize({ width: 1280, height: 860 })
    await page.goto(`${stack.webUrl}/week?date=${DAY}`)
    await eventBlock(page, 'Breakfast').waitFor()
    const background = await page.evaluate('getComputedStyle(document.querySelector(".grid")).backgroundColor')
    t.equal(background, 'rgb(22, 28, 36)', 'the grid is dark')
    t.equal(await page.evaluate('getComputedStyle(document.documentElement).colorScheme'), 'light dark')
    t.same(await seriousViolations(page), [], 'axe: nothing serious in the dark week (contrast included)')
    await page.screenshot({ path: join(shots, 'dark.png') })

    await page.emulateMedia({ colorScheme: 'light' })
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${stack.webUrl}/week?date=${DAY}`)
    await eventBlock(page, 'Breakfast').waitFor()
    t.ok(await page.evaluate('document.documentElement.scrollWidth <= 390'), 'nothing sticks out sideways')
    const header = (await page.locator('.topbar').boundingBox())?.height ?? Infinity
    t.ok(header <= 140, `the header takes ${Math.round(header)} px of 844`)
    const title = await eventBlock(page, 'Breakfast').locator('.event-title').evaluate((element) => ({ shown: element.getBoundingClientRect().width, needed: element.scrollWidth, textOverflow: element.ownerDocument.defaultView?.getComputedStyle(element).textOverflow }))
    t.ok(title.shown >= title.needed - 1 || title.textOverflow === 'ellipsis', 'a week title wraps between words, or a word too long is cut with an ellipsis')
    t.same(await seriousViolations(page), [], 'axe: nothing serious at 390 px')
    await page.screenshot({ path: join(shots, 'narrow.png') })
    t.equal(await page.locator('.event-body', { hasText: 'Clash' }).count(), 0, 'overlapping events of a phone\'s week are all in "+N more"')
    await page.getByRole('button', { name: /^10 more events, from 14:00/ }).waitFor()
    await page.goto(`${stack.webUrl}/month?date=${DAY}`)
    await page.getByRole('region', { name: 'Wednesday, 4 March 2026' }).locator('.month-event', { hasText: 'Breakfast' }).waitFor()
    t.ok(await page.evaluate('document.documentElement.scrollWidth <= 390'), 'the month fits too')
    t.comment(`screenshots in ${shots}`)
  })

  // The session library's first look for a session, signed out, answers 401 (as in the neighbouring tests).
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
