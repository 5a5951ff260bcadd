// Push notifications are best effort: a calendar that no pull reached for a while is pulled on a
// timer, so a change whose notification was lost still arrives.
import { test } from 'tap'
import { FALLBACK_PULL_AFTER_MS, fallbackPullDue } from '../../../sync/lib/provider-sync.js'
import { Maintenance } from '../../../sync/services/maintenance.js'
import { buildSyncApp, startDatabase } from '../helper.js'
import { ALICE, connectAndSync, SAMPLE_EVENTS, startStack } from './harness.js'

test('a lost notification: the overdue calendar is pulled on the timer and the change arrives', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'Europe/Berlin', calendars: [{ summary: 'Work' }] }] })
  const dentist = stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.timed)
  const { userId } = await connectAndSync(stack)
  await stack.google.notificationsSettled()
  await stack.drain()

  // The channels are forgotten: Google's next notification is refused as unknown, nothing is pulled.
  for (const watch of await stack.sync.syncWatches.listByUser(userId)) await stack.sync.syncWatches.remove(watch._id)
  stack.google.control.patchEvent(ALICE, String(dentist['id']), { summary: 'Dentist (moved)' })
  await stack.google.notificationsSettled()
  await stack.drain()
  const seen = () => [...stack.backend.events(ALICE).values()].map((event) => event.content?.title)
  t.notOk(seen().includes('Dentist (moved)'), 'the change has not arrived')

  t.equal(await stack.sync.syncEngine.pullOverdueCalendars(), 0, 'nothing is overdue right after a pull')
  stack.clock.advance(FALLBACK_PULL_AFTER_MS + 60_000)
  t.equal(await stack.sync.syncEngine.pullOverdueCalendars(), 2, 'both calendars of the connection are overdue')
  t.equal(await stack.sync.syncEngine.pullOverdueCalendars(), 2, 'asking again queues no second pull (the pulls coalesce)')
  t.equal((await stack.sync.syncJobQueue.list({ type: 'pull' })).length, 2)
  await stack.drain()
  t.ok(seen().includes('Dentist (moved)'), 'the change arrived')
  t.equal(await stack.sync.syncEngine.pullOverdueCalendars(), 0, 'and the calendars are fresh again')
})

test('a calendar whose watch failed at its import gets its channel from the timer\'s pull, and its changes come by notification again', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'Europe/Berlin' }] })
  const dentist = stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.timed)
  // Google is down for the two requests that would watch the calendar: the import's, and the pull's after it.
  stack.google.control.armFault({ pathPrefix: `/calendar/v3/calendars/${encodeURIComponent(ALICE)}/events/watch`, method: 'POST', status: 503, count: 2 })
  const { userId } = await connectAndSync(stack)
  await stack.google.notificationsSettled()
  await stack.drain()
  t.same(await stack.sync.syncWatches.listByUser(userId), [], 'neither the import nor the pull after it could watch the calendar')
  t.ok(stack.logs.some((line) => line.msg === 'watching a calendar failed; it is pulled on the timer, which tries again'), 'and said so')
  const seen = () => [...stack.backend.events(ALICE).values()].map((event) => event.content?.title)

  stack.clock.advance(FALLBACK_PULL_AFTER_MS + 60_000)
  t.equal(await stack.sync.syncEngine.pullOverdueCalendars(), 1, 'no notification came: the calendar is overdue')
  await stack.drain()
  t.equal((await stack.sync.syncWatches.listByUser(userId)).length, 1, 'the timer\'s pull watched it')
  t.ok(stack.google.control.listChannels().some((channel) => channel.account === ALICE && channel.state === 'active'), 'a channel at Google')

  stack.google.control.patchEvent(ALICE, String(dentist['id']), { summary: 'Dentist (moved)' })
  await stack.google.notificationsSettled()
  await stack.drain()
  t.ok(seen().includes('Dentist (moved)'), 'a change at Google arrives by its notification, without the timer')
  t.equal(await stack.sync.syncEngine.pullOverdueCalendars(), 0)
})

test('a watch that failed at the import\'s end is made by the pull that follows the import', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'Europe/Berlin' }] })
  stack.google.control.armFault({ pathPrefix: `/calendar/v3/calendars/${encodeURIComponent(ALICE)}/events/watch`, method: 'POST', status: 503, count: 1 })
  const { userId } = await connectAndSync(stack)
  await stack.drain()
  t.equal((await stack.sync.syncWatches.listByUser(userId)).length, 1, 'watched a moment after the import, not at the timer\'s next pass')
  t.equal(stack.google.control.counts().operations['calendar.events.watch']?.statuses['503'], 1, 'the import\'s watch had failed')
})

test('the fallback rule', async (t) => {
  const now = new Date('2026-11-21T12:00:00Z')
  const old = { cursor: 'token', lastUpdatedAt: new Date(now.getTime() - FALLBACK_PULL_AFTER_MS - 1) }
  t.ok(fallbackPullDue(old, new Date(now.getTime() - 60_000), now, 30))
  t.notOk(fallbackPullDue({ ...old, cursor: null }, now, now, 30), 'never imported: the import pulls it')
  t.notOk(fallbackPullDue({ ...old, lastUpdatedAt: now }, now, now, 30), 'pulled just now')
  t.notOk(fallbackPullDue(old, new Date(now.getTime() - 31 * 86_400_000), now, 30), 'a user away for longer than the inactive days')
  t.notOk(fallbackPullDue(old, null, now, 30), 'a user the service never saw')
})

test('stopping waits for the look for overdue calendars under way, so the database never closes under it', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const engine = built.app.syncEngine
  const original = engine.pullOverdueCalendars.bind(engine)
  let looks = 0
  let finished = 0
  let lookBegun = () => {}
  const begun = new Promise<void>((resolve) => { lookBegun = resolve })
  // A look that takes a while, as one does against a busy database.
  engine.pullOverdueCalendars = async () => {
    looks++
    lookBegun()
    await new Promise((resolve) => setTimeout(resolve, 300))
    const queued = await original()
    finished++
    return queued
  }
  const maintenance = new Maintenance(engine, built.app.log, null)
  maintenance.start(3_600_000, 20)
  await begun
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(looks, 1, 'a look that outlives the interval is not joined by a second')
  await maintenance.stop()
  t.equal(finished, 1, 'the look under way ended before stop() returned')
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(looks, 1, 'a stopped service looks no more')
})
