// Own-data changes reported by the backend reaching Microsoft (insert, PATCH and DELETE with the
// change key), the newer version winning, 429 and 503 with Retry-After waited out as Graph asks
// (no attempt of the job ladder spent), and a revoked grant making the connection need the user.
import { test } from 'tap'
import { lunchWriteSubject, reportEventChange, revokeAtProviderAndPull } from '../provider-harness.js'
import { ALICE, connectAndSync, defaultCalendar, graphGet, occurrenceOn, SAMPLE_EVENTS, startStack } from './harness.js'

test('provider writes: an own event of the default calendar is created there and linked, then patched and deleted with If-Match', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const { userId, connectionId } = await connectAndSync(stack)
  const eventId = '6b0400000000000000000001'
  const batches = stack.backend.batches.length

  t.equal(await reportEventChange(stack, { userId, eventId, calendarId, operation: 'create', idempotencyKey: 'create-0001', subject: lunchWriteSubject(stack) }), 202)
  await stack.drain()
  const inserted = stack.microsoft.control.storedEvents(calendarId).find((event) => event['subject'] === 'Lunch with Bo')
  t.ok(inserted, 'the event reached the default calendar')
  t.match(inserted, { createdBy: /.+/, isAllDay: false })
  const [link] = stack.backend.batches.slice(batches)
  t.match(link, { calendarId, events: [{ providerEventId: inserted?.['id'], eventId, status: 'confirmed', etag: /.+/, content: { title: 'Lunch with Bo', startDate: '2026-11-24T12:00:00+01:00', timeZone: 'Europe/Berlin' } }] },
    'one batch tells the backend the new provider id')

  const providerEventId = String(inserted?.['id'])
  const updatesBefore = stack.microsoft.control.counts().operations['event.update']?.statuses['200'] ?? 0
  // Another device sets a location; the rename here, a minute later, is written over that version.
  stack.clock.advance(30_000)
  const theirs = stack.microsoft.control.patchEvent(calendarId, providerEventId, { location: { displayName: 'Room 4' } })
  stack.clock.advance(30_000)
  t.equal(await reportEventChange(stack, {
    userId, eventId, operation: 'update', idempotencyKey: 'update-0001', calendarId, subject: lunchWriteSubject(stack, { providerEventId, content: { ...lunchWriteSubject(stack).content!, title: 'Lunch with Bo and Cy' } })
  }), 202)
  await stack.drain()
  t.match(stack.microsoft.control.storedEvents(calendarId).find((event) => event['id'] === providerEventId), { subject: 'Lunch with Bo and Cy' })
  t.equal(stack.microsoft.control.counts().operations['event.update']?.statuses['200'], updatesBefore + 1, 'one PATCH')
  // A page read before the rename arrived can hold the other device's version: older than the rename.
  const own = await stack.sync.syncWrittenVersions.ownWritesOf(connectionId, [{ eventId, providerEventId }])
  t.match(own.byEventId.get(eventId)?.earlier?.[0], { version: theirs['@odata.etag'] }, 'the version the write was made over is kept as older than it')

  stack.clock.advance(60_000)
  t.equal(await reportEventChange(stack, { userId, eventId, operation: 'delete', idempotencyKey: 'delete-0001', calendarId, subject: lunchWriteSubject(stack, { providerEventId }) }), 202)
  await stack.drain()
  t.match(stack.microsoft.control.storedEvents(calendarId).find((event) => event['id'] === providerEventId), { deleted: true })
  await stack.microsoft.notificationsSettled()
  await stack.drain()
  t.same(await stack.sync.syncJobQueue.list(), [])
  t.equal((await stack.sync.syncConnections.get(connectionId))?.state, 'healthy')
})

test('503 with Retry-After on a write: the write waits as long as Graph asks, edits meanwhile change what is written, and it is written once', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const { userId, connectionId } = await connectAndSync(stack)
  const eventId = '6b0400000000000000000009'
  t.equal(await reportEventChange(stack, { userId, eventId, calendarId, operation: 'create', idempotencyKey: 'create-0009', subject: lunchWriteSubject(stack) }), 202)
  await stack.drain()
  const providerEventId = String(stack.microsoft.control.storedEvents(calendarId).find((event) => event['subject'] === 'Lunch with Bo')?.['id'])
  // The pull Microsoft's notification of the insert asks for runs first.
  await stack.microsoft.notificationsSettled()
  stack.clock.advance(60_000)
  await stack.drain()
  const updatesBefore = stack.microsoft.control.counts().operations['event.update']?.statuses['200'] ?? 0

  stack.microsoft.control.armFault({ pathPrefix: '/v1.0/me/events', status: 503, retryAfterSec: 120, count: 1 })
  const edit = (title: string, key: string) => reportEventChange(stack, {
    userId, eventId, operation: 'update', idempotencyKey: key, calendarId, subject: lunchWriteSubject(stack, { providerEventId, content: { ...lunchWriteSubject(stack).content!, title } })
  })
  stack.clock.advance(1_000)
  t.equal(await edit('Lunch v1', 'update-0091'), 202)
  await stack.drain()
  const [waiting] = await stack.sync.syncJobQueue.list({ type: 'providerWrite' })
  t.match(waiting, { status: 'queued', attempts: 0, waitingForProvider: true, lastError: /503.*retry after 120/ })
  t.equal(waiting?.runAt.getTime(), stack.clock.now().getTime() + 120_000)
  for (const [index, title] of ['Lunch v2', 'Lunch v3'].entries()) {
    stack.clock.advance(10_000)
    t.equal(await edit(title, `update-009${index + 2}`), 202)
    await stack.drain()
  }
  t.match(await stack.sync.syncJobQueue.list({ type: 'providerWrite' }), [{ attempts: 0, runAt: waiting?.runAt }], 'the edits did not make it due')
  stack.clock.advance(100_000)
  await stack.drain()
  t.match(stack.microsoft.control.storedEvents(calendarId).find((event) => event['id'] === providerEventId), { subject: 'Lunch v3' })
  t.equal(stack.microsoft.control.counts().operations['event.update']?.statuses['200'], updatesBefore + 1, 'the latest version, in one PATCH')
  t.same(await stack.sync.syncJobQueue.list({ type: 'providerWrite' }), [])
  t.match(await stack.sync.syncConnections.get(connectionId), { providerRetryAt: null, unavailableStreak: 0 })
})

test('a newer version at Microsoft wins over an older change of the backend and goes to the backend instead', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const event = stack.microsoft.control.insertEvent(calendarId, SAMPLE_EVENTS.timed)
  const { userId } = await connectAndSync(stack)
  const lastUpdated = new Date(stack.clock.now().getTime() - 60_000).toISOString()
  const providerEventId = String(event.id)
  const batches = stack.backend.batches.length
  t.equal(await reportEventChange(stack, { userId, eventId: '6b0400000000000000000002', operation: 'update', idempotencyKey: 'older-0001', calendarId, subject: lunchWriteSubject(stack, { providerEventId, lastUpdated }) }), 202)
  await stack.drain()
  t.match(stack.microsoft.control.storedEvents(calendarId).find((item) => item['id'] === providerEventId), { subject: 'Dentist' }, 'Microsoft keeps its version')
  t.match(stack.backend.batches.slice(batches)[0]?.events, [{ providerEventId, content: { title: 'Dentist' } }])
})

test('429 with Retry-After: the pull waits as long as Graph asks, keeps its attempt, nothing is saved, and the next try gets the change', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const { connectionId } = await connectAndSync(stack)
  const cursor = (await stack.sync.syncCalendars.get(connectionId, calendarId))?.cursor
  stack.microsoft.control.armFault({ pathPrefix: '/v1.0/me/calendars', method: 'GET', status: 429, retryAfterSec: 300, count: 1 })
  const event = stack.microsoft.control.insertEvent(calendarId, SAMPLE_EVENTS.allDay)
  await stack.microsoft.notificationsSettled()
  const batches = stack.backend.batches.length
  await stack.drain()
  const [job] = await stack.sync.syncJobQueue.list()
  t.match(job, { type: 'pull', status: 'queued', attempts: 0, waitingForProvider: true, lastError: /unavailable.*429.*retry after 300/ })
  t.equal(job?.runAt.getTime(), stack.clock.now().getTime() + 300_000, 'Graph\'s Retry-After, longer than the backoff, is the wait')
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'delayed', reason: 'readFailure', providerRetryAt: job?.runAt })
  t.equal((await stack.sync.syncCalendars.get(connectionId, calendarId))?.cursor, cursor, 'the cursor is kept')
  t.equal(stack.backend.batches.length, batches)

  stack.clock.advance(299_000)
  await stack.drain()
  t.equal(stack.backend.batches.length, batches, 'nothing is asked before Graph said')
  stack.clock.advance(1_000)
  await stack.drain()
  t.same(await stack.sync.syncJobQueue.list(), [])
  t.match(stack.backend.batches.at(-1)?.events, [{ providerEventId: event.id }], 'the change arrived on the retry')
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy' })
})

test('revocation at Microsoft (invalid_grant): actionRequired, credential discarded, the backend told', async (t) => {
  const stack = await startStack(t)
  const { userId, connectionId } = await connectAndSync(stack)
  await revokeAtProviderAndPull(stack, stack.microsoft.control, ALICE, userId)
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'actionRequired', reason: 'authorizationRevoked' })
  t.equal(await stack.sync.syncCredentials.load(connectionId), null, 'credential discarded')
  // The revocation's reauthorizationRequired notification and the pull may each find the dead grant.
  t.ok(stack.backend.revocations.length >= 1, 'the backend was told, to revoke the user\'s sessions')
  t.ok(stack.backend.revocations.every((told) => told.userId === userId && told.provider === 'microsoft' && told.connectionId === connectionId))
})

test('an occurrence changed by the backend is found through its series and becomes an exception at Microsoft', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const series = stack.microsoft.control.insertEvent(calendarId, SAMPLE_EVENTS.series)
  const { userId } = await connectAndSync(stack)
  stack.clock.advance(60_000)
  const content = { title: 'Weekly review (moved)', startDate: '2026-11-30T11:00:00+01:00', endDate: '2026-11-30T12:00:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin' }
  t.equal(await reportEventChange(stack, {
    userId,
    eventId: '6b0400000000000000000003',
    operation: 'update',
    idempotencyKey: 'occurrence-0001',
    calendarId,
    subject: lunchWriteSubject(stack, { seriesProviderEventId: String(series.id), originalStartDate: '2026-11-30T09:00:00+01:00', content })
  }), 202)
  await stack.drain()
  t.same(await stack.sync.syncJobQueue.list({ type: 'providerWrite' }), [], 'the write is done')
  const master = stack.microsoft.control.storedEvents(calendarId).find((event) => event['id'] === series.id)
  t.match(master?.['exceptions'], [{ subject: 'Weekly review (moved)' }], 'the occurrence is an exception now')
})

test('a series whose stored rule carries EXDATEs from Microsoft: its pattern is compared and written without them', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const series = stack.microsoft.control.insertEvent(calendarId, SAMPLE_EVENTS.series)
  const seriesId = String(series.id)
  const { userId, connectionId } = await connectAndSync(stack)
  stack.microsoft.control.deleteEvent(calendarId, await occurrenceOn(stack, connectionId, seriesId, '2026-11-16'))
  await stack.microsoft.notificationsSettled()
  await stack.drain()
  const stored = stack.backend.events(calendarId).get(seriesId)?.content
  if (stored?.recurrence === undefined) throw new Error('no stored series')
  t.same(stored.recurrence, ['RRULE:FREQ=WEEKLY;BYDAY=MO;WKST=SU;COUNT=10', 'EXDATE:20261116T080000Z'])
  const master = (): Record<string, unknown> | undefined => stack.microsoft.control.storedEvents(calendarId).find((event) => event['id'] === seriesId)

  stack.clock.advance(60_000)
  const write = async (key: string, content: typeof stored): Promise<void> => {
    t.equal(await reportEventChange(stack, { userId, eventId: '6b0400000000000000000004', operation: 'update', idempotencyKey: key, calendarId, subject: lunchWriteSubject(stack, { providerEventId: seriesId, content }) }), 202)
    await stack.drain()
    t.same(await stack.sync.syncJobQueue.list({ type: 'providerWrite' }), [], 'the write is done')
  }
  await write('series-0001', { ...stored, title: 'Weekly review (renamed)' })
  t.match(master(), { subject: 'Weekly review (renamed)', recurrence: { range: { numberOfOccurrences: 10 } } }, 'the EXDATE is no change of the pattern')

  stack.clock.advance(60_000)
  await write('series-0002', { ...stored, title: 'Weekly review (renamed)', recurrence: ['RRULE:FREQ=WEEKLY;BYDAY=MO;WKST=SU;COUNT=6', 'EXDATE:20261116T080000Z'] })
  t.match(master(), { recurrence: { range: { type: 'numbered', numberOfOccurrences: 6 } } }, 'the new pattern reached Microsoft')
})

test('an event created and deleted here while Graph was away is deleted there: Microsoft\'s later lastModifiedDateTime is only our insert arriving', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const { userId } = await connectAndSync(stack)
  const eventId = '6b0400000000000000000013'
  const made = stack.clock.now().getTime()
  // Created here; the insert reaches Microsoft a minute later.
  t.equal(await reportEventChange(stack, { userId, eventId, calendarId, operation: 'create', idempotencyKey: 'create-0013', subject: lunchWriteSubject(stack, { lastUpdated: new Date(made).toISOString() }) }), 202)
  stack.clock.advance(60_000)
  await stack.drain()
  const inserted = stack.microsoft.control.storedEvents(calendarId).find((event) => event['subject'] === 'Lunch with Bo')
  t.ok(inserted, 'the event reached Microsoft')
  const providerEventId = String(inserted?.['id'])
  // Deleted here a second after it was made, before the insert arrived.
  t.equal(await reportEventChange(stack, { userId, eventId, operation: 'delete', idempotencyKey: 'delete-0013', calendarId, subject: lunchWriteSubject(stack, { providerEventId, lastUpdated: new Date(made + 1000).toISOString() }) }), 202)
  await stack.drain()
  t.match(stack.microsoft.control.storedEvents(calendarId).find((event) => event['id'] === providerEventId), { deleted: true }, 'the deletion made here reached Microsoft')

  // Another device's change after our write is Microsoft's newer version: an older change of ours loses.
  const otherId = '6b0400000000000000000014'
  t.equal(await reportEventChange(stack, { userId, eventId: otherId, calendarId, operation: 'create', idempotencyKey: 'create-0014', subject: lunchWriteSubject(stack, { lastUpdated: new Date(made + 2000).toISOString() }) }), 202)
  await stack.drain()
  const second = stack.microsoft.control.storedEvents(calendarId).find((event) => event['subject'] === 'Lunch with Bo' && event['deleted'] !== true)
  const secondId = String(second?.['id'])
  stack.clock.advance(60_000)
  stack.microsoft.control.patchEvent(calendarId, secondId, { subject: 'Renamed at Microsoft' })
  t.equal(await reportEventChange(stack, { userId, eventId: otherId, operation: 'delete', idempotencyKey: 'delete-0014', calendarId, subject: lunchWriteSubject(stack, { providerEventId: secondId, lastUpdated: new Date(made + 3000).toISOString() }) }), 202)
  await stack.drain()
  t.match(stack.microsoft.control.storedEvents(calendarId).find((event) => event['id'] === secondId), { subject: 'Renamed at Microsoft' }, 'Microsoft keeps the other device\'s newer change')
  t.notOk(stack.microsoft.control.storedEvents(calendarId).find((event) => event['id'] === secondId)?.['deleted'], 'and the event')
})

test('a deletion the backend reported before it learnt the id of our insert reaches the event that insert made', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const { userId } = await connectAndSync(stack)
  const eventId = '6b0400000000000000000015'
  t.equal(await reportEventChange(stack, { userId, eventId, calendarId, operation: 'create', idempotencyKey: 'create-0015', subject: lunchWriteSubject(stack) }), 202)
  await stack.drain()
  const inserted = stack.microsoft.control.storedEvents(calendarId).find((event) => event['subject'] === 'Lunch with Bo')
  t.ok(inserted, 'the insert reached Microsoft')
  // Deleted here while the insert was on its way: the report names no provider id.
  stack.clock.advance(1_000)
  t.equal(await reportEventChange(stack, { userId, eventId, calendarId, operation: 'delete', idempotencyKey: 'delete-0015', subject: lunchWriteSubject(stack) }), 202)
  await stack.drain()
  t.match(stack.microsoft.control.storedEvents(calendarId).find((event) => event['id'] === inserted?.['id']), { deleted: true }, 'the event is deleted at Microsoft')
})

test('a new series with exclusions (a "this and following" tail, another client\'s EXDATE): Graph gets the pattern, then loses the excluded occurrences', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const { userId, connectionId } = await connectAndSync(stack)
  const content = {
    title: 'Weekly review (new format)',
    startDate: '2026-11-24T12:00:00+01:00',
    endDate: '2026-11-24T13:00:00+01:00',
    isAllDay: false,
    timeZone: 'Europe/Berlin',
    recurrence: ['RRULE:FREQ=WEEKLY;COUNT=4', 'EXDATE;TZID=Europe/Berlin:20261201T120000']
  }
  t.equal(await reportEventChange(stack, { userId, eventId: '6b0400000000000000000031', calendarId, operation: 'create', idempotencyKey: 'series-exdate-1', subject: lunchWriteSubject(stack, { content }) }), 202)
  await stack.drain()
  const master = stack.microsoft.control.storedEvents(calendarId).find((event) => event['subject'] === content.title)
  t.match(master, { type: 'seriesMaster', recurrence: { pattern: { type: 'weekly' }, range: { type: 'numbered', numberOfOccurrences: 4 } } }, 'a series, not one event')
  const seriesId = String(master?.['id'])
  const instances = await graphGet<{ value: Array<{ start: { dateTime: string } }> }>(stack, connectionId, `/me/events/${seriesId}/instances?startDateTime=2026-11-20T00:00:00Z&endDateTime=2026-12-31T00:00:00Z`)
  t.same(instances.value.map((instance) => instance.start.dateTime.slice(0, 10)), ['2026-11-24', '2026-12-08', '2026-12-15'], 'three occurrences: 1 December is gone')
  t.same(await stack.sync.syncJobQueue.list({ type: 'providerWrite' }), [], 'the write is done')
})

test('a new series whose rule Graph has no pattern for is refused, never written as one event', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const { userId } = await connectAndSync(stack)
  const content = { title: 'Every hour at nine', startDate: '2026-11-24T09:00:00+01:00', endDate: '2026-11-24T09:30:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin', recurrence: ['RRULE:FREQ=DAILY;BYHOUR=9,10'] }
  t.equal(await reportEventChange(stack, { userId, eventId: '6b0400000000000000000032', calendarId, operation: 'create', idempotencyKey: 'series-hourly-1', subject: lunchWriteSubject(stack, { content }) }), 202)
  await stack.drain()
  t.equal(stack.microsoft.control.storedEvents(calendarId).filter((event) => event['subject'] === content.title).length, 0, 'nothing at Microsoft')
  t.same(await stack.sync.syncJobQueue.list({ type: 'providerWrite' }), [], 'and not tried again: the refusal is final')
  t.match(stack.backend.writeStates.at(-1), { eventId: '6b0400000000000000000032', issue: { provider: 'microsoft', reason: 'refused', retrying: false, message: 'Outlook refused this change: it is kept here only.' } }, 'the event shows it is not at Outlook')
})
