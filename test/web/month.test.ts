// In Chromium against the whole system, one signed-in user, at 1440x900 and on a 390x844 phone:
// month cells keep their events inside them (one line, cut, the whole title in the name), a day
// with more than fits says "+N more" and opens the day's list, and an all-day event over several
// days is one bar across them (broken at the week's edge in the month), in lanes so that two
// overlapping ones never cover each other, in the month and in the week's all-day row.
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'tap'
import type { Locator, Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'

const ZONE = 'Europe/Berlin'
const LONG_TITLE = 'Quarterly planning with the whole product and engineering leadership group'

interface Box { x: number, y: number, width: number, height: number }

async function boxOf (locator: Locator): Promise<Box> {
  const box = await locator.boundingBox()
  if (box === null) throw new Error('not drawn')
  return box
}

/** `inner` lies within `outer` (a pixel of rounding either way). */
function inside (inner: Box, outer: Box): boolean {
  return inner.x >= outer.x - 1 && inner.y >= outer.y - 1 &&
    inner.x + inner.width <= outer.x + outer.width + 1 && inner.y + inner.height <= outer.y + outer.height + 1
}

function overlap (a: Box, b: Box): boolean {
  return a.x < b.x + b.width - 1 && b.x < a.x + a.width - 1 && a.y < b.y + b.height - 1 && b.y < a.y + a.height - 1
}

function region (page: Page, name: string): Locator {
  return page.getByRole('region', { name, exact: true })
}

/** Every event and "+N more" drawn in a day cell lies inside that cell. */
async function cellsContainTheirEvents (page: Page): Promise<string[]> {
  const strays: string[] = []
  for (const day of await page.locator('.month-day').all()) {
    const cell = await boxOf(day)
    for (const item of await day.locator('.month-event, .more').all()) {
      if (!await item.isVisible()) continue
      if (!inside(await boxOf(item), cell)) strays.push(`${await day.getAttribute('aria-label') ?? '?'}: ${await item.textContent() ?? ''}`)
    }
  }
  return strays
}

test('month cells and multi-day bars, at 1440x900 and on a phone', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('month'), password: 'month password 1' }
  const account = await signUp(app, { ...user, name: 'Mo Month' })
  const timed = (title: string, day: string, start: string, end: string) => ({ title, startDate: `${day}T${start}:00+01:00`, endDate: `${day}T${end}:00+01:00`, timeZone: ZONE })
  const allDay = (title: string, start: string, endExclusive: string) => ({ title, startDate: start, endDate: endExclusive, isAllDay: true, timeZone: ZONE })
  const answer = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: { ...account.headers, 'content-type': 'application/json' },
    payload: JSON.stringify([
      timed(LONG_TITLE, '2026-03-03', '10:00', '11:00'),
      allDay('Team offsite', '2026-03-09', '2026-03-12'), // Monday to Wednesday
      allDay('Conference', '2026-03-10', '2026-03-13'), // Tuesday to Thursday: overlaps the offsite
      allDay('Ski trip', '2026-03-14', '2026-03-18'), // Saturday to Tuesday: over the week's edge
      ...['Breakfast', 'Standup', 'Review', 'Lunch', 'Gym', 'Dinner', 'Late call'].map((title, index) => timed(title, '2026-03-25', `${String(index + 8).padStart(2, '0')}:00`, `${String(index + 8).padStart(2, '0')}:30`))
    ])
  })
  if (answer.statusCode !== 204) throw new Error(`POST /api/event: ${answer.statusCode} ${answer.body}`)

  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const context = await newContext(browser, { timezoneId: ZONE, bypassCSP: true })
  const page = await context.newPage()
  const errors = collectErrors(page)
  await page.setViewportSize({ width: 1440, height: 900 })
  await page.goto(`${stack.webUrl}/month?date=2026-03-10&auth=login`)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()
  const month = page.locator('.month')
  const shots = await mkdtemp(join(tmpdir(), 'calendar-month-'))
  t.comment(`screenshots in ${shots}`)

  await t.test('a long title stays inside its cell: one line, cut, the whole title in its name', async (t) => {
    const event = month.getByRole('button', { name: new RegExp(LONG_TITLE) })
    await event.waitFor()
    const cell = region(page, 'Tuesday, 3 March 2026')
    t.ok(inside(await boxOf(event), await boxOf(cell)), 'the event lies within Tuesday\'s cell')
    t.notOk(overlap(await boxOf(event), await boxOf(region(page, 'Wednesday, 4 March 2026'))), 'nothing of it over Wednesday')
    const title = await event.locator('.event-title').evaluate((element) => {
      // The page's own function (the tests' TypeScript has no DOM library).
      const view = element.ownerDocument.defaultView as unknown as { getComputedStyle: (of: unknown) => { lineHeight: string, textOverflow: string } }
      const style = view.getComputedStyle(element)
      return { shown: element.clientWidth, needed: element.scrollWidth, height: element.getBoundingClientRect().height, lineHeight: parseFloat(style.lineHeight), ellipsis: style.textOverflow }
    })
    t.ok(title.needed > title.shown, `cut (${title.shown} of ${title.needed} px shown)`)
    t.equal(title.ellipsis, 'ellipsis', 'with an ellipsis')
    t.ok(title.height < title.lineHeight * 1.5, 'on one line')
    t.same(await cellsContainTheirEvents(page), [], 'every cell holds its own events')
  })

  await t.test('a Monday-to-Wednesday all-day event is one bar across three days; an overlapping one takes another lane', async (t) => {
    const offsite = month.getByRole('button', { name: /Team offsite/ })
    await offsite.first().waitFor()
    t.equal(await offsite.count(), 1, 'one element, not a chip per day')
    const bar = await boxOf(offsite)
    const monday = await boxOf(region(page, 'Monday, 9 March 2026'))
    const wednesday = await boxOf(region(page, 'Wednesday, 11 March 2026'))
    t.ok(bar.x >= monday.x - 1 && bar.x < monday.x + monday.width / 2, 'starts in Monday\'s column')
    t.ok(bar.x + bar.width <= wednesday.x + wednesday.width + 1 && bar.x + bar.width > wednesday.x + wednesday.width / 2, 'ends in Wednesday\'s column')
    t.ok(bar.y >= monday.y && bar.y + bar.height <= monday.y + monday.height + 1, 'within the week\'s row')
    const conference = month.getByRole('button', { name: /Conference/ })
    t.equal(await conference.count(), 1)
    t.notOk(overlap(bar, await boxOf(conference)), 'the overlapping Conference does not cover it')

    const ski = month.getByRole('button', { name: /Ski trip/ })
    t.equal(await ski.count(), 2, 'over the week\'s edge: one bar in each week')
    const [first, second] = [await boxOf(ski.nth(0)), await boxOf(ski.nth(1))]
    const saturday = await boxOf(region(page, 'Saturday, 14 March 2026'))
    const sunday = await boxOf(region(page, 'Sunday, 15 March 2026'))
    const nextMonday = await boxOf(region(page, 'Monday, 16 March 2026'))
    const nextTuesday = await boxOf(region(page, 'Tuesday, 17 March 2026'))
    t.ok(Math.abs(first.x - saturday.x) < saturday.width / 2 && Math.abs(first.x + first.width - (sunday.x + sunday.width)) < sunday.width / 2, 'Saturday and Sunday in the first week')
    t.ok(Math.abs(second.x - nextMonday.x) < nextMonday.width / 2 && Math.abs(second.x + second.width - (nextTuesday.x + nextTuesday.width)) < nextTuesday.width / 2, 'Monday and Tuesday on the next row')
    t.ok(second.y > first.y + first.height, 'on the next row')
  })

  await t.test('a day with more than fits says "+N more", which opens the day\'s list', async (t) => {
    const day = region(page, 'Wednesday, 25 March 2026')
    const more = day.getByRole('button', { name: /^\d+ more events, Wednesday, 25 March 2026$/ })
    await more.waitFor()
    const hidden = Number(/(\d+) more/.exec(await more.getAttribute('aria-label') ?? '')?.[1])
    const shown = await day.locator('.month-event').count()
    t.equal(shown + hidden, 7, `${shown} shown and "+${hidden} more"`)
    t.match(await more.textContent(), new RegExp(`^\\+${hidden}`))
    t.ok(inside(await boxOf(more), await boxOf(day)), '"+N more" inside the cell')
    await more.click()
    const list = page.getByRole('dialog', { name: 'Wednesday, 25 March 2026' })
    await list.locator('.event-title').nth(6).waitFor()
    t.same(await list.locator('.event-title').allTextContents(), ['Breakfast', 'Standup', 'Review', 'Lunch', 'Gym', 'Dinner', 'Late call'], 'the whole day, in start order')
    t.same(await seriousViolations(page), [], 'axe: nothing serious with the day\'s list open')
    await list.getByRole('button', { name: 'Close' }).click()
    await list.waitFor({ state: 'hidden' })
  })

  await t.test('axe finds nothing serious in the month at 1440x900', async (t) => {
    t.same(await seriousViolations(page), [])
    await page.screenshot({ path: join(shots, 'month-1440.png') })
  })

  await t.test('the week\'s all-day row: one bar per event across its days, in lanes', async (t) => {
    await page.goto(`${stack.webUrl}/week?date=2026-03-10`)
    const row = page.locator('.all-day-row')
    const offsite = row.getByRole('button', { name: /Team offsite/ })
    await offsite.first().waitFor()
    t.equal(await offsite.count(), 1, 'one element, not a chip per day')
    const heads = page.locator('.grid-head .day-head')
    const [monday, wednesday] = [await boxOf(heads.nth(0)), await boxOf(heads.nth(2))]
    const bar = await boxOf(offsite)
    t.ok(bar.x >= monday.x - 1 && bar.x < monday.x + monday.width / 2, 'starts in Monday\'s column')
    t.ok(bar.x + bar.width <= wednesday.x + wednesday.width + 1 && bar.x + bar.width > wednesday.x + wednesday.width / 2, 'ends in Wednesday\'s column')
    const conference = row.getByRole('button', { name: /Conference/ })
    t.equal(await conference.count(), 1)
    t.notOk(overlap(bar, await boxOf(conference)), 'the overlapping Conference does not cover it')
    const ski = row.getByRole('button', { name: /Ski trip/ })
    t.equal(await ski.count(), 1, 'the Ski trip\'s part in this week: one bar')
    const saturday = await boxOf(heads.nth(5))
    t.ok(Math.abs((await boxOf(ski)).x - saturday.x) < saturday.width / 2, 'from Saturday')
    t.same(await seriousViolations(page), [], 'axe: nothing serious in the week')
    await page.screenshot({ path: join(shots, 'week-1440.png') })
  })

  await t.test('a 390x844 phone: readable cells, nothing sideways, nothing serious for axe', async (t) => {
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${stack.webUrl}/month?date=2026-03-10`)
    const event = month.getByRole('button', { name: new RegExp(LONG_TITLE) })
    await event.waitFor()
    t.ok(await page.evaluate('document.documentElement.scrollWidth <= 390'), 'nothing sticks out sideways')
    t.ok(inside(await boxOf(event), await boxOf(region(page, 'Tuesday, 3 March 2026'))), 'the long title stays in its cell')
    t.same(await cellsContainTheirEvents(page), [], 'every cell holds its own events')
    t.equal(await month.getByRole('button', { name: /Team offsite/ }).count(), 1, 'still one bar')
    t.notOk(overlap(await boxOf(month.getByRole('button', { name: /Team offsite/ })), await boxOf(month.getByRole('button', { name: /Conference/ }))), 'still apart')
    await region(page, 'Wednesday, 25 March 2026').getByRole('button', { name: /more events, Wednesday, 25 March 2026$/ }).waitFor()
    t.same(await seriousViolations(page), [], 'axe: nothing serious at 390 px')
    await page.screenshot({ path: join(shots, 'month-390.png') })
  })

  // The session library's first look for a session, signed out, answers 401 (as in the neighbouring tests).
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
