// In Chromium against the whole system with the Google stand-in: the everyday edits of an imported
// series made in the dialog ("this event", "this and following") reach Google as such, and a change
// Google refuses (a calendar shared with the account to read only) shows as not synced, on the event
// and in the status line, with its reason in the dialog.
import { test } from 'tap'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { consent, eventBlock, openEvent, signUpThroughUi } from './ui.js'
import { startFullStack } from '../e2e/stack.js'
import { uniqueEmail } from '../helper.js'
import { waitUntil } from '../processes.js'

const DAY = '2026-03-02'
const NEXT = '2026-03-09'
const ZONE = 'Europe/Berlin'

test('Google in the browser: one occurrence of an imported series, this and following, and a change Google refuses', async (t) => {
  const stack = await startFullStack(t, { web: true })
  const google = stack.google.control
  const email = uniqueEmail('series-ui')
  google.createAccount({ email, name: 'Ida Example', timeZone: ZONE })
  const series = google.insertEvent(email, {
    summary: 'Weekly review',
    start: { dateTime: '2026-02-16T09:00:00+01:00', timeZone: ZONE },
    end: { dateTime: '2026-02-16T10:00:00+01:00', timeZone: ZONE },
    recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10']
  })
  const team = google.addCalendar(email, { summary: 'Team (read only)', accessRole: 'reader' })
  google.insertEvent(team.id, { summary: 'Team offsite', start: { dateTime: `${DAY}T13:00:00+01:00`, timeZone: ZONE }, end: { dateTime: `${DAY}T17:00:00+01:00`, timeZone: ZONE } })

  const browser = await launchBrowser(t)
  const page = await (await newContext(browser, { timezoneId: ZONE })).newPage()
  const errors = collectErrors(page, { foreign: (url) => url.startsWith(stack.google.url) })
  const status = page.locator('p.status')
  await signUpThroughUi(page, stack.webUrl, { name: 'Ida', email, password: 'correct horse 1' }, `/day?date=${DAY}`)
  await page.getByRole('button', { name: 'Connect Google Calendar' }).click()
  await consent(page, stack.google.url, email)
  await page.waitForURL(`${stack.webUrl}/day?date=${DAY}`)
  await eventBlock(page, 'Weekly review').waitFor({ timeout: 20_000 })
  await eventBlock(page, 'Team offsite').waitFor({ timeout: 20_000 })
  const atGoogle = (title: string) => google.storedEvents(email).filter((event) => event['status'] !== 'cancelled' && event['summary'] === title)

  await t.test('"this event": the occurrence is renamed at Google, as an exception of its series', async (t) => {
    const dialog = await openEvent(page, 'Weekly review')
    await dialog.getByLabel('Title').fill('Weekly review (with finance)')
    await dialog.getByLabel('This event').check()
    await dialog.getByRole('button', { name: 'Save' }).click()
    await eventBlock(page, 'Weekly review (with finance)').waitFor()
    await waitUntil(() => atGoogle('Weekly review (with finance)').length === 1, 'the exception at Google', 20_000)
    t.equal(atGoogle('Weekly review (with finance)')[0]?.['recurringEventId'], series['id'], 'an exception of the series')
    t.equal(await page.locator('.write-mark').count(), 0, 'nothing marked: saved, and synced')
  })

  await t.test('"this and following" from the next week: the series ends before it at Google and a new one begins there', async (t) => {
    await page.goto(`${stack.webUrl}/day?date=${NEXT}`)
    const dialog = await openEvent(page, 'Weekly review')
    await dialog.getByLabel('Title').fill('Weekly review (new format)')
    await dialog.getByLabel('This and following events').check()
    await dialog.getByRole('button', { name: 'Save' }).click()
    await eventBlock(page, 'Weekly review (new format)').waitFor()
    await waitUntil(() => atGoogle('Weekly review (new format)').some((event) => Array.isArray(event['recurrence'])), 'the new series at Google', 20_000)
    await waitUntil(() => String((google.storedEvents(email).find((event) => event['id'] === series['id'])?.['recurrence'] as string[] | undefined)?.[0]).includes('UNTIL='), 'the old series cut at Google', 20_000)
    t.pass('both at Google')
    await page.goto(`${stack.webUrl}/day?date=${DAY}`)
    await eventBlock(page, 'Weekly review (with finance)').waitFor()
    t.equal(await page.locator('.write-mark').count(), 0, 'the week before keeps its occurrence, nothing marked')
  })

  await t.test('a change Google refuses: the event says "Not synced", the status line counts it, the dialog says why', async (t) => {
    const dialog = await openEvent(page, 'Team offsite')
    await dialog.getByLabel('Title').fill('Team offsite (moved here)')
    await dialog.getByRole('button', { name: 'Save' }).click()
    const mark = page.getByRole('group', { name: 'Not synced: Team offsite (moved here)' })
    await mark.waitFor({ timeout: 20_000 })
    t.match(await mark.textContent(), /Not synced/)
    await status.filter({ hasText: '1 change not synced to Google Calendar' }).waitFor({ timeout: 20_000 })
    t.pass('the status line says so, not "up to date"')
    await openEvent(page, 'Team offsite (moved here)')
    const reason = page.getByRole('dialog', { name: 'Edit event' }).locator('#event-sync-issue')
    t.match(await reason.textContent(), /Not synced\..*only read this calendar/, 'the reason, for a person')
    await page.getByRole('dialog', { name: 'Edit event' }).getByRole('button', { name: 'Cancel' }).click()
    t.equal(google.storedEvents(team.id).filter((event) => event['summary'] === 'Team offsite').length, 1, 'Google keeps its owner\'s version')
  })

  // The page's session check answers 401 before the sign-up, as for any signed-out visitor.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no error in the browser')
})
