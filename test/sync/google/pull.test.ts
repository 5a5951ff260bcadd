// After the import: notifications from the stand-in, incremental pulls with the stored sync token,
// a dead sync token (410), rate limits, and notifications that must change nothing.
import { test } from 'tap'
import type { Invalidation } from '../../../schemas/sync/index.js'
import { ALICE, connectAndSync, SAMPLE_EVENTS, startStack } from './harness.js'
import { NOTIFICATION_PULL_DELAY_MS } from '../../../sync/lib/provider-sync.js'
import type { Stack } from './harness.js'

async function feedSince (stack: Stack, userId: string, cursor: string): Promise<{ items: Invalidation[], cursor: string }> {
  const page = await stack.sync.syncFeed.page(userId, cursor, 500)
  return { items: page.invalidations, cursor: page.cursor }
}

function listCount (stack: Stack): number {
  return stack.google.control.counts().operations['calendar.events.list']?.total ?? 0
}

test('a change at Google: its notification queues one pull of that calendar; the backend gets the change and deletions; the cursor moves', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'Europe/Berlin' }] })
  const timed = stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.timed)
  const series = stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.series)
  const { userId, connectionId } = await connectAndSync(stack)
  await stack.google.notificationsSettled()
  t.same(await stack.sync.syncJobQueue.list(), [], 'the channel\'s first (sync) message queued nothing')
  const cursorBefore = (await stack.sync.syncCalendars.get(connectionId, ALICE))?.cursor
  const start = (await stack.sync.syncFeed.page(userId, null, 1)).cursor
  const batchesBefore = stack.backend.batches.length

  stack.google.control.patchEvent(ALICE, String(timed['id']), { summary: 'Dentist (moved)' })
  stack.google.control.deleteEvent(ALICE, `${String(series['id'])}_20261109T080000Z`)
  await stack.google.notificationsSettled()
  t.match(await stack.sync.syncJobQueue.list(), [{ type: 'pull', coalescingKey: `pull:${connectionId}:${ALICE}`, payload: { calendarId: ALICE } }], 'two changes, one pull')
  await stack.drain()

  const pulled = stack.backend.batches.slice(batchesBefore)
  t.equal(pulled.length, 1)
  t.equal(pulled[0]?.generation, undefined, 'a pull has no generation')
  t.match(pulled[0]?.events, [
    { providerEventId: timed['id'], status: 'confirmed', content: { title: 'Dentist (moved)' } },
    { status: 'cancelled', recurringEventId: series['id'], originalStartDate: '2026-11-09T09:00:00+01:00' }
  ])
  t.not((await stack.sync.syncCalendars.get(connectionId, ALICE))?.cursor, cursorBefore, 'the new sync token is stored')
  t.match((await feedSince(stack, userId, start)).items, [{ kind: 'calendar', connectionId, calendarId: ALICE }])

  // Nothing new: the same pull is idle and wakes nobody.
  const idleFrom = (await stack.sync.syncFeed.page(userId, null, 1)).cursor
  await stack.sync.syncEngine.restart(userId)
  await stack.drain()
  t.same((await feedSince(stack, userId, idleFrom)).items, [], 'an idle pull appends nothing')
})

test('a burst of notifications for one calendar is one pull; a pull that learns of a change while it runs goes round again', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'UTC' }] })
  const { connectionId } = await connectAndSync(stack)
  await stack.google.notificationsSettled()
  const before = listCount(stack)
  for (let n = 0; n < 5; n++) stack.google.control.insertEvent(ALICE, { ...SAMPLE_EVENTS.allDay, summary: `Burst ${n}` })
  await stack.google.notificationsSettled()
  t.equal((await stack.sync.syncJobQueue.list()).length, 1, 'five notifications, one queued pull')
  await stack.drain()
  t.equal(listCount(stack) - before, 1, 'one incremental list for the burst')

  // A notification while the pull runs: the running job runs once more.
  stack.google.control.insertEvent(ALICE, { ...SAMPLE_EVENTS.allDay, summary: 'During' })
  await stack.google.notificationsSettled()
  t.equal(await stack.sync.syncJobQueue.claim('test-worker'), null, 'the pull waits a moment for the rest of a burst')
  stack.clock.advance(NOTIFICATION_PULL_DELAY_MS)
  const claimed = await stack.sync.syncJobQueue.claim('test-worker')
  t.match(claimed, { type: 'pull' })
  stack.google.control.insertEvent(ALICE, { ...SAMPLE_EVENTS.allDay, summary: 'Later' })
  await stack.google.notificationsSettled()
  t.match(await stack.sync.syncJobQueue.list(), [{ status: 'running', rerun: true, coalescingKey: `pull:${connectionId}:${ALICE}` }], 'the running pull is marked to go round again')
})

test('a notification with a wrong token or for an unknown channel changes nothing', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'UTC' }] })
  const { connectionId } = await connectAndSync(stack)
  await stack.google.notificationsSettled()
  const [watch] = await stack.sync.syncWatches.listByConnection(connectionId)
  const headers = {
    'x-goog-channel-id': watch?._id ?? '',
    'x-goog-channel-token': 'not-the-token',
    'x-goog-resource-id': watch?.resourceId ?? '',
    'x-goog-resource-state': 'exists',
    'x-goog-message-number': '7'
  }
  const wrong = await fetch(`${stack.syncUrl}/webhooks/google`, { method: 'POST', headers })
  t.equal(wrong.status, 401)
  t.same(await stack.sync.syncJobQueue.list(), [], 'nothing queued')
  const missing = await fetch(`${stack.syncUrl}/webhooks/google`, { method: 'POST', headers: { ...headers, 'x-goog-channel-token': '' } })
  t.equal(missing.status, 401)
  t.notMatch(JSON.stringify(stack.logs), /not-the-token/, 'the presented token never reaches a log line')

  // An unknown channel on one of our resources is stopped at Google with that connection's grant.
  const stray = await stack.sync.syncEngine.notify('google', { channelId: 'stray-channel', token: 'x', resourceId: watch?.resourceId ?? '', state: 'exists' })
  t.same(stray, { result: 'unknownChannel' })
  const unknown = await fetch(`${stack.syncUrl}/webhooks/google`, { method: 'POST', headers: { ...headers, 'x-goog-channel-id': 'nobody-knows' } })
  t.equal(unknown.status, 204)
  t.equal(stack.google.control.counts().operations['calendar.channels.stop']?.total, 2, 'each unknown channel was asked to stop')
  t.same(await stack.sync.syncJobQueue.list(), [])
})

test('410 on the sync token: the calendar is imported again under a new generation that replaces the old at once', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'UTC' }] })
  stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.allDay)
  const { userId, connectionId } = await connectAndSync(stack)
  const calendar = await stack.sync.syncCalendars.get(connectionId, ALICE)
  const firstGeneration = stack.backend.batches.find((batch) => batch.complete === true)?.generation
  const start = (await stack.sync.syncFeed.page(userId, null, 1)).cursor

  stack.google.control.expireSyncTokens({ calendarId: ALICE })
  stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.timed)
  await stack.google.notificationsSettled()
  await stack.drain()

  const repair = stack.backend.batches.filter((batch) => batch.generation !== undefined && batch.generation !== firstGeneration)
  t.equal(repair.length, 1, 'the whole calendar again, no window pass')
  t.equal(repair[0]?.complete, true, 'its last page switches at once')
  t.equal(repair[0]?.events.length, 2)
  t.equal(stack.backend.events(ALICE).size, 2)
  const after = await stack.sync.syncCalendars.get(connectionId, ALICE)
  t.equal(after?.generation, (calendar?.generation ?? 0) + 1)
  t.equal(after?.expiryStreak, 1)
  t.not(after?.cursor, calendar?.cursor)
  t.match((await feedSince(stack, userId, start)).items, [{ kind: 'calendar', calendarId: ALICE }])
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy' })
})

test('429 and 403 rateLimitExceeded on a pull: the job waits for Google without spending its attempts, nothing is saved, and the next try gets the change', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'UTC' }] })
  const { connectionId } = await connectAndSync(stack)
  const cursor = (await stack.sync.syncCalendars.get(connectionId, ALICE))?.cursor
  stack.google.control.armFault({ pathPrefix: '/calendar/v3/calendars', method: 'GET', status: 429, reason: 'rateLimitExceeded', count: 1 })
  stack.google.control.armFault({ pathPrefix: '/calendar/v3/calendars', method: 'GET', status: 403, reason: 'rateLimitExceeded', count: 1 })
  const event = stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.allDay)
  await stack.google.notificationsSettled()
  const batches = stack.backend.batches.length

  await stack.drain()
  const [job] = await stack.sync.syncJobQueue.list()
  t.match(job, { type: 'pull', status: 'queued', attempts: 0, waitingForProvider: true, lastError: /unavailable.*429/ })
  const waited = (job?.runAt.getTime() ?? 0) - stack.clock.now().getTime()
  t.ok(waited >= 7_500 && waited <= 15_000, `the first step of the provider's backoff (${waited} ms)`)
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'delayed', reason: 'readFailure', unavailableStreak: 1, providerRetryAt: job?.runAt })
  t.equal((await stack.sync.syncCalendars.get(connectionId, ALICE))?.cursor, cursor, 'the cursor is kept')
  t.equal(stack.backend.batches.length, batches)

  stack.clock.advance(40_000)
  await stack.drain()
  t.match((await stack.sync.syncJobQueue.list())[0], { attempts: 0, lastError: /403 rateLimitExceeded/ })
  t.match(await stack.sync.syncConnections.get(connectionId), { unavailableStreak: 2 })
  stack.clock.advance(3 * 60_000)
  await stack.drain()
  t.same(await stack.sync.syncJobQueue.list(), [])
  t.match(stack.backend.batches.at(-1)?.events, [{ providerEventId: event['id'] }], 'the change arrived on the retry')
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy', lastReadFailureAt: null, unavailableStreak: 0, providerRetryAt: null })
})

test('a calendar deleted at Google: the next pull finds it gone, its events leave the backend, its channel stops', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'UTC', calendars: [{ summary: 'Work' }] }] })
  const work = stack.google.control.listAccounts()[0]?.calendars.find((calendar) => calendar.summary === 'Work')?.id ?? ''
  stack.google.control.insertEvent(work, SAMPLE_EVENTS.timed)
  stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.allDay)
  const { userId, connectionId } = await connectAndSync(stack)
  t.equal(stack.backend.events(work).size, 1)
  t.ok((await stack.sync.syncWatches.listByConnection(connectionId)).some((watch) => watch.calendarId === work), 'the calendar was watched')
  const start = (await stack.sync.syncFeed.page(userId, null, 1)).cursor

  stack.google.control.deleteCalendar(work)
  await stack.sync.syncEngine.restart(userId)
  await stack.drain()

  t.match(stack.backend.removals, [{ userId, connectionId, calendarId: work }], 'the backend was told to remove the calendar')
  t.equal(stack.backend.events(work).size, 0)
  t.equal(stack.backend.events(ALICE).size, 1, 'the other calendar stays')
  t.equal(await stack.sync.syncCalendars.get(connectionId, work), null, 'Sync forgot the calendar')
  t.notOk((await stack.sync.syncWatches.listByConnection(connectionId)).some((watch) => watch.calendarId === work), 'and its channel')
  t.match((await feedSince(stack, userId, start)).items, [{ kind: 'calendar', connectionId, calendarId: work }], 'the user\'s tabs are told')
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy' })
})

test('the calendar list followed: a whole-connection pull ten minutes on imports a calendar added at Google, drops one removed, and takes the others\' new default reminders', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'UTC', calendars: [{ summary: 'Work' }] }] })
  const control = stack.google.control
  const work = control.listAccounts()[0]?.calendars.find((calendar) => calendar.summary === 'Work')?.id ?? ''
  control.insertEvent(work, SAMPLE_EVENTS.timed)
  const { userId, connectionId } = await connectAndSync(stack)
  await stack.google.notificationsSettled()
  const calendarLists = () => control.counts().operations['calendar.calendarList.list']?.total ?? 0

  const family = control.addCalendar(ALICE, { summary: 'Family' })
  control.insertEvent(family.id, { ...SAMPLE_EVENTS.allDay, summary: 'Grandma\'s birthday' })
  control.setDefaultReminders(ALICE, [{ method: 'popup', minutes: 15 }])

  const listsBefore = calendarLists()
  await stack.sync.syncEngine.restart(userId)
  await stack.drain()
  t.equal(calendarLists(), listsBefore, 'a refresh soon after the import does not list the calendars again')
  t.equal(await stack.sync.syncCalendars.get(connectionId, family.id), null, 'so the new calendar is not known yet')

  stack.clock.advance(10 * 60_000)
  const start = (await stack.sync.syncFeed.page(userId, null, 1)).cursor
  control.deleteCalendar(work)
  await stack.sync.syncEngine.restart(userId)
  await stack.drain()
  t.equal(calendarLists(), listsBefore + 1, 'ten minutes on, a refresh lists them once')
  t.match(await stack.sync.syncCalendars.get(connectionId, family.id), { name: 'Family', cursor: /./ }, 'the calendar added at Google is imported')
  t.same([...stack.backend.events(family.id).values()].map((event) => event.content?.title), ['Grandma\'s birthday'], 'with its events')
  t.ok((await stack.sync.syncWatches.listByConnection(connectionId)).some((watch) => watch.calendarId === family.id), 'and watched')
  t.equal(await stack.sync.syncCalendars.get(connectionId, work), null, 'the calendar removed at Google is forgotten')
  t.equal(stack.backend.events(work).size, 0, 'with its events')
  t.match(await stack.sync.syncCalendars.get(connectionId, ALICE), { defaultReminders: [{ minutes: 15 }] }, 'the primary calendar takes its new default reminders')
  const told = (await feedSince(stack, userId, start)).items.filter((item) => item.kind === 'calendar').map((item) => item.kind === 'calendar' ? item.calendarId : '')
  t.same([...new Set(told)].sort(), [family.id, work].sort(), 'the user\'s tabs are told of the added and the removed calendar')
  t.equal(new Set(stack.backend.batches.filter((batch) => batch.calendarId === family.id).map((batch) => batch.generation)).size, 1, 'the added calendar was imported once')
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy' })

  await stack.sync.syncEngine.restart(userId)
  await stack.drain()
  t.equal(calendarLists(), listsBefore + 1, 'and not again within ten minutes')
})
