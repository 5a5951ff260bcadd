// In Chromium against the whole system: a write the server refuses with 429 and a Retry-After is
// sent again by itself once the wait is over, with the id it was made with, and the writes made
// meanwhile follow it in order. While it waits, its event is marked and the status line counts
// down instead of saying "Up to date". The page's clock is Playwright's (page.clock), so the wait
// passes when the test says so, not by sleeping.
import { test } from 'tap'
import type { Page, Request } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { createEventThroughUi, eventBlock, signUpThroughUi } from './ui.js'
import { uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

const DAY = '2026-03-02'

interface StoredEvent { _id: string, eventId: string, title: string, startDate: string }

function status (page: Page) {
  return page.locator('.toolbar-end .status')
}

function mark (page: Page, title: string) {
  return page.getByRole('group', { name: new RegExp(`not saved: ${title}$`, 'i') })
}

test('a 429 with Retry-After: the write goes again by itself after the wait, in order, under its id', async (t) => {
  const stack = await startWebStack(t)
  const browser = await launchBrowser(t)
  const context = await newContext(browser)
  const page = await context.newPage()
  const errors = collectErrors(page)
  await page.clock.install()
  const events = stack.backend.app.mongo.db.collection<StoredEvent>('events')
  const posts: Array<{ _id: string, title: string }> = []
  page.on('request', (request: Request) => {
    if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/event') posts.push(JSON.parse(request.postData() ?? '{}') as { _id: string, title: string })
  })

  const user = { name: 'Rate', email: uniqueEmail('retry-after'), password: 'correct horse 1' }
  await signUpThroughUi(page, stack.webUrl, user, `/day?date=${DAY}`)
  await status(page).filter({ hasText: 'Up to date' }).waitFor()

  // The server refuses the first write with a wait of two minutes, then takes what comes.
  let refused = 0
  await page.route('**/api/event', async (route) => {
    if (route.request().method() !== 'POST' || refused > 0) return await route.fallback()
    refused++
    await route.fulfill({
      status: 429,
      headers: {
        'access-control-allow-origin': stack.webUrl,
        'access-control-allow-credentials': 'true',
        'access-control-expose-headers': 'retry-after',
        'retry-after': '120',
        'content-type': 'application/json'
      },
      body: JSON.stringify({ statusCode: 429, error: 'Too Many Requests', message: 'Rate limit exceeded, retry in 2 minutes' })
    })
  })

  await createEventThroughUi(page, { title: 'Standup', day: DAY, start: '09:00', end: '09:30' })
  await mark(page, 'Standup').waitFor()
  t.match(await mark(page, 'Standup').textContent(), /Not saved.*asked to wait\..*sent again by itself/, 'the event says it is on its way, and why it waits')
  t.match(await mark(page, 'Standup').getAttribute('class'), /write-mark-waiting/, 'drawn as waiting (blue), not as refused')
  await status(page).filter({ hasText: /^1 change waiting: retrying in 2 min$/ }).waitFor()
  t.pass('the status line says when it retries, not "Up to date"')
  t.equal(refused, 1, 'the server refused it once')

  await createEventThroughUi(page, { title: 'Review', day: DAY, start: '11:00', end: '12:00' })
  await mark(page, 'Review').waitFor()
  await status(page).filter({ hasText: /^2 changes waiting: retrying in 2 min$/ }).waitFor()
  t.pass('a change made during the wait waits behind it')

  // Most of the wait passes: the count goes on in seconds, and nothing has been sent again.
  await page.clock.fastForward(100_000)
  await status(page).filter({ hasText: /^2 changes waiting: retrying in \d+ s$/ }).waitFor()
  t.equal(posts.length, 1, 'nothing was sent again before the wait was over')
  t.equal(await events.countDocuments({ title: { $in: ['Standup', 'Review'] } }), 0, 'and the account has neither yet')
  t.ok(await mark(page, 'Standup').isVisible(), 'the event still shows it is not saved yet')

  // The rest of the wait: both go by themselves, nothing clicked.
  await page.clock.fastForward(30_000)
  t.ok(await waitFor(async () => await events.countDocuments({ title: 'Review' }) === 1, 15_000), 'stored after the wait, without a click')
  await mark(page, 'Standup').waitFor({ state: 'detached' })
  await mark(page, 'Review').waitFor({ state: 'detached' })
  await status(page).filter({ hasText: 'Up to date' }).waitFor()
  t.equal(await events.countDocuments({ title: 'Standup' }), 1, 'the refused event is stored once')
  t.equal(await events.countDocuments({ title: 'Review' }), 1, 'the one behind it once')
  t.same(posts.map((post) => post.title), ['Standup', 'Standup', 'Review'], 'sent in the order they were made: the refused one first')
  const [standup] = await events.find({ title: 'Standup' }).toArray()
  t.equal(posts[0]?._id, standup?.eventId, 'stored under the id it was made with')
  t.equal(posts[1]?._id, posts[0]?._id, 'the retry carries the same id')
  t.match(await eventBlock(page, 'Standup').textContent(), /9:00 – 9:30/, 'the grid shows it where it was made')
  t.equal(await page.evaluate('localStorage.getItem("pendingWrites")') as string | null, null, 'the browser keeps nothing more')
  // Before the sign-up the session library asks for a refresh, answered 401: there is no session yet.
  t.same(errors.filter((error) => !/status of (401|429)/.test(error)), [], 'no other errors in the page')
})
