// In Chromium against the whole system: a reload without a connection (the service worker serves
// the page) shows the account's events as they were last read, marked in the status line as
// offline and last seen, also for a day of a week seen; a week never seen says it could not be
// loaded; the connection back reads them again. At sign-out the copy goes: the next account to
// sign in on the browser, online or offline, never sees the first one's events.
import { test } from 'tap'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { eventBlock, eventTitles, signInThroughUi } from './ui.js'
import { signUp, uniqueEmail } from '../helper.js'

const ZONE = 'Europe/Berlin'
const MONDAY = '2026-03-02'
const FIRST_TITLES = ['Dentist', 'Board meeting', 'Offsite']

function status (page: Page) {
  return page.locator('.toolbar-end .status')
}

/** Every title drawn (once, sorted): timed events in the grid, all-day ones above it. */
async function drawn (page: Page): Promise<string[]> {
  return [...new Set([...await eventTitles(page), ...await page.locator('.all-day-event').allTextContents()])].sort()
}

test('offline reload shows the events last seen, marked; never another account\'s', async (t) => {
  const stack = await startWebStack(t)
  const { app } = stack.backend
  const events = app.mongo.db.collection<{ title: string, user: unknown }>('events')
  const people = [
    { email: uniqueEmail('offline-first'), password: 'first password 1', name: 'First' },
    { email: uniqueEmail('offline-second'), password: 'second password 1', name: 'Second' }
  ] as const
  const first = await signUp(app, people[0])
  const second = await signUp(app, people[1])
  const post = async (account: { headers: Record<string, string> }, payload: unknown[]) => {
    const answer = await app.inject({ method: 'POST', url: '/api/event', headers: { ...account.headers, 'content-type': 'application/json' }, payload: JSON.stringify(payload) })
    t.equal(answer.statusCode, 204)
  }
  await post(first, [
    { title: 'Dentist', startDate: `${MONDAY}T09:00:00+01:00`, endDate: `${MONDAY}T10:00:00+01:00`, timeZone: ZONE },
    { title: 'Board meeting', startDate: '2026-03-04T14:00:00+01:00', endDate: '2026-03-04T15:00:00+01:00', timeZone: ZONE },
    { title: 'Offsite', startDate: '2026-03-05', endDate: '2026-03-07', isAllDay: true, timeZone: ZONE }
  ])
  await post(second, [{ title: 'Yoga', startDate: '2026-03-03T18:00:00+01:00', endDate: '2026-03-03T19:00:00+01:00', timeZone: ZONE }])

  const browser = await launchBrowser(t)
  const context = await newContext(browser, { timezoneId: ZONE })
  const page = await context.newPage()
  const errors = collectErrors(page)
  await page.goto(`${stack.webUrl}/week?date=${MONDAY}&auth=login`)
  await signInThroughUi(page, people[0])
  await eventBlock(page, 'Board meeting').waitFor()
  await status(page).filter({ hasText: 'Up to date' }).waitFor()
  t.same(await drawn(page), [...FIRST_TITLES].sort(), 'online: the account\'s week')
  await page.waitForFunction('navigator.serviceWorker.controller !== null')

  await t.test('offline reload: the week as last seen, marked', async (t) => {
    await context.setOffline(true)
    await page.reload()
    await eventBlock(page, 'Board meeting').waitFor()
    t.same(await drawn(page), [...FIRST_TITLES].sort(), 'the events last seen are drawn')
    t.match(await status(page).textContent(), /^Offline: showing events as last seen at \d\d:\d\d$/, 'the status line says they are the last seen, offline')
    t.equal(await page.locator('#calendar [role=alert]').count(), 0, 'no "could not be loaded" over them')
    t.equal(await page.locator('.grid').getAttribute('aria-busy'), 'false', 'the grid is not left loading')

    // Wednesday, a day of the week seen, offline: its events only, from the same copy.
    await page.getByRole('link', { name: 'Day', exact: true }).click()
    await page.getByRole('heading', { name: 'Monday, 2 March 2026' }).waitFor()
    t.same(await drawn(page), ['Dentist'], 'Monday as a day of the week seen')
    await page.keyboard.press('ArrowRight')
    await page.keyboard.press('ArrowRight')
    await page.getByRole('heading', { name: 'Wednesday, 4 March 2026' }).waitFor()
    await eventBlock(page, 'Board meeting').waitFor()
    t.same(await drawn(page), ['Board meeting'], 'Wednesday: its own events')
    t.match(await status(page).textContent(), /^Offline: showing events as last seen/, 'still marked')

    // A week never read: nothing to show, and said so.
    await page.goto(`${stack.webUrl}/week?date=2026-03-23`)
    await page.locator('#calendar [role=alert]').waitFor()
    t.equal(await page.locator('#calendar [role=alert]').textContent(), 'Events could not be loaded: no connection. They load when the connection returns.', 'a week never seen: why it is empty')
    t.same(await drawn(page), [], 'and nothing is made up')
    await page.goto(`${stack.webUrl}/week?date=${MONDAY}`)
    await eventBlock(page, 'Board meeting').waitFor()

    await context.setOffline(false)
    await status(page).filter({ hasText: 'Up to date' }).waitFor()
    t.same(await drawn(page), [...FIRST_TITLES].sort(), 'back online: read again, the mark gone')
  })

  await t.test('sign-out forgets them; the next account sees none of them, online or offline', async (t) => {
    t.ok((await page.evaluate('Object.keys(localStorage)') as string[]).some((key) => key.startsWith('lastEvents:')), 'the copy is kept while signed in')
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('button', { name: 'Sign in' }).waitFor()
    const kept = await page.evaluate('JSON.stringify(Object.entries(localStorage))') as string
    t.notOk(kept.includes('lastEvents:'), 'no copy is left in the browser')
    for (const title of FIRST_TITLES) t.notOk(kept.includes(title), `nothing of "${title}" is left in local storage`)

    await page.getByRole('button', { name: 'Sign in' }).click()
    await signInThroughUi(page, people[1])
    await eventBlock(page, 'Yoga').waitFor()
    await status(page).filter({ hasText: 'Up to date' }).waitFor()
    t.same(await drawn(page), ['Yoga'], 'online: the second account\'s own week only')

    await context.setOffline(true)
    await page.reload()
    await eventBlock(page, 'Yoga').waitFor()
    t.same(await drawn(page), ['Yoga'], 'offline: its own last seen events, none of the first account\'s')
    t.match(await status(page).textContent(), /^Offline: showing events as last seen at \d\d:\d\d$/)
    await context.setOffline(false)
    t.same((await events.find({ title: { $in: [...FIRST_TITLES, 'Yoga'] } }).toArray()).map((event) => event.title).sort(), [...FIRST_TITLES, 'Yoga'].sort(), 'the server still holds both accounts\' events as they were')
  })

  t.same(errors.filter((error) => !/status of 401|ERR_INTERNET_DISCONNECTED|Failed to load resource/.test(error)), [], 'no other errors in the page')
})
