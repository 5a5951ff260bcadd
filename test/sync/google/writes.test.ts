// Own-data changes reported by the backend reaching Google, and watch maintenance (Sync's own and
// POST /maintenance with an ID token).
import { test } from 'tap'
import Fastify from 'fastify'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { lunchWriteSubject, reportEventChange } from '../provider-harness.js'
import { ALICE, connectAndSync, SAMPLE_EVENTS, startStack } from './harness.js'

test('provider writes: an own event of the primary calendar is inserted there and linked, then patched and deleted with If-Match', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'Europe/Berlin' }] })
  const { userId, connectionId } = await connectAndSync(stack)
  const eventId = '6b0400000000000000000001'
  const batches = stack.backend.batches.length

  t.equal(await reportEventChange(stack, { userId, eventId, calendarId: ALICE, operation: 'create', idempotencyKey: 'create-0001', subject: lunchWriteSubject(stack) }), 202)
  await stack.drain()
  await stack.google.notificationsSettled()
  await stack.drain()
  const inserted = stack.google.control.storedEvents(ALICE).find((event) => event['summary'] === 'Lunch with Bo')
  t.ok(inserted, 'the event reached the primary calendar')
  t.match(inserted, { start: { dateTime: '2026-11-24T12:00:00+01:00', timeZone: 'Europe/Berlin' }, extendedProperties: { private: { calendarEventId: eventId } } })
  const [link, echo, ...more] = stack.backend.batches.slice(batches)
  t.match(link, { calendarId: ALICE, events: [{ providerEventId: inserted?.['id'], eventId, status: 'confirmed', etag: /.+/ }] }, 'one batch tells the backend the new provider id')
  t.equal(link?.generation, undefined)
  // Google's notification of our own write comes back as a pull: the backend finds it unchanged.
  t.match(echo?.events, [{ providerEventId: inserted?.['id'], eventId, etag: link?.events[0]?.etag }], 'the echo says what Google holds, with our id')
  t.same(more, [])

  const providerEventId = String(inserted?.['id'])
  // Another device adds a description; the rename here, a minute later, is written over that version.
  stack.clock.advance(30_000)
  const theirs = stack.google.control.patchEvent(ALICE, providerEventId, { description: 'bring the slides' })
  stack.clock.advance(30_000)
  t.equal(await reportEventChange(stack, {
    userId, eventId, operation: 'update', idempotencyKey: 'update-0001', calendarId: ALICE, subject: lunchWriteSubject(stack, { providerEventId, content: { ...lunchWriteSubject(stack).content!, title: 'Lunch with Bo and Cy' } })
  }), 202)
  await stack.drain()
  t.match(stack.google.control.storedEvents(ALICE).find((event) => event['id'] === providerEventId), { summary: 'Lunch with Bo and Cy', status: 'confirmed' })
  // A page read before the rename arrived can hold the other device's version: older than the rename.
  const own = await stack.sync.syncWrittenVersions.ownWritesOf(connectionId, [{ eventId, providerEventId }])
  t.match(own.byEventId.get(eventId)?.earlier?.[0], { version: theirs['etag'] }, 'the version the write was made over is kept as older than it')

  stack.clock.advance(60_000)
  t.equal(await reportEventChange(stack, { userId, eventId, operation: 'delete', idempotencyKey: 'delete-0001', calendarId: ALICE, subject: lunchWriteSubject(stack, { providerEventId }) }), 202)
  await stack.drain()
  t.match(stack.google.control.storedEvents(ALICE).find((event) => event['id'] === providerEventId), { status: 'cancelled' })
  // Google's notification of the delete asks for a pull, which runs once it has arrived.
  await stack.google.notificationsSettled()
  await stack.drain()
  t.same(await stack.sync.syncJobQueue.list(), [])
  t.match(await stack.sync.syncConnections.get(connectionId), { state: 'healthy' })
})

test('a change made at Google after ours wins; a rate-limited write retries on the ladder; an occurrence is written by its instance id', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'Europe/Berlin' }] })
  const series = stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.series)
  const seriesId = String(series['id'])
  const { userId } = await connectAndSync(stack)
  const eventId = '6b0400000000000000000002'

  // Ours is older than Google's latest change: Google's version goes to the backend instead.
  stack.clock.advance(60_000)
  stack.google.control.patchEvent(ALICE, seriesId, { summary: 'Renamed at Google' })
  const older = new Date(stack.clock.now().getTime() - 30_000).toISOString()
  await reportEventChange(stack, { userId, eventId, operation: 'update', idempotencyKey: 'update-0002', calendarId: ALICE, subject: lunchWriteSubject(stack, { providerEventId: seriesId, lastUpdated: older }) })
  await stack.drain()
  t.match(stack.google.control.storedEvents(ALICE)[0], { summary: 'Renamed at Google' }, 'Google keeps the newer change')
  t.ok(stack.backend.batches.some((batch) => batch.events.some((event) => event.providerEventId === seriesId && event.content?.title === 'Renamed at Google' && event.eventId === eventId)), 'the backend is told Google\'s version')

  // One occurrence moved by the user: it becomes an exception at Google. The first try is rate limited.
  stack.clock.advance(60_000)
  stack.google.control.armFault({ pathPrefix: '/calendar/v3/calendars', status: 429, reason: 'rateLimitExceeded', count: 1 })
  await reportEventChange(stack, {
    userId,
    eventId: '6b0400000000000000000003',
    operation: 'update',
    idempotencyKey: 'update-0003',
    calendarId: ALICE,
    subject: lunchWriteSubject(stack, {
      seriesProviderEventId: seriesId,
      originalStartDate: '2026-11-16T09:00:00+01:00',
      content: { title: 'Renamed at Google', startDate: '2026-11-16T11:00:00+01:00', endDate: '2026-11-16T12:00:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin' }
    })
  })
  await stack.drain()
  t.match(await stack.sync.syncJobQueue.list({ type: 'providerWrite' }), [{ status: 'queued', attempts: 0, waitingForProvider: true, lastError: /429/ }], 'the write waits for Google, its attempt kept')
  stack.clock.advance(60_000)
  await stack.drain()
  t.same(await stack.sync.syncJobQueue.list({ type: 'providerWrite' }), [])
  t.match(stack.google.control.storedEvents(ALICE).find((event) => event['id'] === `${seriesId}_20261116T080000Z`), {
    recurringEventId: seriesId, start: { dateTime: '2026-11-16T11:00:00+01:00' }
  })
})

test('watch maintenance: channels expiring soon are renewed for active users and stopped for inactive ones; POST /maintenance needs the issuer\'s ID token', async (t) => {
  // An OpenID Connect issuer of the test's own, as a scheduler's would be.
  const { publicKey, privateKey } = await generateKeyPair('RS256')
  const issuerServer = Fastify()
  const jwk = { ...await exportJWK(publicKey), kid: 'k1', alg: 'RS256', use: 'sig' }
  let issuer = ''
  issuerServer.get('/.well-known/openid-configuration', async () => ({ issuer, jwks_uri: `${issuer}/keys` }))
  issuerServer.get('/keys', async () => ({ keys: [jwk] }))
  await issuerServer.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => issuerServer.close())
  const address = issuerServer.server.address()
  issuer = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  const caller = 'scheduler@project.iam.example.com'

  const stack = await startStack(t, {
    accounts: [{ email: ALICE, timeZone: 'UTC' }, { email: 'bo@example.com', timeZone: 'UTC' }],
    sync: { maintenanceIssuer: issuer, maintenanceCaller: caller, inactiveUserDays: 5 }
  })
  const alice = await connectAndSync(stack, ALICE)
  const bo = await connectAndSync(stack, 'bo@example.com')
  const [aliceWatch] = await stack.sync.syncWatches.listByConnection(alice.connectionId)
  const [boWatch] = await stack.sync.syncWatches.listByConnection(bo.connectionId)

  const token = async (claims: Record<string, unknown>, audience = `${stack.syncUrl}/maintenance`) => await new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(issuer).setAudience(audience).setIssuedAt().setExpirationTime('5m').sign(privateKey)
  const maintain = async (authorization?: string) => await fetch(`${stack.syncUrl}/maintenance`, { method: 'POST', headers: authorization === undefined ? {} : { authorization } })

  t.equal((await maintain()).status, 401, 'no token')
  t.equal((await maintain(`Bearer ${await token({ email: 'someone@else.example' })}`)).status, 401, 'another caller')
  t.equal((await maintain(`Bearer ${await token({ email: caller }, 'https://elsewhere.example/maintenance')}`)).status, 401, 'another audience')
  const nothingDue = await maintain(`Bearer ${await token({ email: caller })}`)
  t.equal(nothingDue.status, 200)
  t.same(await nothingDue.json(), { renewed: 0, stopped: 0, failed: 0 }, 'no channel expires soon')

  // Six and a half days on: Alice polled her stream yesterday; Bo was last seen connecting, more
  // than the 5 configured days ago.
  stack.clock.advance(6.5 * 24 * 60 * 60_000)
  await stack.sync.syncActivity.touch([alice.userId], new Date(stack.clock.now().getTime() - 24 * 60 * 60_000))
  const answer = await maintain(`Bearer ${await token({ email: caller })}`)
  t.same(await answer.json(), { renewed: 1, stopped: 1, failed: 0 })
  const [renewed] = await stack.sync.syncWatches.listByConnection(alice.connectionId)
  t.ok(renewed && renewed._id !== aliceWatch?._id, 'Alice has a new channel')
  t.same(await stack.sync.syncWatches.listByConnection(bo.connectionId), [], 'Bo has none')
  const channels = stack.google.control.listChannels()
  t.equal(channels.find((channel) => channel.id === aliceWatch?._id)?.state, 'stopped')
  t.equal(channels.find((channel) => channel.id === boWatch?._id)?.state, 'stopped')
  t.equal(channels.find((channel) => channel.id === renewed?._id)?.state, 'active')
  t.match(await stack.sync.syncJobQueue.list(), [{ type: 'pull', connectionId: alice.connectionId }], 'a renewal pulls in case a change fell between two channels')

  // The service runs the same pass itself.
  t.same(await stack.sync.syncMaintenance.run(), { renewed: 0, stopped: 0, failed: 0 })
})

test('a change made here before our own insert reached Google is written: Google\'s later `updated` is only that insert arriving', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'Europe/Berlin' }] })
  const { userId } = await connectAndSync(stack)
  const eventId = '6b0400000000000000000003'
  const made = stack.clock.now().getTime()
  // Created here, and renamed here at once; the insert reaches Google a minute after both.
  await reportEventChange(stack, { userId, eventId, calendarId: ALICE, operation: 'create', idempotencyKey: 'create-0003', subject: lunchWriteSubject(stack, { lastUpdated: new Date(made).toISOString() }) })
  stack.clock.advance(60_000)
  await stack.drain()
  const inserted = stack.google.control.storedEvents(ALICE).find((event) => event['summary'] === 'Lunch with Bo')
  t.ok(inserted, 'the first version reached Google')
  const providerEventId = String(inserted?.['id'])
  const renamed = { ...lunchWriteSubject(stack).content!, title: 'Lunch with Bo, renamed' }
  await reportEventChange(stack, { userId, eventId, operation: 'update', idempotencyKey: 'update-0003', calendarId: ALICE, subject: lunchWriteSubject(stack, { providerEventId, lastUpdated: new Date(made + 1000).toISOString(), content: renamed }) })
  await stack.drain()
  t.match(stack.google.control.storedEvents(ALICE).find((event) => event['id'] === providerEventId), { summary: 'Lunch with Bo, renamed' }, 'the rename made here reached Google')

  // Another device's change after our write is Google's newer version again: an older change of ours loses.
  stack.clock.advance(60_000)
  stack.google.control.patchEvent(ALICE, providerEventId, { summary: 'Renamed at Google' })
  await reportEventChange(stack, { userId, eventId, operation: 'update', idempotencyKey: 'update-0004', calendarId: ALICE, subject: lunchWriteSubject(stack, { providerEventId, lastUpdated: new Date(made + 2000).toISOString(), content: { ...renamed, title: 'Older edit here' } }) })
  await stack.drain()
  t.match(stack.google.control.storedEvents(ALICE).find((event) => event['id'] === providerEventId), { summary: 'Renamed at Google' }, 'Google keeps the other device\'s newer change')
})
