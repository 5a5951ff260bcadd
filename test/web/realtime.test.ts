// Two tabs of one user see each other's changes through the stream, without reloading, while a
// tab of another user sees none of them. The write path is the real one: backend, outbox, Sync
// service, change feed, stream.
import { test } from 'tap'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { createEventThroughUi, eventBlock, eventTitles, openEvent, signUpThroughUi } from './ui.js'
import { uniqueEmail } from '../helper.js'

const DAY = '2026-03-02'

test('changes in one tab reach the other tab of the same user, and no other user', async (t) => {
  const stack = await startWebStack(t)
  const browser = await launchBrowser(t)
  const adaContext = await newContext(browser)
  const first = await adaContext.newPage()
  const errors = collectErrors(first)
  await signUpThroughUi(first, stack.webUrl, { name: 'Ada', email: uniqueEmail('ada'), password: 'correct horse 1' }, `/day?date=${DAY}`)
  // The second tab shares the first one's session (same browser profile).
  const second = await adaContext.newPage()
  collectErrors(second).forEach((error) => errors.push(error))
  await second.goto(`${stack.webUrl}/day?date=${DAY}`)
  await second.getByRole('status').filter({ hasText: 'Up to date' }).waitFor()

  const bobPage = await (await newContext(browser)).newPage()
  await signUpThroughUi(bobPage, stack.webUrl, { name: 'Bob', email: uniqueEmail('bob'), password: 'correct horse 2' }, `/day?date=${DAY}`)
  await bobPage.getByRole('status').filter({ hasText: 'Up to date' }).waitFor()
  await first.getByRole('status').filter({ hasText: 'Up to date' }).waitFor()

  await createEventThroughUi(first, { title: 'Planning', day: DAY, start: '10:00', end: '11:00' })
  const started = Date.now()
  await eventBlock(first, 'Planning').waitFor({ timeout: 1000 })
  const ownTab = Date.now() - started
  await eventBlock(second, 'Planning').waitFor({ timeout: 15_000 })
  t.pass(`the other tab shows the new event without a reload (after saving: own tab ${ownTab} ms, other tab ${Date.now() - started} ms)`)

  const dialog = await openEvent(second, 'Planning')
  await dialog.getByLabel('Title').fill('Planning (moved to 14:00)')
  await dialog.getByLabel('Start time').fill('14:00')
  await dialog.getByLabel('End time').fill('15:00')
  await dialog.getByRole('button', { name: 'Save' }).click()
  await eventBlock(first, 'Planning (moved to 14:00)').waitFor({ timeout: 15_000 })
  t.match(await eventBlock(first, 'Planning (moved to 14:00)').textContent(), /14:00 – 15:00/, 'the edit made in the second tab reached the first')

  await (await openEvent(first, 'Planning (moved to 14:00)')).getByRole('button', { name: 'Delete' }).click()
  await eventBlock(second, 'Planning').waitFor({ state: 'detached', timeout: 15_000 })
  t.pass('the deletion in the first tab reached the second')

  t.same(await eventTitles(bobPage), [], 'another user\'s tab saw none of it')
  await bobPage.reload()
  await bobPage.getByRole('status').filter({ hasText: 'Up to date' }).waitFor()
  t.same(await eventTitles(bobPage), [], 'not even after a reload')
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the pages')
})
