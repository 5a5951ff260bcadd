// Connecting a CalDAV account through Sync's internal route, against a real Radicale: discovery,
// the password checked before anything is stored, the credential encrypted, then the import.
import { test } from 'tap'
import { newUserId } from '../helper.js'
import { allDayIcs, connectAndImport, connectCalDav, internalPost, PASSWORD, seriesIcs, startCalDavStack, USER } from './harness.js'
import { radicaleMissing } from './radicale.js'

const missing = radicaleMissing()

test('a wrong password and a URL without CalDAV: the same 422 CALDAV_CONNECT_FAILED, after at least a second, and nothing stored', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t)
  const userId = newUserId()
  let began = Date.now()
  const refused = await connectCalDav(stack, userId, { serverUrl: stack.radicale.url, username: USER, password: 'wrong' })
  t.ok(Date.now() - began >= 990, 'a refused password answers no sooner than a second')
  t.equal(refused.statusCode, 422)
  t.equal(refused.body['code'], 'CALDAV_CONNECT_FAILED')
  t.same(await stack.sync.syncConnections.listByUser(userId), [], 'no connection')
  t.equal(await stack.sync.syncDb.db.collection('credentials').countDocuments({ userId }), 0, 'no credential')
  began = Date.now()
  const nowhere = await connectCalDav(stack, userId, { serverUrl: `${stack.syncUrl}/nothing`, username: USER, password: PASSWORD })
  t.ok(Date.now() - began >= 990, 'nor does a server without CalDAV')
  t.equal(nowhere.statusCode, 422)
  t.same(nowhere.body, refused.body, 'the same answer: it tells nothing of what listens there')
  t.same(await stack.sync.syncConnections.listByUser(userId), [])
  t.notOk(stack.logs.some((line) => JSON.stringify(line).includes(PASSWORD) || JSON.stringify(line).includes('wrong')), 'no password in a log line')
})

test('right password: stored encrypted, the import reads a series with an override and an EXDATE and an all-day event; the connection is healthy and unwatched', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t)
  await stack.radicale.put(`${stack.calendarUrl}series.ics`, USER, PASSWORD, seriesIcs())
  await stack.radicale.put(`${stack.calendarUrl}holiday.ics`, USER, PASSWORD, allDayIcs())
  const userId = newUserId()
  const answer = await connectCalDav(stack, userId, { serverUrl: stack.radicale.url, username: USER, password: PASSWORD })
  t.equal(answer.statusCode, 200)
  t.match(answer.body, { created: true, calendars: 1 })
  const connectionId = String(answer.body['connectionId'])
  const row = await stack.sync.syncDb.db.collection('credentials').findOne({ userId })
  t.ok(row, 'a credential is stored')
  t.notOk(JSON.stringify(row).includes(PASSWORD), 'the password is not stored in clear')
  t.match(await stack.sync.syncCredentials.load(connectionId), { serverUrl: `${stack.radicale.url}/`, username: USER, password: PASSWORD, homeUrl: `${stack.radicale.url}/${USER}/` })

  await stack.drain()
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  t.equal(connection?.state, 'healthy')
  t.same(await stack.sync.syncWatches.listByConnection(connectionId), [], 'CalDAV has no channels')
  const events = stack.backend.events(stack.calendarUrl)
  const series = events.get('/alice/work/series.ics')
  t.match(series, {
    iCalUID: 'series-1',
    status: 'confirmed',
    content: { title: 'Weekly review', startDate: '2026-11-02T09:00:00+01:00', endDate: '2026-11-02T10:00:00+01:00', recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10', 'EXDATE;TZID=Europe/Berlin:20261116T090000'], timeZone: 'Europe/Berlin' }
  })
  t.match(events.get('/alice/work/series.ics#2026-11-09T09:00:00+01:00'), {
    recurringEventId: '/alice/work/series.ics',
    originalStartDate: '2026-11-09T09:00:00+01:00',
    content: { title: 'Weekly review (moved)', startDate: '2026-11-09T11:00:00+01:00' }
  })
  t.match(events.get('/alice/work/holiday.ics'), { content: { title: 'Holiday', startDate: '2026-12-24', endDate: '2026-12-27', isAllDay: true } })
  t.equal(events.size, 3)
  t.ok(stack.backend.batches.some((batch) => batch.complete === true), 'the import ends its generation')

  // The same account again repairs the same connection instead of making a second one.
  const again = await connectCalDav(stack, userId, { serverUrl: stack.radicale.url, username: USER, password: PASSWORD })
  t.match(again.body, { connectionId, created: false })
  t.equal((await stack.sync.syncConnections.listByUser(userId)).length, 1)
})

test('without sync.credentialEncryptionKey: 400 CREDENTIAL_ENCRYPTION_KEY_MISSING', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t, { sync: { credentialEncryptionKey: undefined } })
  const userId = newUserId()
  const answer = await connectCalDav(stack, userId, { serverUrl: stack.radicale.url, username: USER, password: PASSWORD })
  t.equal(answer.statusCode, 400)
  t.equal(answer.body['code'], 'CREDENTIAL_ENCRYPTION_KEY_MISSING')
  t.same(await stack.sync.syncConnections.listByUser(userId), [])
})

test('an OAuth begin for CalDAV is refused with 400 naming the password route, and nothing is kept', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t)
  const userId = newUserId()
  const answer = await internalPost(stack, userId, `/internal/users/${userId}/connections/begin`, { provider: 'caldav', intent: 'connect' })
  t.equal(answer.statusCode, 400)
  t.match(answer.body, { code: 'VALIDATION', message: /POST \/api\/connections\/caldav/ })
  t.equal(await stack.sync.syncDb.db.collection('oauthAttempts').countDocuments({ userId }), 0, 'no authorization attempt')
})

test('a connection from before accounts were recorded is found by its stored credential, repaired, and its account recorded', { skip: missing ?? false }, async (t) => {
  const stack = await startCalDavStack(t)
  const { userId, connectionId } = await connectAndImport(stack)
  const account = (await stack.sync.syncConnections.get(connectionId))?.account
  t.equal(account, `${USER}@${stack.radicale.url}/`, 'a new connection names its account (no secret)')
  await stack.sync.syncDb.db.collection('connections').updateOne({ userId }, { $unset: { account: '' } })
  const again = await connectCalDav(stack, userId, { serverUrl: stack.radicale.url, username: USER, password: PASSWORD })
  t.equal(again.statusCode, 200)
  t.match(again.body, { created: false, connectionId })
  t.equal((await stack.sync.syncConnections.get(connectionId))?.account, account, 'recorded at the repair')
  t.equal((await stack.sync.syncConnections.listByUser(userId)).length, 1)
})
