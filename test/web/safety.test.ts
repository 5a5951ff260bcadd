// In Chromium against the whole system: nothing is lost silently and a change can be taken back.
// A write made offline is kept (in the browser, across a reload), drawn as not saved and sent when
// the connection returns, stored once, and an offline reload opens the calendar with it and the
// account's events as last read (the service worker); a write the server refuses (503) is drawn as not saved
// with Retry and Discard; a delete, a move, a resize and an edit are undone (toast, Ctrl+Z) and the account has the
// event back; the sign-in dialog says what happened; a signed-in reload draws no demo events and
// reads its range once.
import { test } from 'tap'
import type { Page, Request } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { apartFromReminders, createEventThroughUi, EVENTUALLY_MS, eventBlock, openEvent, pageState, signInThroughUi, signUpThroughUi } from './ui.js'
import { uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

const DAY = '2026-03-02'
const DEMO_TITLES = ['Morning planning', 'Lunch with Sam', 'Deep work', 'Gym', 'Conference']

interface StoredEvent { _id: string, eventId: string, user: string, title: string, startDate: string, endDate: string }

function status (page: Page) {
  return page.locator('.toolbar-end .status')
}

function mark (page: Page, title: string) {
  return page.getByRole('group', { name: new RegExp(`not saved: ${title}$`, 'i') })
}

test('no silent loss, undo, honest sign-in and loading', async (t) => {
  const stack = await startWebStack(t)
  const browser = await launchBrowser(t)
  const context = await newContext(browser)
  const page = await context.newPage()
  const errors = collectErrors(page)
  const events = stack.backend.app.mongo.db.collection<StoredEvent>('events')
  const stored = async (filter: Record<string, unknown>, expected = 1) => await waitFor(async () => await events.countDocuments(filter) === expected, EVENTUALLY_MS)
  const posts: string[] = []
  page.on('request', (request: Request) => {
    if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/event') posts.push(request.postData() ?? '')
  })

  const user = { name: 'Safe', email: uniqueEmail('safety'), password: 'correct horse 1' }
  await signUpThroughUi(page, stack.webUrl, user, `/day?date=${DAY}`)
  await status(page).filter({ hasText: 'Up to date' }).waitFor()

  await t.test('offline: the new event is kept, shown as not saved, and stored once when the connection returns', async (t) => {
    await context.setOffline(true)
    await status(page).filter({ hasText: 'Offline' }).waitFor()
    await createEventThroughUi(page, { title: 'Offline lunch', day: DAY, start: '12:00', end: '13:00' })
    await mark(page, 'Offline lunch').waitFor()
    t.match(await mark(page, 'Offline lunch').textContent(), /Not saved.*no connection/, 'the event says it is not saved, and why')
    t.equal(await status(page).textContent(), '1 change waiting for the connection', 'the status line does not say up to date')
    const kept = await page.evaluate('localStorage.getItem("pendingWrites")') as string | null
    t.match(kept, /Offline lunch/, 'the write is kept in the browser')
    t.equal(await events.countDocuments({ title: 'Offline lunch' }), 0, 'nothing reached the account')

    await context.setOffline(false)
    t.ok(await stored({ title: 'Offline lunch' }), 'stored when the connection returned')
    await mark(page, 'Offline lunch').waitFor({ state: 'detached' })
    await status(page).filter({ hasText: 'Up to date' }).waitFor()
    t.equal(await events.countDocuments({ title: 'Offline lunch' }), 1, 'stored once')
    const sentIds = posts.filter((body) => body.includes('Offline lunch')).map((body) => (JSON.parse(body) as { _id: string })._id)
    const [storedEvent] = await events.find({ title: 'Offline lunch' }).toArray()
    t.ok(sentIds.length >= 1 && sentIds.every((id) => id === String(storedEvent?.eventId)), 'under the id it was made with')
    t.equal(await page.evaluate('localStorage.getItem("pendingWrites")') as string | null, null, 'and the browser keeps nothing more')
  })

  await t.test('refused (503): shown on the event across a reload, with Retry and Discard', async (t) => {
    const refuse = async (method: string) => {
      await page.route('**/api/event**', async (route) => {
        if (route.request().method() !== method) return await route.fallback()
        await route.fulfill({
          status: 503,
          headers: { 'access-control-allow-origin': stack.webUrl, 'access-control-allow-credentials': 'true', 'content-type': 'application/json' },
          body: JSON.stringify({ statusCode: 503, error: 'Service Unavailable', message: 'Service Unavailable' })
        })
      })
    }
    await refuse('POST')
    await createEventThroughUi(page, { title: 'Dentist', day: DAY, start: '09:00', end: '10:00' })
    await mark(page, 'Dentist').waitFor()
    t.match(await mark(page, 'Dentist').textContent(), /Not saved.*\(503\)/, 'the event says the server did not take it')
    t.equal(await status(page).textContent(), '1 change not saved')
    await page.reload()
    await mark(page, 'Dentist').waitFor()
    t.pass('still shown, still not saved, after a reload')
    await page.unroute('**/api/event**')
    await mark(page, 'Dentist').getByRole('button', { name: 'Retry' }).click()
    t.ok(await stored({ title: 'Dentist', startDate: '2026-03-02T09:00:00+01:00' }), 'Retry stored it')
    await mark(page, 'Dentist').waitFor({ state: 'detached' })
    await status(page).filter({ hasText: 'Up to date' }).waitFor()

    await refuse('PUT')
    await eventBlock(page, 'Dentist').focus()
    await page.keyboard.press('Alt+ArrowDown')
    await mark(page, 'Dentist').waitFor()
    t.match(await eventBlock(page, 'Dentist').textContent(), /\b9:15 – 10:15/, 'the refused move is drawn where it was asked for')
    await mark(page, 'Dentist').getByRole('button', { name: 'Discard' }).click()
    await mark(page, 'Dentist').waitFor({ state: 'detached' })
    await eventBlock(page, 'Dentist').filter({ hasText: /\b9:00 – 10:00/ }).waitFor()
    t.ok(await stored({ title: 'Dentist', startDate: '2026-03-02T09:00:00+01:00' }), 'Discard puts it back as the account has it')
    await page.unroute('**/api/event**')
  })

  await t.test('undo: a delete, a move, a resize and an edit are taken back in the account', async (t) => {
    const [dentist] = await events.find({ title: 'Dentist' }).toArray()
    await (await openEvent(page, 'Dentist')).getByRole('button', { name: 'Delete' }).click()
    t.ok(await stored({ title: 'Dentist' }, 0), 'deleted at once, nothing asked')
    const toast = page.locator('.undo-toast')
    await toast.filter({ hasText: 'Event deleted.' }).waitFor()
    await toast.getByRole('button', { name: 'Undo' }).click()
    t.ok(await stored({ title: 'Dentist', eventId: dentist?.eventId }), 'Undo brings it back, under its own id')
    await eventBlock(page, 'Dentist').waitFor()

    await eventBlock(page, 'Offline lunch').focus()
    await page.keyboard.press('Alt+ArrowDown')
    t.ok(await stored({ title: 'Offline lunch', startDate: '2026-03-02T12:15:00+01:00' }), 'moved')
    await toast.filter({ hasText: 'Event moved.' }).waitFor()
    await page.locator('#calendar').focus()
    await page.keyboard.press('Control+z')
    const movedBack = await stored({ title: 'Offline lunch', startDate: '2026-03-02T12:00:00+01:00', endDate: '2026-03-02T13:00:00+01:00' })
    t.ok(movedBack, 'Ctrl+Z moves it back in the account', movedBack ? {} : { page: await pageState(page), stored: await events.find({ title: 'Offline lunch' }).toArray() })
    await eventBlock(page, 'Offline lunch').filter({ hasText: '12:00 – 13:00' }).waitFor()

    await eventBlock(page, 'Offline lunch').focus()
    await page.keyboard.press('Alt+Shift+ArrowDown')
    t.ok(await stored({ title: 'Offline lunch', endDate: '2026-03-02T13:15:00+01:00' }), 'resized')
    await toast.filter({ hasText: 'Event resized.' }).getByRole('button', { name: 'Undo' }).click()
    t.ok(await stored({ title: 'Offline lunch', startDate: '2026-03-02T12:00:00+01:00', endDate: '2026-03-02T13:00:00+01:00' }), 'the resize is undone in the account')

    const dialog = await openEvent(page, 'Offline lunch')
    await dialog.getByLabel('Title').fill('Lunch with Kim')
    await dialog.getByRole('button', { name: 'Save' }).click()
    t.ok(await stored({ title: 'Lunch with Kim' }), 'edited')
    await toast.filter({ hasText: 'Event changed.' }).waitFor()
    await page.locator('#calendar').focus()
    await page.keyboard.press('Control+z')
    t.ok(await stored({ title: 'Offline lunch', startDate: '2026-03-02T12:00:00+01:00' }), 'the edit is undone in the account')
    await eventBlock(page, 'Offline lunch').waitFor()

    // With the browser's storage full, a change cannot be kept, so it is not made, and the page says
    // so: a move (whose handler has nothing to show), and an undo, which stays on offer.
    await eventBlock(page, 'Offline lunch').focus()
    await page.keyboard.press('Alt+ArrowDown')
    t.ok(await stored({ title: 'Offline lunch', startDate: '2026-03-02T12:15:00+01:00' }), 'moved again')
    await toast.filter({ hasText: 'Event moved.' }).waitFor()
    const fillers = await page.evaluate(`(() => {
      let count = 0
      for (let size = 1 << 20; size >= 8; size >>= 1) {
        const chunk = 'x'.repeat(size)
        for (;;) {
          try { localStorage.setItem('filler' + count, chunk); count++ } catch { break }
        }
      }
      return count
    })()`) as number
    t.ok(fillers > 0, 'the browser\'s storage is full')
    const notKept = page.locator('.notice-error', { hasText: 'The change was not saved: this browser\'s storage is full' })
    await page.locator('#calendar').focus()
    await page.keyboard.press('Control+z')
    await notKept.first().waitFor()
    await toast.filter({ hasText: 'Event moved.' }).waitFor()
    await eventBlock(page, 'Offline lunch').focus()
    await page.keyboard.press('Alt+ArrowDown')
    await waitFor(async () => await notKept.count() === 2, EVENTUALLY_MS)
    t.equal(await notKept.count(), 2, 'the undo and the next move are each said not saved')
    t.ok(await stored({ title: 'Offline lunch', startDate: '2026-03-02T12:15:00+01:00' }), 'the account keeps the event where it was')
    t.match(await eventBlock(page, 'Offline lunch').textContent(), /12:15 – 13:15/, 'and so does the page')
    await page.evaluate(`(() => { for (let index = 0; index < ${fillers}; index++) localStorage.removeItem('filler' + index) })()`)
    while (await notKept.count() > 0) await notKept.first().getByRole('button', { name: /^Dismiss/ }).click()
    await page.locator('#calendar').focus()
    await page.keyboard.press('Control+z')
    t.ok(await stored({ title: 'Offline lunch', startDate: '2026-03-02T12:00:00+01:00' }), 'the undo left on offer works once the storage has room')
  })

  await t.test('a signed-in reload draws no demo events and reads its range once', async (t) => {
    const held = JSON.parse(await page.evaluate('localStorage.getItem("localEvents")') as string) as { entries: Array<{ event: { title: string } }> }
    const seen = held.entries.map((entry) => entry.event.title).filter((title) => DEMO_TITLES.includes(title))
    t.ok(seen.length > 0, 'this browser holds demo events from before the sign-up')
    // Every event title the page ever draws, from its first frame on.
    await page.addInitScript(`(() => {
      const drawn = window.drawnTitles = new Set()
      new MutationObserver(() => {
        for (const node of document.querySelectorAll('.event-title, .all-day-event')) drawn.add(node.textContent ?? '')
      }).observe(document, { subtree: true, childList: true, characterData: true })
    })()`)
    const reads: string[] = []
    const onRequest = (request: Request) => {
      const url = new URL(request.url())
      if (request.method() === 'GET' && url.pathname === '/api/event') reads.push(url.search)
    }
    // The changes of the steps before (the last undo's among them) go out on the stream as they
    // reach the change feed, and one that came after the reload would rightly read the day again.
    // So the reload waits until all of them went out, and until the page that took them is gone
    // (with the reads they made it do).
    const [offlineLunch] = await events.find({ title: 'Offline lunch' }).toArray()
    await stack.changesDelivered(String(offlineLunch?.user))
    await page.goto('about:blank')
    page.on('request', onRequest)
    // Today's view: where the demo events of this browser are.
    await page.goto(`${stack.webUrl}/day`)
    await page.locator('.grid[aria-busy="false"]').waitFor()
    await status(page).filter({ hasText: 'Up to date' }).waitFor()
    page.off('request', onRequest)
    const drawn = await page.evaluate('[...window.drawnTitles]') as string[]
    t.same(drawn.filter((title) => DEMO_TITLES.includes(title)), [], 'no demo event was ever drawn')
    // The reminders read the four weeks ahead once at start (web/README, Reminders); the rest are the day's.
    const { view, ahead } = apartFromReminders(reads)
    t.equal(view.length, 1, 'the day is read once')
    t.ok(ahead.length <= 1, 'and the weeks ahead at most once, for the reminders')
    await page.goto(`${stack.webUrl}/day?date=${DAY}`)
    await eventBlock(page, 'Offline lunch').waitFor()
  })

  await t.test('offline reload: the calendar opens from the service worker, with the kept write', async (t) => {
    await page.waitForFunction('navigator.serviceWorker.controller !== null')
    await context.setOffline(true)
    await createEventThroughUi(page, { title: 'Kept offline', day: DAY, start: '15:00', end: '16:00' })
    await mark(page, 'Kept offline').waitFor()
    await page.reload()
    await mark(page, 'Kept offline').waitFor()
    t.match(await status(page).textContent(), /^1 change waiting for the connection · Offline: showing events as last seen at \d\d:\d\d$/, 'the reloaded page knows it is not saved, and that the rest is as last seen')
    await eventBlock(page, 'Offline lunch').waitFor()
    t.pass('the account\'s other events are there, as last read (test/web/offline-events.test.ts)')
    t.equal(await events.countDocuments({ title: 'Kept offline' }), 0)
    await context.setOffline(false)
    t.ok(await stored({ title: 'Kept offline' }), 'sent when the connection returned')
    await mark(page, 'Kept offline').waitFor({ state: 'detached' })
  })

  await t.test('sign-in errors say what happened', async (t) => {
    const signedOut = await (await newContext(browser)).newPage()
    const pageErrors = collectErrors(signedOut)
    await signedOut.goto(`${stack.webUrl}/day?auth=login`)
    const dialog = signedOut.getByRole('dialog', { name: 'Sign in' })
    const alert = dialog.getByRole('alert')
    await signInThroughUi(signedOut, { email: user.email, password: 'not the password' })
    t.equal(await alert.textContent(), 'The email or the password is not right.')

    const cors = { 'access-control-allow-origin': stack.webUrl, 'access-control-allow-credentials': 'true', 'access-control-expose-headers': 'retry-after' }
    await signedOut.route('**/api/auth/signin', async (route) => await route.fulfill({ status: 429, headers: { ...cors, 'retry-after': '120', 'content-type': 'application/json' }, body: '{"message":"Too many attempts"}' }))
    await dialog.getByRole('button', { name: 'Sign in' }).click()
    await alert.filter({ hasText: 'Too many attempts. Try again in 2 minutes.' }).waitFor()
    t.pass('429: the wait from Retry-After')

    await signedOut.unroute('**/api/auth/signin')
    await signedOut.route('**/api/auth/signin', async (route) => await route.fulfill({ status: 503, headers: { ...cors, 'content-type': 'application/json' }, body: '{"message":"Service Unavailable"}' }))
    await dialog.getByRole('button', { name: 'Sign in' }).click()
    await alert.filter({ hasText: 'The sign-in service is not available right now (503). Try again in a few minutes.' }).waitFor()
    t.pass('503: the service is down, in words')

    await signedOut.unroute('**/api/auth/signin')
    await signedOut.context().setOffline(true)
    await dialog.getByRole('button', { name: 'Sign in' }).click()
    await alert.filter({ hasText: 'This browser is offline. Connect to the internet and try again.' }).waitFor()
    t.equal(await alert.textContent(), 'This browser is offline. Connect to the internet and try again.', 'no answer: offline, in words')

    await signedOut.context().setOffline(false)
    await signedOut.route('**/api/auth/signin', async (route) => await route.abort('connectionrefused'))
    await dialog.getByRole('button', { name: 'Sign in' }).click()
    await alert.filter({ hasText: 'The server cannot be reached right now. Nothing was changed; try again in a moment.' }).waitFor()
    t.pass('no answer while online: the server cannot be reached')
    t.notMatch(await dialog.textContent(), /Something went wrong/)
    t.same(pageErrors.filter((error) => !/status of (401|429|503)|ERR_INTERNET_DISCONNECTED|ERR_CONNECTION_REFUSED|ERR_FAILED/.test(error)), [], 'no errors in that page')
  })

  t.same(errors.filter((error) => !/status of (401|503)|ERR_INTERNET_DISCONNECTED|Failed to load resource/.test(error)), [], 'no other errors in the page')
})
