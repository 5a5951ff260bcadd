// After the import: subscriptions and their handshake, change notifications that queue a pull with
// the stored deltaLink, occurrences deleted at Microsoft (`@removed`) as EXDATEs of their series, a
// delta token Graph no longer knows (re-import), lifecycle notifications, and notifications that
// must change nothing.
import { test } from 'tap'
import type { ProviderEvent } from '../../../schemas/sync/index.js'
import { MicrosoftCalendarAdapter } from '../../../sync/providers/microsoft/adapter.js'
import { ALICE, CLIENT_ID, CLIENT_SECRET, connectAndSync, defaultCalendar, occurrenceOn, SAMPLE_EVENTS, startStack } from './harness.js'

test('a subscription per calendar after the import; a change at Microsoft is pulled with the deltaLink, a deletion arrives as cancelled', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'W. Europe Standard Time', calendars: [{ name: 'Work' }] }] })
  const calendarId = defaultCalendar(stack)
  const control = stack.microsoft.control
  const timed = control.insertEvent(calendarId, SAMPLE_EVENTS.timed)
  const allDay = control.insertEvent(calendarId, SAMPLE_EVENTS.allDay)
  const { connectionId } = await connectAndSync(stack)

  const subscriptions = control.listSubscriptions()
  t.equal(subscriptions.length, 2, 'one subscription per calendar')
  t.ok(subscriptions.every((subscription) => subscription.state === 'active' && subscription.lifecycleNotificationUrl === `${stack.syncUrl}/webhooks/microsoft`))
  const watches = await stack.sync.syncWatches.listByConnection(connectionId)
  t.same(watches.map((watch) => watch._id).sort(), subscriptions.map((subscription) => subscription.id).sort(), 'each subscription is a watch')
  const cursorBefore = (await stack.sync.syncCalendars.get(connectionId, calendarId))?.cursor

  control.patchEvent(calendarId, String(timed.id), { subject: 'Dentist (moved)' })
  control.deleteEvent(calendarId, String(allDay.id))
  await stack.microsoft.notificationsSettled()
  t.match(await stack.sync.syncJobQueue.list(), [{ type: 'pull', coalescingKey: `pull:${connectionId}:${calendarId}` }], 'the notifications queue one pull of that calendar')
  const before = stack.backend.batches.length
  await stack.drain()
  const pulled = stack.backend.batches.slice(before)
  t.equal(pulled.length, 1)
  t.equal(pulled[0]?.generation, undefined, 'a pull has no generation')
  t.match(stack.backend.events(calendarId).get(String(timed.id)), { content: { title: 'Dentist (moved)' } })
  t.notOk(stack.backend.events(calendarId).has(String(allDay.id)), 'the deleted event is gone')
  t.not((await stack.sync.syncCalendars.get(connectionId, calendarId))?.cursor, cursorBefore, 'the new deltaLink is stored')
})

test('the validation handshake echoes the token as text; a notification with a wrong clientState or an unknown subscription changes nothing', async (t) => {
  const stack = await startStack(t)
  const { connectionId } = await connectAndSync(stack)
  const token = 'Validation: Token 1234:abc'
  const answer = await fetch(`${stack.syncUrl}/webhooks/microsoft?validationToken=${encodeURIComponent(token)}`, { method: 'POST', headers: { 'content-type': 'text/plain; charset=utf-8' } })
  t.equal(answer.status, 200)
  t.match(answer.headers.get('content-type'), /^text\/plain/)
  t.equal(await answer.text(), token)

  const [watch] = await stack.sync.syncWatches.listByConnection(connectionId)
  const post = async (body: unknown): Promise<number> => (await fetch(`${stack.syncUrl}/webhooks/microsoft`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status
  t.equal(await post({ value: [{ subscriptionId: watch?._id, clientState: 'not-the-secret', changeType: 'updated' }] }), 202)
  t.equal(await post({ value: [{ subscriptionId: watch?._id, changeType: 'updated' }] }), 202)
  t.equal(await post({ value: [{ subscriptionId: 'unknown-subscription', clientState: 'x', changeType: 'updated' }] }), 202)
  t.equal(await post({ value: [{ subscriptionId: watch?._id, clientState: 'not-the-secret', lifecycleEvent: 'subscriptionRemoved' }] }), 202)
  t.same(await stack.sync.syncJobQueue.list(), [], 'nothing is queued')
  t.equal((await stack.sync.syncWatches.get(watch?._id ?? ''))?._id, watch?._id, 'the subscription stays as it was')
  t.equal(await post({ nothing: true }), 400)
})

test('a delta token Microsoft no longer knows re-imports the calendar under a new generation', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const timed = stack.microsoft.control.insertEvent(calendarId, SAMPLE_EVENTS.timed)
  const { userId, connectionId } = await connectAndSync(stack)
  const generation = (await stack.sync.syncCalendars.get(connectionId, calendarId))?.generation
  stack.microsoft.control.expireDeltaTokens({ calendarId })
  await stack.sync.syncEngine.restart(userId)
  await stack.drain()
  const record = await stack.sync.syncCalendars.get(connectionId, calendarId)
  t.not(record?.generation, generation, 'a new generation')
  t.equal(record?.expiryStreak, 1)
  t.ok(stack.backend.events(calendarId).has(String(timed.id)), 'the events are still there')
  t.equal((await stack.sync.syncConnections.get(connectionId))?.state, 'healthy')
  // The new deltaLink works.
  stack.microsoft.control.patchEvent(calendarId, String(timed.id), { subject: 'After the reset' })
  await stack.microsoft.notificationsSettled()
  await stack.drain()
  t.match(stack.backend.events(calendarId).get(String(timed.id)), { content: { title: 'After the reset' } })
})

test('lifecycle notifications: reauthorizationRequired renews, subscriptionRemoved recreates, missed pulls', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const { connectionId } = await connectAndSync(stack)
  const [watch] = await stack.sync.syncWatches.listByConnection(connectionId)
  if (!watch) throw new Error('no watch')
  // Successful ones only: an access token the manual clock expired is refused once and refreshed.
  const updates = () => stack.microsoft.control.counts().operations['subscription.update']?.statuses['200'] ?? 0

  stack.clock.advance(60 * 60_000)
  stack.microsoft.control.sendLifecycle(watch._id, 'reauthorizationRequired')
  await stack.microsoft.notificationsSettled()
  t.equal(updates(), 1, 'renewed by PATCH')
  const renewed = await stack.sync.syncWatches.get(watch._id)
  t.ok(renewed && renewed.expiresAt > watch.expiresAt, 'the new expiry is stored')
  t.match(await stack.sync.syncJobQueue.list(), [{ type: 'pull', coalescingKey: `pull:${connectionId}:${calendarId}` }])
  await stack.drain()

  stack.microsoft.control.sendLifecycle(watch._id, 'missed')
  await stack.microsoft.notificationsSettled()
  t.match(await stack.sync.syncJobQueue.list(), [{ type: 'pull' }], 'missed: a pull')
  await stack.drain()

  stack.microsoft.control.sendLifecycle(watch._id, 'subscriptionRemoved')
  await stack.microsoft.notificationsSettled()
  const [replacement] = await stack.sync.syncWatches.listByConnection(connectionId)
  t.ok(replacement && replacement._id !== watch._id, 'a new subscription replaces the removed one')
  t.equal(stack.microsoft.control.listSubscriptions().find((subscription) => subscription.id === replacement?._id)?.state, 'active')

  // Watch maintenance renews in place.
  stack.clock.advance(6.5 * 24 * 60 * 60_000)
  await stack.sync.syncActivity.touch([replacement?.userId ?? ''], stack.clock.now())
  const before = updates()
  const report = await stack.sync.syncEngine.maintainWatches()
  t.match(report, { renewed: 1, failed: 0 })
  t.equal(updates(), before + 1, 'maintenance renews by PATCH')
  t.equal((await stack.sync.syncWatches.get(replacement?._id ?? ''))?._id, replacement?._id, 'the same subscription')
})

test('an occurrence deleted at Microsoft arrives as @removed: the series is sent again with it as an EXDATE; a deleted series goes', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const control = stack.microsoft.control
  const seriesId = String(control.insertEvent(calendarId, SAMPLE_EVENTS.series).id)
  const other = String(control.insertEvent(calendarId, { ...SAMPLE_EVENTS.series, subject: 'Standup' }).id)
  const { connectionId } = await connectAndSync(stack)
  t.same(stack.backend.events(calendarId).get(seriesId)?.content?.recurrence, ['RRULE:FREQ=WEEKLY;BYDAY=MO;WKST=SU;COUNT=10'])

  control.deleteEvent(calendarId, await occurrenceOn(stack, connectionId, seriesId, '2026-11-30'))
  await stack.microsoft.notificationsSettled()
  const before = stack.backend.batches.length
  await stack.drain()
  const pulled = stack.backend.batches.slice(before)
  t.equal(pulled.length, 1)
  t.equal(pulled[0]?.generation, undefined, 'a pull')
  t.match(pulled[0]?.events.find((event) => event.providerEventId === seriesId), { status: 'confirmed', content: { recurrence: ['RRULE:FREQ=WEEKLY;BYDAY=MO;WKST=SU;COUNT=10', 'EXDATE:20261130T080000Z'] } })
  t.notOk(pulled[0]?.events.some((event) => event.providerEventId === other), 'the other series is not read again')
  t.same(stack.backend.events(calendarId).get(seriesId)?.content?.recurrence, ['RRULE:FREQ=WEEKLY;BYDAY=MO;WKST=SU;COUNT=10', 'EXDATE:20261130T080000Z'],
    'the backend holds the series without that occurrence')

  control.deleteEvent(calendarId, other)
  await stack.microsoft.notificationsSettled()
  await stack.drain()
  t.notOk(stack.backend.events(calendarId).has(other), 'a series deleted at Microsoft is deleted: its occurrences came as @removed')
  t.ok(stack.backend.events(calendarId).has(seriesId))
})

test('a deleted occurrence whose id the adapter never saw (another instance, a restart): every series of the calendar is checked', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const control = stack.microsoft.control
  const seriesId = String(control.insertEvent(calendarId, SAMPLE_EVENTS.series).id)
  control.insertEvent(calendarId, SAMPLE_EVENTS.timed)
  const { userId, connectionId } = await connectAndSync(stack)
  control.deleteEvent(calendarId, await occurrenceOn(stack, connectionId, seriesId, '2026-11-09'))

  const record = await stack.sync.syncCalendars.get(connectionId, calendarId)
  const credential = await stack.sync.syncCredentials.load(connectionId)
  if (!record?.cursor || !credential) throw new Error('no cursor or credential')
  const fresh = new MicrosoftCalendarAdapter({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: stack.microsoft.url, now: () => stack.clock.now() })
  const events: ProviderEvent[] = []
  await fresh.pullChanges({ connectionId, userId, credential }, { calendarId, name: record.name, primary: record.primary, timeZone: record.timeZone }, record.cursor,
    async (page) => { events.push(...page.events) })
  t.match(events.find((event) => event.providerEventId === seriesId), { content: { recurrence: ['RRULE:FREQ=WEEKLY;BYDAY=MO;WKST=SU;COUNT=10', 'EXDATE:20261109T080000Z'] } })
})
