// In Chromium against the whole system: the signed-out calendar with its demo events, sign-up
// through ?auth=signup carrying the user's own local events into the new account (demo events
// not), then creating, editing, moving and deleting events, a series included.
import { test } from 'tap'
import { ObjectId } from 'bson'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { startWebStack } from './stack.js'
import { createEventThroughUi, EVENTUALLY_MS, eventBlock, eventTitles, openEvent, signUpThroughUi } from './ui.js'
import { uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

const DAY = '2026-03-02'

test('signed out, then signed up: local events carried over, then the account is edited in the browser', async (t) => {
  const stack = await startWebStack(t)
  const browser = await launchBrowser(t)
  const page = await (await newContext(browser)).newPage()
  const errors = collectErrors(page)
  const events = stack.backend.app.mongo.db.collection<{ _id: ObjectId, user: ObjectId, title: string, startDate: string, endDate: string }>('events')
  // The page shows a write at once; the account has it when the request has been answered.
  const stored = async (filter: Record<string, unknown>, expected = 1) => await waitFor(async () => await events.countDocuments(filter) === expected, EVENTUALLY_MS)

  await page.goto(`${stack.webUrl}/`)
  t.match(page.url(), /\/day$/, '/ goes to /day')
  await eventBlock(page, 'Lunch with Sam').waitFor()
  t.ok((await eventTitles(page)).includes('Deep work'), 'signed out, the demo events of today are there')
  const demoDialog = await openEvent(page, 'Lunch with Sam')
  await demoDialog.getByLabel('Title').fill('Lunch with Sam and Kim')
  await demoDialog.getByRole('button', { name: 'Save' }).click()
  await eventBlock(page, 'Lunch with Sam and Kim').waitFor()

  await page.goto(`${stack.webUrl}/day?date=${DAY}`)
  await createEventThroughUi(page, { title: 'Dentist', day: DAY, start: '09:00', end: '10:00', location: 'Main Street 1' })
  await createEventThroughUi(page, { title: 'Yoga', day: DAY, start: '18:00', end: '19:00', repeat: 'WEEKLY' })
  await eventBlock(page, 'Dentist').waitFor()
  await page.reload()
  await eventBlock(page, 'Yoga').waitFor()
  t.same((await eventTitles(page)).sort(), ['Dentist', 'Yoga'], 'kept in the browser across a reload')
  t.equal(await events.countDocuments(), 0, 'nothing reached the backend while signed out')

  const email = uniqueEmail('carry')
  await signUpThroughUi(page, stack.webUrl, { name: 'Carry', email, password: 'correct horse 1' }, `/day?date=${DAY}`)
  t.notMatch(page.url(), /auth=/, 'the auth parameter left the URL')
  t.match(page.url(), /date=2026-03-02/, 'the rest of the URL stayed')
  await page.getByRole('status').filter({ hasText: 'now in your account' }).waitFor()
  const carried = await events.find({}).toArray()
  t.same(carried.map((event) => event.title).sort(), ['Dentist', 'Yoga'], 'the user\'s own events went to the account; no demo event, edited or not')
  t.notMatch(JSON.stringify(carried), /demo/i, 'no demo marker in account data')
  await eventBlock(page, 'Dentist').waitFor()
  t.same((await eventTitles(page)).sort(), ['Dentist', 'Yoga'], 'and are shown from the account')

  await t.test('create, edit, move and delete in the account', async (t) => {
    await createEventThroughUi(page, { title: 'Team sync', day: DAY, start: '11:00', end: '11:30' })
    await eventBlock(page, 'Team sync').waitFor()
    t.ok(await stored({ title: 'Team sync' }), 'created in the account')

    const dialog = await openEvent(page, 'Team sync')
    t.equal(await dialog.getByLabel('Start time').inputValue(), '11:00')
    // No maps.placesApiKey in this bundle: the location is a plain input that asks no one.
    const placesAsked: string[] = []
    page.on('request', (request) => { if (request.url().includes('places.googleapis.com')) placesAsked.push(request.url()) })
    await dialog.getByLabel('Location').fill('Room 4')
    t.equal(await dialog.getByLabel('Location').getAttribute('list'), null, 'no suggestion list')
    t.equal(await dialog.locator('datalist').count(), 0)
    await dialog.getByLabel('Location').fill('')
    t.same(placesAsked, [], 'no places lookup without a key')
    await dialog.getByLabel('Title').fill('Team sync (room 4)')
    await dialog.getByLabel('End time').fill('12:00')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await eventBlock(page, 'Team sync (room 4)').waitFor()
    t.match(await eventBlock(page, 'Team sync (room 4)').textContent(), /11:00 – 12:00/)
    t.ok(await stored({ title: 'Team sync (room 4)', endDate: '2026-03-02T12:00:00+01:00' }), 'edited in the Berlin zone of the browser')

    // Drag the event an hour down (48 px per hour in the grid).
    const box = await eventBlock(page, 'Team sync (room 4)').boundingBox()
    if (box === null) throw new Error('no box')
    await page.mouse.move(box.x + 20, box.y + 10)
    await page.mouse.down()
    await page.mouse.move(box.x + 20, box.y + 35, { steps: 4 })
    await page.mouse.move(box.x + 20, box.y + 58, { steps: 4 })
    await page.mouse.up()
    await eventBlock(page, 'Team sync (room 4)').filter({ hasText: '12:00 – 13:00' }).waitFor()
    t.ok(await stored({ title: 'Team sync (room 4)', startDate: '2026-03-02T12:00:00+01:00', endDate: '2026-03-02T13:00:00+01:00' }), 'moved by dragging')

    // Keyboard: Alt+Shift+ArrowDown makes it 15 minutes longer.
    await eventBlock(page, 'Team sync (room 4)').focus()
    await page.keyboard.press('Alt+Shift+ArrowDown')
    await eventBlock(page, 'Team sync (room 4)').filter({ hasText: '12:00 – 13:15' }).waitFor()
    t.ok(await stored({ title: 'Team sync (room 4)', endDate: '2026-03-02T13:15:00+01:00' }), 'resized from the keyboard')

    await (await openEvent(page, 'Team sync (room 4)')).getByRole('button', { name: 'Delete' }).click()
    await eventBlock(page, 'Team sync').waitFor({ state: 'detached' })
    t.ok(await stored({ title: /Team sync/ }, 0), 'deleted in the account')
  })

  await t.test('a series: this and following events are deleted, the earlier ones stay', async (t) => {
    await page.goto(`${stack.webUrl}/week?date=2026-03-16`)
    await eventBlock(page, 'Yoga').waitFor()
    t.equal(await eventBlock(page, 'Yoga').count(), 1, 'the weekly series shows in a later week')
    const dialog = await openEvent(page, 'Yoga')
    await dialog.getByLabel('This and following events').check()
    await dialog.getByRole('button', { name: 'Delete' }).click()
    await eventBlock(page, 'Yoga').waitFor({ state: 'detached' })
    await page.getByRole('button', { name: 'Previous week' }).click()
    await eventBlock(page, 'Yoga').waitFor()
    t.match(page.url(), /\/week\?date=2026-03-09/)
    t.ok(await stored({ title: 'Yoga', 'recurrence.rule.0': /UNTIL=/ }), 'the series now ends before the deleted occurrence')
  })

  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
