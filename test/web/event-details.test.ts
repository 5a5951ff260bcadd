// In Chromium against the whole system: a click on an event shows its details card before any form
// (title, when, where, the description with its web addresses as links and hostile text as text,
// the calendar, the repeat rule in words); Edit opens the form in the same dialog, a double click
// opens the form directly, Enter on a focused event shows the card and Escape closes it with the
// focus back on the event; Duplicate opens New event filled from it; Delete removes a single event
// at once and asks which occurrences for a series, as the form does. axe finds nothing serious.
import { test } from 'tap'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { detailsCard, EVENTUALLY_MS, eventBlock, signInThroughUi } from './ui.js'
import { seriousViolations } from './axe.js'
import { signUp, uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

const ZONE = 'Europe/Berlin'
const HOSTILE = 'javascript:alert(1) <img src=x onerror="window.hacked=1"> <script>window.hacked=2</script>'

async function focusedText (page: Page): Promise<string> {
  return await page.evaluate('document.activeElement?.textContent ?? ""') as string
}

test('an event\'s details before its form', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const user = { email: uniqueEmail('details'), password: 'details password 1' }
  const account = await signUp(app, { ...user, name: 'Dee Tails' })
  const answer = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: { ...account.headers, 'content-type': 'application/json' },
    payload: JSON.stringify([
      {
        title: 'Planning',
        startDate: '2026-03-02T09:00:00+01:00',
        endDate: '2026-03-02T10:00:00+01:00',
        timeZone: ZONE,
        location: 'Room 4',
        description: `Agenda: https://example.com/agenda?x=1.\n${HOSTILE}`
      },
      { title: 'Lunch', startDate: '2026-03-04T12:00:00+01:00', endDate: '2026-03-04T13:00:00+01:00', timeZone: ZONE },
      { title: 'Yoga', startDate: '2026-03-03T18:00:00+01:00', endDate: '2026-03-03T19:00:00+01:00', timeZone: ZONE, recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=4'] } }
    ])
  })
  t.equal(answer.statusCode, 204, 'the events are made through the API')
  const events = app.mongo.db.collection<{ title: string }>('events')

  const browser = await launchBrowser(t)
  // axe-core is put into the page as a script: the page's Content-Security-Policy would refuse it.
  const page = await (await newContext(browser, { timezoneId: ZONE, bypassCSP: true })).newPage()
  await page.setViewportSize({ width: 1440, height: 900 })
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/week?date=2026-03-02&auth=login`)
  await signInThroughUi(page, user)
  await eventBlock(page, 'Planning').waitFor({ timeout: EVENTUALLY_MS })
  const card = detailsCard(page)
  const form = page.getByRole('dialog', { name: 'Edit event' })

  await t.test('a click shows the details: when, where, the description with its link, the calendar', async (t) => {
    await eventBlock(page, 'Planning').click()
    await page.getByRole('dialog', { name: 'Planning', exact: true }).waitFor()
    t.equal(await form.count(), 0, 'no form yet')
    t.equal(await card.locator('.details-when').textContent(), 'Monday, 2 March 2026, 09:00 – 10:00')
    t.equal(await card.locator('.details-location').textContent(), 'Room 4')
    t.equal(await card.locator('.details-calendar').textContent(), 'My calendar')
    t.equal(await card.locator('.details-repeat').count(), 0, 'a single event says nothing of repeating')
    const links = card.locator('.details-description a')
    t.equal(await links.count(), 1, 'one link: the https address, not the javascript: text')
    t.equal(await links.getAttribute('href'), 'https://example.com/agenda?x=1', 'the address without the sentence\'s full stop')
    t.equal(await links.getAttribute('target'), '_blank')
    t.equal(await links.getAttribute('rel'), 'noopener noreferrer')
    t.match(await card.locator('.details-description').textContent(), HOSTILE, 'the markup is shown as the text it is')
    t.equal(await card.locator('.details-description img, .details-description script').count(), 0, 'and never made into elements')
    t.equal(await page.evaluate('window.hacked ?? null'), null, 'nothing of it ran')
    t.same(await seriousViolations(page), [], 'axe: nothing serious with the card open')

    await card.getByRole('button', { name: 'Edit', exact: true }).click()
    await form.waitFor()
    t.equal(await form.getByLabel('Title').inputValue(), 'Planning', 'Edit opens the form of that event')
    t.equal(await page.evaluate('document.activeElement?.id'), 'event-title-input', 'focus in the form\'s title field')
    await form.getByRole('button', { name: 'Cancel' }).click()
    await form.waitFor({ state: 'hidden' })
    t.match(await focusedText(page), /^Planning/, 'focus back on the event')
  })

  await t.test('the keyboard: Enter on a focused event shows the card, Escape closes it', async (t) => {
    await eventBlock(page, 'Planning').focus()
    await page.keyboard.press('Enter')
    await card.waitFor()
    t.equal(await focusedText(page), 'Edit', 'focus on Edit')
    await page.keyboard.press('Tab')
    t.equal(await focusedText(page), 'Duplicate', 'Tab: Duplicate')
    await page.keyboard.press('Escape')
    await card.waitFor({ state: 'hidden' })
    t.match(await focusedText(page), /^Planning/, 'Escape closes it, focus back on the event')
    await page.keyboard.press('Enter')
    await card.waitFor()
    await page.keyboard.press('Enter')
    await form.waitFor()
    t.equal(await form.getByLabel('Title').inputValue(), 'Planning', 'Enter on Edit opens the form')
    await page.keyboard.press('Escape')
    await form.waitFor({ state: 'hidden' })
    t.match(await focusedText(page), /^Planning/, 'Escape on the form: focus back on the event')

    // The dialog's close event comes a task after it closed: a key pressed in between that moved
    // the focus on (an arrow, Tab) is not undone by it.
    await page.keyboard.press('Enter')
    await card.waitFor()
    await page.evaluate(`(() => {
      document.querySelector('dialog[open]').close()
      ;[...document.querySelectorAll('button')].find((button) => button.textContent.trim() === 'Today').focus()
    })()`)
    await card.waitFor({ state: 'hidden' })
    await page.evaluate('new Promise((resolve) => setTimeout(resolve, 100))')
    t.equal(await focusedText(page), 'Today', 'the focus stays where it was moved after the dialog closed')

    // The browser closes it (a close request), and Enter on the event comes before its close event:
    // the card opens again and stays.
    await eventBlock(page, 'Planning').focus()
    await page.keyboard.press('Enter')
    await card.waitFor()
    await page.evaluate(`(async () => {
      document.querySelector('dialog[open]').close()
      ;[...document.querySelectorAll('.event-body')].find((block) => block.textContent.includes('Planning')).focus()
      await Promise.resolve()
      document.activeElement.click()
    })()`)
    await page.evaluate('new Promise((resolve) => setTimeout(resolve, 300))')
    t.ok(await card.isVisible(), 'the card opened again is still open')
    await page.keyboard.press('Escape')
    await card.waitFor({ state: 'hidden' })
  })

  await t.test('a double click opens the form directly', async (t) => {
    await eventBlock(page, 'Planning').dblclick()
    await form.waitFor()
    t.equal(await form.getByLabel('Title').inputValue(), 'Planning')
    // The card would have come after the first click's pause, had it been waiting.
    await new Promise((resolve) => setTimeout(resolve, 500))
    t.equal(await card.count(), 0, 'no card on the way')
    await form.getByRole('button', { name: 'Cancel' }).click()
    await form.waitFor({ state: 'hidden' })
  })

  await t.test('Duplicate opens New event filled from the event; saved, there are two', async (t) => {
    await eventBlock(page, 'Planning').click()
    await card.getByRole('button', { name: 'Duplicate' }).click()
    const create = page.getByRole('dialog', { name: 'New event' })
    await create.waitFor()
    t.equal(await create.getByLabel('Title').inputValue(), 'Planning')
    t.equal(await create.getByLabel('Start date').inputValue(), '2026-03-02')
    t.equal(await create.getByLabel('Start time').inputValue(), '09:00')
    t.equal(await create.getByLabel('End time').inputValue(), '10:00')
    t.equal(await create.getByLabel('Location').inputValue(), 'Room 4')
    t.match(await create.getByLabel('Description').inputValue(), HOSTILE, 'the description, as text in its field')
    await create.getByLabel('Start time').fill('11:00')
    t.equal(await create.getByLabel('End time').inputValue(), '12:00', 'the end follows the start')
    await create.getByRole('button', { name: 'Save' }).click()
    await create.waitFor({ state: 'hidden' })
    await eventBlock(page, 'Planning').nth(1).waitFor()
    t.ok(await waitFor(async () => await events.countDocuments({ title: 'Planning' }) === 2, EVENTUALLY_MS), 'a second event in the account')
    t.ok(await events.countDocuments({ title: 'Planning', startDate: '2026-03-02T11:00:00+01:00', location: 'Room 4' }), 'at the time chosen, with the place')
  })

  await t.test('Delete on an occurrence asks which ones, as the form does; on a single event it deletes', async (t) => {
    await eventBlock(page, 'Yoga').click()
    await card.waitFor()
    await waitFor(async () => await card.locator('.details-repeat').textContent() === 'Every week on Tuesday, 4 times', EVENTUALLY_MS)
    t.equal(await card.locator('.details-repeat').textContent(), 'Every week on Tuesday, 4 times', 'the series\' rule in words')
    await card.getByRole('button', { name: 'Delete' }).click()
    await card.getByRole('group', { name: 'This event repeats. Delete' }).waitFor()
    t.ok(await card.getByLabel('This event', { exact: true }).isChecked(), '"This event" unless another is chosen')
    t.equal(await page.evaluate('document.activeElement?.id'), 'scope-this', 'focus on the choice')
    t.same(await seriousViolations(page), [], 'axe: nothing serious while it asks')
    await card.getByRole('button', { name: 'Delete' }).click()
    await eventBlock(page, 'Yoga').waitFor({ state: 'detached' })
    t.pass('this week\'s Yoga is gone')
    await page.getByRole('button', { name: 'Next week' }).click()
    await eventBlock(page, 'Yoga').waitFor({ timeout: EVENTUALLY_MS })
    t.pass('the next week\'s stays')
    await page.getByRole('button', { name: 'Previous week' }).click()

    await eventBlock(page, 'Lunch').click()
    await card.getByRole('button', { name: 'Delete' }).click()
    await eventBlock(page, 'Lunch').waitFor({ state: 'detached' })
    t.ok(await waitFor(async () => await events.countDocuments({ title: 'Lunch' }) === 0, EVENTUALLY_MS), 'a single event is deleted at once (undo is offered instead)')
    await page.locator('.undo-toast').filter({ hasText: 'Event deleted.' }).waitFor()
  })

  // The page asks for a session before signing in: a 401 there is the answer, not an error.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
