// In Chromium against the whole system, what a long-time Google Calendar user expects of the new
// event dialog, of a change the server refused, and of a phone: a weekly repeat on the weekday of
// the start as it was moved, an end that keeps the event's length as the start moves, the reason a
// change was not saved in words on the page, and a week on a 390 px phone whose titles are never
// broken inside a word, whose "Sign out" is on screen, with one h1, and whose top bar takes two
// rows with the rest of its controls one press of More options away, which is marked, and says so,
// while the phone is offline.
import { test } from 'tap'
import type { ObjectId } from 'bson'
import type { Locator } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { EVENTUALLY_MS, createEventThroughUi, eventBlock, signInThroughUi } from './ui.js'
import { signUp, uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

const ZONE = 'Europe/Berlin'

/** Seen whole in the window, and a press at its middle reaches it (nothing scrolled or laid over it). */
async function onScreen (control: Locator): Promise<boolean> {
  if (!await control.isVisible()) return false
  // The root project has no DOM library: the page's globals are reached through the element.
  return await control.evaluate((element) => {
    const rect = element.getBoundingClientRect()
    const { innerWidth, innerHeight } = element.ownerDocument.defaultView ?? { innerWidth: 0, innerHeight: 0 }
    const inView = rect.left >= 0 && rect.right <= innerWidth && rect.top >= 0 && rect.bottom <= innerHeight
    const hit = element.ownerDocument.elementFromPoint(rect.left + rect.width / 2, rect.top + rect.height / 2)
    return inView && hit !== null && element.contains(hit)
  })
}
const SATURDAY = '2026-11-28'

test('the event dialog, a refused change and a phone, as a Google Calendar user expects them', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('everyday'), password: 'everyday password 1' }
  const account = await signUp(app, { ...user, name: 'Eve Everyday' })
  const events = app.mongo.db.collection<{ _id: ObjectId, title: string, startDate: string, endDate: string, recurrence?: { rule?: string[] } }>('events')
  const stored = async (filter: Record<string, unknown>) => await waitFor(async () => await events.countDocuments(filter) === 1, EVENTUALLY_MS)
  const answer = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: { ...account.headers, 'content-type': 'application/json' },
    payload: JSON.stringify([{ title: 'Standup', startDate: '2026-03-04T09:00:00+01:00', endDate: '2026-03-04T09:30:00+01:00', timeZone: ZONE }])
  })
  t.equal(answer.statusCode, 204, 'the phone\'s week has an event')

  const browser = await launchBrowser(t)
  const context = await newContext(browser, { timezoneId: ZONE })
  const page = await context.newPage()
  const errors = collectErrors(page)
  await page.setViewportSize({ width: 1440, height: 900 })
  await page.goto(`${stack.webUrl}/day?date=${SATURDAY}&auth=login`)
  await signInThroughUi(page, user)
  await page.getByRole('banner').getByText(user.email, { exact: true }).waitFor()

  await t.test('a new weekly repeat is on the weekday of the start as it was changed', async (t) => {
    await page.getByRole('button', { name: 'New event' }).click()
    const dialog = page.getByRole('dialog', { name: 'New event' })
    await dialog.getByLabel('Title').fill('Choir')
    t.equal(await dialog.getByLabel('Start date').inputValue(), SATURDAY, 'opened on the Saturday shown')
    await dialog.getByLabel('Start date').fill('2026-12-01')
    await dialog.getByLabel('Repeat').selectOption('WEEKLY')
    t.same([await dialog.getByLabel('Tuesday').isChecked(), await dialog.getByLabel('Saturday').isChecked()], [true, false], 'Tuesday is ticked, Saturday no longer')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await dialog.waitFor({ state: 'hidden' })
    t.ok(await stored({ title: 'Choir', startDate: '2026-12-01T09:00:00+01:00', 'recurrence.rule': ['RRULE:FREQ=WEEKLY;BYDAY=TU'] }), 'a series from Tuesday 1 December, on Tuesdays')
    await page.goto(`${stack.webUrl}/day?date=2026-12-01`)
    await eventBlock(page, 'Choir').waitFor()
    t.pass('drawn on 1 December')

    // Days the person ticks stay as they are when the start moves afterwards.
    await page.getByRole('button', { name: 'New event' }).click()
    await dialog.getByLabel('Repeat').selectOption('WEEKLY')
    await dialog.getByLabel('Thursday').check()
    await dialog.getByLabel('Start date').fill('2026-12-02')
    t.same([await dialog.getByLabel('Tuesday').isChecked(), await dialog.getByLabel('Wednesday').isChecked(), await dialog.getByLabel('Thursday').isChecked()], [true, false, true], 'ticked days are the person\'s')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
  })

  await t.test('the end keeps the event\'s length as the start moves', async (t) => {
    await page.goto(`${stack.webUrl}/day?date=${SATURDAY}`)
    await page.getByRole('button', { name: 'New event' }).click()
    const dialog = page.getByRole('dialog', { name: 'New event' })
    await dialog.getByLabel('Title').fill('Long lunch')
    await dialog.getByLabel('End time').fill('11:30')
    await dialog.getByLabel('Start time').fill('12:00')
    t.same([await dialog.getByLabel('End date').inputValue(), await dialog.getByLabel('End time').inputValue()], [SATURDAY, '14:30'], 'a later start moves the end: two and a half hours still')
    await dialog.getByLabel('Start date').fill('2026-11-29')
    t.same([await dialog.getByLabel('End date').inputValue(), await dialog.getByLabel('End time').inputValue()], ['2026-11-29', '14:30'], 'the next day moves the end to the next day')
    await dialog.getByLabel('Start time').fill('23:00')
    t.same([await dialog.getByLabel('End date').inputValue(), await dialog.getByLabel('End time').inputValue()], ['2026-11-30', '01:30'], 'across midnight')
    await dialog.getByLabel('End time').fill('02:00')
    t.equal(await dialog.getByLabel('Start time').inputValue(), '23:00', 'the end alone changes the length, not the start')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await dialog.waitFor({ state: 'hidden' })
    t.ok(await stored({ title: 'Long lunch', startDate: '2026-11-29T23:00:00+01:00', endDate: '2026-11-30T02:00:00+01:00' }), 'saved with no complaint about the end')
  })

  await t.test('a refused change says why in a sentence, on the page, for a keyboard and a screen reader', async (t) => {
    const cors = { 'access-control-allow-origin': stack.webUrl, 'access-control-allow-credentials': 'true', 'content-type': 'application/json' }
    await page.route('**/api/event**', async (route) => {
      if (route.request().method() !== 'POST') return await route.fallback()
      await route.fulfill({ status: 409, headers: cors, body: JSON.stringify({ statusCode: 409, code: 'EVENT_ID_TAKEN', error: 'Conflict', message: 'Event id 6a1b2c3d4e5f60718293a4b5 is already in use' }) })
    })
    await page.goto(`${stack.webUrl}/day?date=${SATURDAY}`)
    await createEventThroughUi(page, { title: 'Dentist', day: SATURDAY, start: '15:00', end: '16:00' })
    const mark = page.getByRole('group', { name: 'Not saved: Dentist' })
    await mark.waitFor()
    const reason = mark.locator('.write-mark-reason')
    t.ok(await reason.isVisible(), 'the reason is shown, not only in a tooltip')
    const box = await reason.boundingBox()
    t.ok(box !== null && box.width > 40 && box.height > 8, 'the reason takes room on the page (not visually hidden)')
    const text = await reason.textContent() ?? ''
    t.notMatch(text, /Event id|already in use|409|EVENT_ID_TAKEN/, `written for a person: "${text}"`)
    t.match(text, /at the same time/, 'it says what happened')
    const retry = mark.getByRole('button', { name: 'Retry' })
    const describedBy = await retry.getAttribute('aria-describedby')
    t.ok(describedBy !== null && describedBy !== '', 'Retry is described by the reason')
    t.equal(await page.locator(`[id="${describedBy ?? ''}"]`).textContent(), text, 'a screen reader reads the reason on reaching Retry by keyboard')
    t.equal(await mark.getAttribute('title'), null, 'no tooltip standing in for the text')
    await page.unroute('**/api/event**')
    await retry.click()
    t.ok(await stored({ title: 'Dentist' }), 'Retry stores it')
  })

  await t.test('a 390 px phone: whole words in week titles, Sign out on screen, one h1', async (t) => {
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${stack.webUrl}/week?date=2026-03-04`)
    const title = eventBlock(page, 'Standup').locator('.event-title')
    await title.waitFor()
    // The root project has no DOM library: the page's globals are reached through the element.
    const lines = await title.evaluate((element) => {
      const range = element.ownerDocument.createRange()
      range.selectNodeContents(element)
      const tops = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)))
      return { lines: tops.size, cut: element.scrollWidth > element.clientWidth + 1, textOverflow: element.ownerDocument.defaultView?.getComputedStyle(element).textOverflow }
    })
    t.equal(lines.lines, 1, '"Standup" is on one line, not broken inside the word')
    t.ok(!lines.cut || lines.textOverflow === 'ellipsis', 'cut, it ends with an ellipsis')

    t.ok(await onScreen(page.getByRole('button', { name: 'Sign out' })), 'Sign out is on screen, nothing scrolled over it')
    t.equal(await page.getByRole('heading', { level: 1 }).count(), 1, 'one h1 for the page')
    t.equal(await page.locator('h1').count(), 1, 'and only one in the document')

    await page.setViewportSize({ width: 1440, height: 900 })
    t.ok(await page.getByRole('heading', { level: 1 }).isVisible(), 'the h1 is seen on a wide screen')
  })

  await t.test('a 390 px phone: the top bar takes two rows, and every control is on screen or one press away', async (t) => {
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${stack.webUrl}/week?date=2026-03-04`)
    await eventBlock(page, 'Standup').waitFor()
    const header = page.getByRole('banner')
    // Rows as the eye groups them: a control below the bottom of the row so far starts the next one.
    const rows = async () => await header.evaluate((bar) => {
      const boxes = [...bar.querySelectorAll('a[href], button, input, select')]
        .map((control) => control.getBoundingClientRect())
        .filter((box) => box.width > 0 && box.height > 0)
        .sort((a, b) => a.top - b.top)
      let count = 0
      let bottom = -Infinity
      for (const box of boxes) {
        if (box.top >= bottom - 1) count++
        bottom = box.top >= bottom - 1 ? box.bottom : Math.max(bottom, box.bottom)
      }
      return count
    })
    t.equal(await rows(), 2, 'the controls take two rows')
    // Two rows of buttons (34 px each at most), the gap between them and the bar's padding and border.
    const height = (await header.boundingBox())?.height ?? Infinity
    t.ok(height <= 90, `the top bar takes ${Math.round(height)} px of 844`)

    const controls = [
      header.getByRole('button', { name: 'Today', exact: true }),
      header.getByRole('button', { name: 'Previous week', exact: true }),
      header.getByRole('button', { name: 'Next week', exact: true }),
      ...['Day', '4 days', 'Week', 'Month', 'Agenda'].map((name) => header.getByRole('navigation', { name: 'View' }).getByRole('link', { name, exact: true })),
      header.getByRole('button', { name: 'Search', exact: true }),
      header.getByRole('button', { name: 'New event', exact: true }),
      header.getByRole('button', { name: 'Sign out', exact: true })
    ]
    for (const control of controls) {
      t.ok(await onScreen(control), `${await control.evaluate((element) => element.getAttribute('aria-label') ?? element.textContent)} is on screen, nothing over it`)
    }

    // What does not fit is behind one button, which says whether it is open.
    const refresh = header.getByRole('button', { name: 'Refresh events', exact: true })
    const quickAdd = header.getByRole('textbox', { name: 'Quick add' })
    const more = header.getByRole('button', { name: 'More options', exact: true })
    t.notOk(await refresh.isVisible(), 'Refresh is folded away')
    t.equal(await more.getAttribute('aria-expanded'), 'false', 'More options says it is closed')
    t.ok(await onScreen(more), 'More options is on screen')
    await more.click()
    t.equal(await more.getAttribute('aria-expanded'), 'true', 'and open once pressed')
    t.ok(await onScreen(refresh), 'Refresh is on screen after one press')
    t.ok(await onScreen(quickAdd), 'so is the quick add field')
    await quickAdd.focus()
    await page.keyboard.press('Escape')
    t.notOk(await quickAdd.isVisible(), 'Escape folds them away again')
    t.equal(await page.evaluate('document.activeElement.getAttribute("aria-label")'), 'More options', 'and gives the focus back to More options')
    t.equal(await rows(), 2, 'two rows again')

    await page.setViewportSize({ width: 1440, height: 900 })
    t.notOk(await more.isVisible(), 'a wide screen has no More options')
    t.ok(await onScreen(refresh) && await onScreen(quickAdd), 'Refresh and quick add are in its top bar')
  })

  await t.test('a 390 px phone offline: More options carries a mark and says "offline" until the connection returns', async (t) => {
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${stack.webUrl}/week?date=2026-03-04`)
    await eventBlock(page, 'Standup').waitFor()
    const header = page.getByRole('banner')
    const more = header.getByRole('button', { name: 'More options', exact: true })
    const mark = header.locator('.toolbar-more .toolbar-signal')
    // Folded away, the status line is in the page but not seen.
    await header.locator('.status', { hasText: 'Up to date' }).waitFor({ state: 'attached' })
    t.notOk(await mark.isVisible(), 'up to date: no mark on More options')

    await context.setOffline(true)
    const offline = header.getByRole('button', { name: 'More options, offline', exact: true })
    await offline.waitFor()
    t.equal(await offline.getAttribute('aria-expanded'), 'false', 'the status line is still folded away')
    t.ok(await onScreen(offline), 'More options is on screen')
    t.ok(await mark.isVisible(), 'and carries a mark')
    const marked = await mark.evaluate((dot) => {
      const box = dot.getBoundingClientRect()
      const button = dot.closest('button')?.getBoundingClientRect()
      const background = dot.ownerDocument.defaultView?.getComputedStyle(dot).backgroundColor
      return { inside: button !== undefined && box.left >= button.left && box.right <= button.right && box.top >= button.top && box.bottom <= button.bottom, size: Math.min(box.width, box.height), background }
    })
    t.ok(marked.inside && marked.size >= 6, `a dot of ${Math.round(marked.size)} px on the button`)
    t.not(marked.background, 'rgba(0, 0, 0, 0)', 'in a colour')
    const height = (await header.boundingBox())?.height ?? Infinity
    t.ok(height <= 90, `the top bar still takes ${Math.round(height)} px of 844`)
    const line = header.getByRole('status').filter({ hasText: 'Offline: changes are kept until the connection returns' })
    t.equal(await line.count(), 1, 'folded away, the status line is still there for a screen reader')
    t.notOk(await onScreen(line), 'but not seen')
    await offline.click()
    t.ok(await onScreen(line), 'one press shows the whole status line')
    await offline.click()

    await context.setOffline(false)
    await more.waitFor()
    t.notOk(await mark.isVisible(), 'back online: the mark is gone')
    t.equal(await more.getAttribute('aria-label'), 'More options', 'and the button is More options again')

    await page.setViewportSize({ width: 1440, height: 900 })
  })

  // The session library's first look for a session, signed out, answers 401; the routed 409 is the
  // test's, and so is a read the page tried while the phone subtest had taken the network away.
  t.same(errors.filter((error) => !/status of (401|409)|ERR_INTERNET_DISCONNECTED/.test(error)), [], 'no errors in the page')
})
