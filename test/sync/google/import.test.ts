// Importing a Google account through the Sync service into (a stand-in of) the backend's
// provider-events endpoint: what the backend gets, page by page, and a crash between pages.
import { test } from 'tap'
import type { ProviderEventBatch } from '../../../schemas/sync/index.js'
import { newUserId } from '../helper.js'
import { ALICE, begin, connectAndSync, consent, followCallback, SAMPLE_EVENTS, startStack } from './harness.js'
import type { Stack } from './harness.js'

/** Calendars as the stand-in names them: the primary one is the account's email. */
function calendarIds (stack: Stack): { primary: string, work: string, hidden: string } {
  const calendars = stack.google.control.listAccounts()[0]?.calendars ?? []
  return {
    primary: calendars.find((calendar) => calendar.primary)?.id ?? '',
    work: calendars.find((calendar) => calendar.summary === 'Work')?.id ?? '',
    hidden: calendars.find((calendar) => calendar.summary === 'Birthdays')?.id ?? ''
  }
}

function seedSample (stack: Stack, calendarId: string): { seriesId: string, movedId: string, cancelledId: string } {
  const { control } = stack.google
  control.insertEvent(calendarId, SAMPLE_EVENTS.timed)
  control.insertEvent(calendarId, SAMPLE_EVENTS.allDay)
  control.insertEvent(calendarId, SAMPLE_EVENTS.old)
  const series = control.insertEvent(calendarId, SAMPLE_EVENTS.series)
  const seriesId = String(series['id'])
  // The third occurrence moves an hour; the fourth is cancelled.
  const moved = control.patchEvent(calendarId, `${seriesId}_20261116T080000Z`, {
    start: { dateTime: '2026-11-16T10:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-11-16T11:00:00+01:00', timeZone: 'Europe/Berlin' }
  })
  const cancelled = control.deleteEvent(calendarId, `${seriesId}_20261123T080000Z`)
  return { seriesId, movedId: String(moved['id']), cancelledId: String(cancelled['id']) }
}

/** Runs the queued import with the backend failing the second batch handed to it; answers the user's connection then. */
async function importFailingOnSecondBatch (stack: Stack, userId: string) {
  let delivered = 0
  const original = stack.backend.batches.push.bind(stack.backend.batches)
  stack.backend.batches.push = (...items: ProviderEventBatch[]) => {
    delivered += items.length
    if (delivered === 1) stack.backend.failNext(1)
    return original(...items)
  }
  await stack.sync.syncJobWorker.tick()
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  return connection
}

test('import: every calendar (hidden ones too), the weeks around today first, then every page under one generation, the last complete', async (t) => {
  const stack = await startStack(t, {
    accounts: [{ email: ALICE, name: 'Alice', timeZone: 'Europe/Berlin', calendars: [{ summary: 'Work' }, { summary: 'Birthdays', hidden: true }] }]
  })
  const ids = calendarIds(stack)
  const { seriesId, movedId, cancelledId } = seedSample(stack, ids.primary)
  stack.google.control.insertEvent(ids.hidden, { summary: 'Ada', start: { date: '2026-12-10' }, end: { date: '2026-12-11' }, recurrence: ['RRULE:FREQ=YEARLY'] })

  const { userId, connectionId } = await connectAndSync(stack)
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy' })
  t.equal(stack.google.control.counts().operations['oauth2.token']?.total, 1, 'the code exchange\'s access token serves the import: no refresh before the weeks around today')

  const primary = stack.backend.batches.filter((batch) => batch.calendarId === ids.primary)
  t.ok(primary.every((batch) => batch.userId === userId && batch.connectionId === connectionId && batch.provider === 'google'))
  const imported = primary.filter((batch) => batch.generation !== undefined)
  t.equal(new Set(imported.map((batch) => batch.generation)).size, 1, 'one generation for the whole import')
  t.same(imported.map((batch) => batch.complete === true), [false, true], 'the window page, then the full page that completes it')
  const windowIds = imported[0]?.events.map((event) => event.providerEventId) ?? []
  t.notOk(windowIds.some((id) => imported[1]?.events.find((event) => event.providerEventId === id)?.content?.title === 'Last year'), 'last year is not in the first pass')
  t.equal(windowIds.length, 5, 'the first pass: today\'s weeks (timed, series and its two exceptions, and the holiday a month ahead)')

  t.same(imported[1]?.events.map((event) => event.content?.title), ['Last year'], 'the full pass hands over only what the window did not, unchanged events are not sent twice')
  const full = new Map(imported.flatMap((batch) => batch.events).map((event) => [event.providerEventId, event]))
  t.match(full.get(seriesId), {
    status: 'confirmed',
    iCalUID: /@google\.com$/,
    etag: /^".+"$/,
    updated: /Z$/,
    content: { title: 'Weekly review', isAllDay: false, timeZone: 'Europe/Berlin', startDate: '2026-11-02T09:00:00+01:00', recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10'] }
  })
  t.match(full.get(movedId), { recurringEventId: seriesId, originalStartDate: '2026-11-16T09:00:00+01:00', content: { startDate: '2026-11-16T10:00:00+01:00' } })
  t.match(full.get(cancelledId), { status: 'cancelled', recurringEventId: seriesId, originalStartDate: '2026-11-23T09:00:00+01:00' })
  t.notOk(full.get(cancelledId)?.content, 'a cancelled occurrence carries no content')
  const allDay = [...full.values()].find((event) => event.content?.title === 'Holiday')
  t.match(allDay?.content, { isAllDay: true, startDate: '2026-12-24', endDate: '2026-12-27', timeZone: 'Europe/Berlin' })
  t.equal(full.size, 6)
  t.equal(stack.backend.events(ids.hidden).size, 1, 'the hidden calendar is imported too')
  t.equal(stack.backend.events(ids.work).size, 0)
  t.ok(stack.backend.batches.some((batch) => batch.calendarId === ids.work && batch.complete === true && batch.events.length === 0), 'an empty calendar still completes its generation')

  const connection = await stack.sync.syncConnections.get(connectionId)
  t.match(connection?.importProgress, { phase: 'completed', operation: 'full', counts: { calendarsDone: 3, calendarsTotal: 3, eventsImported: 7 } })
  t.same((await stack.sync.syncWatches.listByConnection(connectionId)).map((watch) => watch.calendarId).sort(), Object.values(ids).sort(), 'one channel per calendar')
  t.equal(stack.google.control.listChannels().filter((channel) => channel.state === 'active').length, 3)
})

test('the full pass asks Google for its first page while the weeks around today are still on their way to the backend', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, name: 'Alice', timeZone: 'Europe/Berlin' }] })
  const primary = calendarIds(stack).primary
  seedSample(stack, primary)
  const lists = () => stack.google.control.counts().operations['calendar.events.list']?.total ?? 0
  let listsWhileWindowApplied: number | undefined
  stack.backend.beforeBatch(async (batch) => {
    if (listsWhileWindowApplied !== undefined || batch.calendarId !== primary || batch.generation === undefined) return
    // The window's batch, at a slow backend: the full pass's list comes meanwhile, or never does.
    const deadline = Date.now() + 3000
    while (lists() < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    listsWhileWindowApplied = lists()
  })
  await connectAndSync(stack)
  t.equal(listsWhileWindowApplied, 2, 'the window\'s list, and the full pass\'s first one, before the window\'s batch was applied')
  const imported = stack.backend.batches.filter((batch) => batch.calendarId === primary && batch.generation !== undefined)
  t.same(imported.map((batch) => batch.complete === true), [false, true], 'and the batches still arrive in order: the window\'s, then the full pass\'s')
  t.equal(stack.backend.events(primary).size, 6, 'every event of the calendar')
})

test('the window\'s batch refused while the full pass reads: nothing of the full pass is handed over, and the retry goes on from the window', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, name: 'Alice', timeZone: 'Europe/Berlin' }] })
  const primary = calendarIds(stack).primary
  seedSample(stack, primary)
  const userId = newUserId()
  await followCallback(await consent((await begin(stack, userId)).authorizationUrl, ALICE))
  stack.backend.failNext(1)
  await stack.sync.syncJobWorker.tick()
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  t.match(connection, { state: 'importing', reason: 'readFailure' }, 'the import failed on the window\'s batch and will run again')
  t.same(stack.backend.batches.filter((batch) => batch.calendarId === primary), [], 'no batch of the calendar was applied: the full pass handed nothing over')

  stack.clock.advance(60_000)
  await stack.drain()
  t.match(await stack.sync.syncConnections.get(connection?._id.toHexString() ?? ''), { state: 'healthy' })
  const imported = stack.backend.batches.filter((batch) => batch.calendarId === primary && batch.generation !== undefined)
  t.same(imported.map((batch) => batch.complete === true), [false, true], 'the retry: the window\'s batch, then the full pass\'s')
  t.equal(stack.backend.events(primary).size, 6, 'every event of the calendar')
})

test('small pages are handed over together, up to the batch size: fewer rounds for both services, and a crash resumes after the last batch handed over', async (t) => {
  const stack = await startStack(t, { pageSize: 4, importBatchEvents: 6, accounts: [{ email: ALICE, timeZone: 'UTC' }] })
  const events = Array.from({ length: 14 }, (_, n) => ({
    summary: `Event ${n}`,
    start: { date: `2025-0${1 + (n % 9)}-1${n % 10}` },
    end: { date: `2025-0${1 + (n % 9)}-2${n % 10}` }
  }))
  stack.google.control.seed(ALICE, { events })
  const userId = newUserId()
  await followCallback(await consent((await begin(stack, userId)).authorizationUrl, ALICE))

  // The full pass reads pages of 4, 4, 4 and 2: two pages make a batch of 8 (6 or more), then the
  // last two one of 6. The backend fails the second batch.
  const connection = await importFailingOnSecondBatch(stack, userId)
  t.match(connection, { state: 'importing', reason: 'readFailure' }, 'the import failed on a batch and will run again')
  t.same(stack.backend.batches.map((batch) => batch.events.length), [8], 'the first two pages were one batch')
  const connectionId = connection?._id.toHexString() ?? ''
  t.match((await stack.sync.syncCalendars.get(connectionId, ALICE))?.checkpoint, { pass: 'full', pageToken: /./, eventsImported: 8 }, 'the checkpoint is after the batch handed over, not after the pages read since')

  stack.clock.advance(60_000)
  await stack.drain()
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy' })
  const imported = stack.backend.batches.filter((batch) => batch.generation !== undefined)
  t.same(imported.map((batch) => [batch.events.length, batch.complete === true]), [[8, false], [6, true]], 'the resumed run went on after the batch handed over: the last pages as one batch, which completes the import')
  t.equal(new Set(imported.flatMap((batch) => batch.events.map((event) => event.providerEventId))).size, 14, 'no event twice')
  t.equal(stack.backend.events(ALICE).size, 14)
})

test('an event changed while the weeks around today are applied reaches the backend in its new version, once', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, name: 'Alice', timeZone: 'Europe/Berlin' }] })
  const ids = calendarIds(stack)
  const { seriesId } = seedSample(stack, ids.primary)
  let patched = false
  stack.backend.beforeBatch((batch) => {
    // The person edits the series at Google while the service hands over the window's page.
    if (!patched && batch.calendarId === ids.primary && batch.generation !== undefined && batch.complete !== true) {
      patched = true
      stack.google.control.patchEvent(ids.primary, seriesId, { summary: 'Weekly review (renamed)' })
    }
  })
  await connectAndSync(stack)
  const windowBatch = stack.backend.batches.findIndex((batch) => batch.calendarId === ids.primary && batch.generation !== undefined)
  t.ok(patched)
  t.equal(stack.backend.batches[windowBatch]?.events.find((event) => event.providerEventId === seriesId)?.content?.title, 'Weekly review', 'the window pass had the old version')
  // The full pass reads its first page while that batch is applied: it brings the new version, or,
  // when it read the page before the change, the first pull does (Google's sync token covers every
  // change made after the list's first page was read).
  const after = stack.backend.batches.slice(windowBatch + 1).flatMap((batch) => batch.events).filter((event) => event.providerEventId === seriesId)
  t.same(after.map((event) => event.content?.title), ['Weekly review (renamed)'], 'after it the new version is handed over once, the old one never again')
  t.equal(stack.backend.events(ids.primary).get(seriesId)?.content?.title, 'Weekly review (renamed)')
})

test('a crash between import pages resumes after the last applied page, with no duplicates', async (t) => {
  // Each page handed over on its own, as pages of the batch size are.
  const stack = await startStack(t, { pageSize: 4, importBatchEvents: 1, accounts: [{ email: ALICE, timeZone: 'UTC' }] })
  const calendarId = ALICE
  const events = Array.from({ length: 10 }, (_, n) => ({
    summary: `Event ${n}`,
    start: { date: `2025-0${1 + (n % 9)}-1${n % 10}` },
    end: { date: `2025-0${1 + (n % 9)}-2${n % 10}` }
  }))
  stack.google.control.seed(calendarId, { events })

  const userId = newUserId()
  const started = await begin(stack, userId)
  await followCallback(await consent(started.authorizationUrl, ALICE))

  // The full pass reads pages of 4, 4 and 2; the backend fails on the second page of it.
  const listsBefore = stack.google.control.counts().operations['calendar.events.list']?.total ?? 0
  // The window pass finds nothing, so nothing is handed over for it; the first batch is the first full page.
  const connection = await importFailingOnSecondBatch(stack, userId)
  t.match(connection, { state: 'importing', reason: 'readFailure' }, 'the import failed on a page and will run again')
  t.equal(stack.backend.batches.length, 1)

  stack.clock.advance(60_000)
  await stack.drain()
  t.match(await stack.sync.syncConnections.get(connection?._id.toHexString() ?? ''), { state: 'healthy' })
  const imported = stack.backend.batches.filter((batch) => batch.generation !== undefined)
  t.equal(new Set(imported.map((batch) => batch.generation)).size, 1, 'the resumed run keeps its generation')
  const fullPages = imported
  t.same(fullPages.map((batch) => batch.events.length), [4, 4, 2], 'each page once: the run went on after the applied page')
  const ids = fullPages.flatMap((batch) => batch.events.map((event) => event.providerEventId))
  t.equal(new Set(ids).size, 10, 'no event twice')
  t.equal(stack.backend.events(calendarId).size, 10)
  const lists = (stack.google.control.counts().operations['calendar.events.list']?.total ?? 0) - listsBefore
  // Window, the failed page and the one read ahead of it, then the three pages of the resumed run;
  // reading from the start again would add the window and the pages before the failure.
  t.ok(lists <= 7, `the resumed run did not read the calendar from the start again (${lists} lists)`)
})
