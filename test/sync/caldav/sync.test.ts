// After the import: changes another client makes on Radicale arrive on the timer's next pull
// (sync-collection), writes from the backend reach Radicale with If-Match, a 412 is resolved by
// the newer-wins rule, and a changed password makes the connection need the user.
import { test } from 'tap'
import type { ProviderWriteSubject } from '../../../schemas/sync/index.js'
import { allDayIcs, connectAndImport, ics, PASSWORD, POLL_MS, startCalDavStack, USER } from './harness.js'
import type { CalDavStack } from './harness.js'
import { radicaleMissing } from './radicale.js'

const missing = radicaleMissing()

/** The timer's pass once the poll interval has gone by, then the pulls it queued. */
async function nextPoll (stack: CalDavStack): Promise<number> {
  stack.clock.advance(POLL_MS + 1000)
  const queued = await stack.sync.syncEngine.pullOverdueCalendars()
  await stack.drain()
  return queued
}

async function seen (stack: CalDavStack, userId: string): Promise<void> {
  await stack.sync.syncActivity.touch([userId], stack.clock.now())
}

function subject (lastUpdated: string, title: string, extra: Partial<ProviderWriteSubject> = {}): ProviderWriteSubject {
  return {
    lastUpdated,
    content: { title, startDate: '2026-11-25T10:00:00+01:00', endDate: '2026-11-25T11:00:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin' },
    ...extra
  }
}

test('changes on Radicale arrive on the next poll; an idle poll changes nothing; a deleted resource leaves the backend', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t)
  await stack.radicale.put(`${stack.calendarUrl}holiday.ics`, USER, PASSWORD, allDayIcs())
  const { userId, connectionId } = await connectAndImport(stack)
  await seen(stack, userId)
  t.equal(stack.backend.events(stack.calendarUrl).size, 1)
  const cursor = (await stack.sync.syncCalendars.get(connectionId, stack.calendarUrl))?.cursor
  t.match(cursor, /^token:/, 'Radicale speaks RFC 6578: the cursor is its sync token')

  t.equal(await stack.sync.syncEngine.pullOverdueCalendars(), 0, 'not due before its interval')
  await stack.radicale.put(`${stack.calendarUrl}dentist.ics`, USER, PASSWORD, ics(['UID:dentist', 'DTSTAMP:20261121T000000Z', 'DTSTART:20261123T140000Z', 'DTEND:20261123T150000Z', 'SUMMARY:Dentist']))
  t.equal(await nextPoll(stack), 1, 'one pull for the calendar')
  t.match(stack.backend.events(stack.calendarUrl).get('/alice/work/dentist.ics'), { content: { title: 'Dentist', startDate: '2026-11-23T14:00:00Z' } })
  t.not((await stack.sync.syncCalendars.get(connectionId, stack.calendarUrl))?.cursor, cursor, 'the new sync token is stored')

  const batches = stack.backend.batches.length
  await seen(stack, userId)
  await nextPoll(stack)
  t.equal(stack.backend.batches.length, batches, 'an idle poll sends nothing')

  const gone = await fetch(`${stack.calendarUrl}dentist.ics`, { method: 'DELETE', headers: { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` } })
  t.equal(gone.status, 200)
  await seen(stack, userId)
  await nextPoll(stack)
  t.notOk(stack.backend.events(stack.calendarUrl).has('/alice/work/dentist.ics'), 'the deleted resource is gone at the backend')
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  t.equal(connection?.state, 'healthy')
})

test('writes: an insert reaches Radicale and links back; an update goes with If-Match; a 412 is re-read and the newer version wins', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t)
  const { userId, connectionId } = await connectAndImport(stack)
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  if (!connection) throw new Error('no connection')

  await stack.sync.syncEngine.queueProviderWrite(connection, { eventId: 'own-1', operation: 'create', calendarId: stack.calendarUrl, subject: subject('2026-11-21T10:00:00.000Z', 'Planning') })
  await stack.drain()
  const linked = stack.backend.batches.at(-1)?.events[0]
  t.match(linked, { eventId: 'own-1', content: { title: 'Planning', startDate: '2026-11-25T10:00:00+01:00', timeZone: 'Europe/Berlin' } }, 'the insert is told to the backend with its eventId')
  const href = String(linked?.providerEventId)
  const stored = await stack.radicale.get(`${stack.radicale.url}${href}`, USER, PASSWORD)
  t.equal(stored.status, 200)
  t.match(stored.body, /SUMMARY:Planning/)

  await stack.sync.syncEngine.queueProviderWrite(connection, { eventId: 'own-1', operation: 'update', calendarId: stack.calendarUrl, subject: subject('2026-11-21T11:00:00.000Z', 'Planning v2', { providerEventId: href }) })
  await stack.drain()
  t.match((await stack.radicale.get(`${stack.radicale.url}${href}`, USER, PASSWORD)).body, /SUMMARY:Planning v2/)

  // Another client changes the event between our read and our write: our PUT gets 412.
  let raced = false
  t.teardown(() => { stack.intercept(null) })
  stack.intercept(async (input, init, forward) => {
    if (!raced && init.method === 'PUT' && String(input).endsWith(href)) {
      raced = true
      const current = await stack.radicale.get(`${stack.radicale.url}${href}`, USER, PASSWORD)
      const newer = current.body.replace(/SUMMARY:[^\r\n]*/, 'SUMMARY:Changed elsewhere').replace(/LAST-MODIFIED:[^\r\n]*/, 'LAST-MODIFIED:20261121T130000Z')
      t.equal((await stack.radicale.put(`${stack.radicale.url}${href}`, USER, PASSWORD, newer)).status, 201)
    }
    return await forward(input, init)
  })
  const before = stack.backend.batches.length
  await stack.sync.syncEngine.queueProviderWrite(connection, { eventId: 'own-1', operation: 'update', calendarId: stack.calendarUrl, subject: subject('2026-11-21T12:00:00.000Z', 'Planning v3', { providerEventId: href }) })
  await stack.drain()
  t.ok(raced, 'the write met a concurrent change')
  t.match((await stack.radicale.get(`${stack.radicale.url}${href}`, USER, PASSWORD)).body, /SUMMARY:Changed elsewhere/, 'the newer change stays at the server')
  t.match(stack.backend.batches.slice(before).at(-1)?.events[0], { providerEventId: href, content: { title: 'Changed elsewhere' } }, 'and goes to the backend instead')
  stack.intercept(null)

  // A backend change newer than the server's: written, with the server's current etag.
  await stack.sync.syncEngine.queueProviderWrite(connection, { eventId: 'own-1', operation: 'update', calendarId: stack.calendarUrl, subject: subject('2026-11-21T14:00:00.000Z', 'Planning v4', { providerEventId: href }) })
  await stack.drain()
  t.match((await stack.radicale.get(`${stack.radicale.url}${href}`, USER, PASSWORD)).body, /SUMMARY:Planning v4/)

  await stack.sync.syncEngine.queueProviderWrite(connection, { eventId: 'own-1', operation: 'delete', calendarId: stack.calendarUrl, subject: { lastUpdated: '2026-11-21T15:00:00.000Z', providerEventId: href } })
  await stack.drain()
  t.equal((await stack.radicale.get(`${stack.radicale.url}${href}`, USER, PASSWORD)).status, 404, 'a delete removes the resource')
  t.same(await stack.sync.syncJobQueue.list(), [], 'no job left failing')
  t.equal((await stack.sync.syncConnections.get(connectionId))?.state, 'healthy')
})

test('a series written twice within one second, the first write a merge with another client\'s exclusion stamped ahead of our clock: each copy read back is dated after what it replaced, the cut after the merge', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t)
  // Clock 09:00:00 (the manual clock's start); the other client's clock is a second ahead of ours.
  const href = '/alice/work/weekly.ics'
  await stack.radicale.put(`${stack.radicale.url}${href}`, USER, PASSWORD, ics(['UID:weekly', 'DTSTAMP:20261121T090001Z', 'LAST-MODIFIED:20261121T090001Z', 'DTSTART:20261130T150000Z', 'DTEND:20261130T160000Z', 'RRULE:FREQ=WEEKLY', 'EXDATE:20261214T150000Z', 'SUMMARY:Standup']))
  const { userId } = await connectAndImport(stack)
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  if (!connection) throw new Error('no connection')
  const theirs = Date.parse('2026-11-21T09:00:01.000Z')
  // The version the backend's event was made on: the import's.
  const base = stack.backend.events(stack.calendarUrl).get(href)?.content
  t.match(base, { title: 'Standup' }, 'the series is imported')
  const series = (lastUpdated: string, title: string, rule: string): ProviderWriteSubject => ({
    lastUpdated, providerEventId: href, ...(base === undefined ? {} : { base }), content: { title, startDate: '2026-11-30T15:00:00Z', endDate: '2026-11-30T16:00:00Z', isAllDay: false, timeZone: 'UTC', recurrence: [rule] }
  })

  // The backend's rule leaves out the occurrence deleted at the server: the write keeps it, a merge.
  let before = stack.backend.batches.length
  await stack.sync.syncEngine.queueProviderWrite(connection, { eventId: 'series-1', operation: 'update', calendarId: stack.calendarUrl, subject: series('2026-11-21T09:00:00.321Z', 'Standup (team)', 'RRULE:FREQ=WEEKLY') })
  await stack.drain()
  const merge = stack.backend.batches.slice(before).at(-1)?.events[0]
  t.match(merge, { providerEventId: href, eventId: 'series-1', ownWrite: true, content: { title: 'Standup (team)' } }, 'the merge goes to the backend')
  t.match((await stack.radicale.get(`${stack.radicale.url}${href}`, USER, PASSWORD)).body, /EXDATE:20261214T150000Z/, 'the server keeps its exclusion')
  const merged = Date.parse(merge?.updated ?? '')
  t.ok(merged > theirs, `the merge (${merge?.updated}) is dated after the version it was made with`)
  t.ok(merged < theirs + 1000, 'and not a second later: a change the person makes in that second is the newer one')

  // "This and following", made here a moment after the title change, written over our own merge.
  await stack.sync.syncEngine.queueProviderWrite(connection, { eventId: 'series-1', operation: 'update', calendarId: stack.calendarUrl, subject: series('2026-11-21T09:00:00.527Z', 'Standup (team)', 'RRULE:FREQ=WEEKLY;UNTIL=20261213T235959Z') })
  await stack.drain()
  t.match((await stack.radicale.get(`${stack.radicale.url}${href}`, USER, PASSWORD)).body, /RRULE:FREQ=WEEKLY;UNTIL=20261213T235959Z/, 'the cut reaches the server')
  before = stack.backend.batches.length
  await seen(stack, userId)
  await nextPoll(stack)
  const cut = stack.backend.batches.slice(before).flatMap((batch) => batch.events).find((item) => item.providerEventId === href)
  t.match(cut, { eventId: 'series-1', ownWrite: true, content: { recurrence: ['RRULE:FREQ=WEEKLY;UNTIL=20261213T235959Z'] } }, 'the pull reads the cut back as our own copy')
  t.ok(Date.parse(cut?.updated ?? '') > merged, `dated (${cut?.updated}) after the merge it replaced, so a page holding the merge cannot win over it`)
})

test('a pull that read the version our write then replaced, handed over after that write: dated before the change the write carried, it cannot undo it', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t)
  const href = '/alice/work/lunch.ics'
  const url = `${stack.radicale.url}${href}`
  const lunch = (summary: string, modified: string) => ics(['UID:lunch', `DTSTAMP:${modified}`, `LAST-MODIFIED:${modified}`, 'DTSTART:20261125T120000Z', 'DTEND:20261125T130000Z', `SUMMARY:${summary}`])
  await stack.radicale.put(url, USER, PASSWORD, lunch('Lunch', '20261121T085000Z'))
  const { userId } = await connectAndImport(stack)
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  if (!connection) throw new Error('no connection')
  // Another client renames it at 09:00:03; the rename here (09:00:05) is written over that version
  // while a pull that read it is on its way.
  await stack.radicale.put(url, USER, PASSWORD, lunch('Lunch (other client)', '20261121T090003Z'))
  const carried = '2026-11-21T09:00:05.000Z'
  let raced = false
  t.teardown(() => { stack.intercept(null) })
  stack.intercept(async (input, init, forward) => {
    const answer = await forward(input, init)
    if (raced || init.method !== 'REPORT') return answer
    const body = await answer.text()
    if (body.includes('SUMMARY:Lunch (other client)')) {
      raced = true
      await stack.sync.syncEngine.queueProviderWrite(connection, { eventId: 'lunch-1', operation: 'update', calendarId: stack.calendarUrl, subject: subject(carried, 'Lunch (here)', { providerEventId: href, content: { title: 'Lunch (here)', startDate: '2026-11-25T12:00:00Z', endDate: '2026-11-25T13:00:00Z', isAllDay: false, timeZone: 'UTC' } }) })
      await stack.drain()
    }
    return new Response(body, { status: answer.status, headers: answer.headers })
  })
  const before = stack.backend.batches.length
  await seen(stack, userId)
  await nextPoll(stack)
  t.ok(raced, 'the write landed between the pull\'s read and its hand-over')
  t.match((await stack.radicale.get(url, USER, PASSWORD)).body, /SUMMARY:Lunch \(here\)/, 'the server holds the rename made here')
  const handed = stack.backend.batches.slice(before).flatMap((batch) => batch.events).filter((item) => item.providerEventId === href)
  const stale = handed.find((item) => item.content?.title === 'Lunch (other client)')
  t.ok(stale !== undefined, 'the pull hands over the version it read')
  t.ok(Date.parse(stale?.updated ?? '') < Date.parse(carried), `dated (${stale?.updated}) before the rename the write carried, so the backend keeps the rename`)
})

test('the password changes at the server: the next poll gets 401, the connection needs the user, the feed says so', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t)
  const { userId, connectionId } = await connectAndImport(stack)
  await seen(stack, userId)
  const before = (await stack.sync.syncFeed.page(userId, null, 1)).cursor
  await stack.radicale.setPassword(USER, 'a-new-password')
  await nextPoll(stack)
  const connection = await stack.sync.syncConnections.get(connectionId)
  t.match(connection, { state: 'actionRequired', reason: 'authorizationRevoked' })
  const { invalidations } = await stack.sync.syncFeed.page(userId, before, 100)
  t.match(invalidations.filter((entry) => entry.kind === 'connection'), [{ connectionId, provider: 'caldav', state: 'actionRequired', reason: 'authorizationRevoked' }], 'the revocation reaches the stream through the feed')
  t.same(stack.backend.revocations, [], 'an app password is no sign-in grant: the user\'s sessions are not ended')
  t.equal(await stack.sync.syncCredentials.load(connectionId), null, 'the refused password is discarded')
})
