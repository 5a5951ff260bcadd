import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import { ObjectId } from 'mongodb'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { startSyncService } from './sync-service.js'

const CLOUD_EVENT = {
  title: 'Board meeting',
  startDate: '2026-04-01T10:00:00Z',
  endDate: '2026-04-01T11:00:00Z',
  calendarId: 'primary'
}

function id (): string {
  return randomBytes(12).toString('hex')
}

// One backend app for the whole file: the session library keeps one configuration per process.
test('mutations of provider calendar events are refused before anything is written', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const sync = await startSyncService(t, deps.databaseUri(`sync_${randomBytes(4).toString('hex')}`))
  const { app, log } = await buildApp(t, deps, { syncUrl: sync.url, internalAuthToken: sync.internalAuthToken })
  const events = app.mongo.db.collection<{ _id: string, title: string }>('events')
  const outbox = app.mongo.db.collection('syncOutbox')

  async function userWithProvider (label: string) {
    const signedIn = await signUp(app, { email: uniqueEmail(label), password: 'correct horse 9' })
    await app.mongo.db.collection('users').updateOne(
      { _id: new ObjectId(signedIn.userId) },
      { $set: { google: { googleId: `google-${label}-${id()}`, gRefreshToken: 'stored-refresh-token' } } }
    )
    return signedIn
  }

  /** A connection as Sync stores it, holding the calendars named (as its import found them). */
  async function connection (userId: string, state: string, reason: string | null, provider = 'google', calendarIds = ['primary']): Promise<ObjectId> {
    const now = new Date()
    const connectionId = new ObjectId()
    for (const calendarId of calendarIds) {
      await sync.db.collection<{ _id: string, [field: string]: unknown }>('calendars').insertOne({
        _id: `${connectionId.toHexString()}:${calendarId}`,
        connectionId: connectionId.toHexString(),
        userId,
        calendarId,
        name: calendarId,
        primary: calendarId === calendarIds[0],
        timeZone: 'UTC',
        color: null,
        cursor: null,
        generation: 1,
        expiryStreak: 0,
        importedInRun: null,
        checkpoint: null,
        lastUpdatedAt: now
      })
    }
    await sync.db.collection('connections').insertOne({
      _id: connectionId,
      userId,
      provider,
      state,
      reason,
      lastReadFailureAt: null,
      lastSyncedAt: null,
      lastHealthyAt: null,
      importProgress: null,
      createdAt: now,
      updatedAt: now
    })
    return connectionId
  }

  const call = (headers: Record<string, string>) => ({
    post: async (payload: object) => await app.inject({ method: 'POST', url: '/api/event', headers, payload }),
    put: async (eventId: string, payload: object) => await app.inject({ method: 'PUT', url: `/api/event/${eventId}`, headers, payload }),
    delete: async (eventId: string) => await app.inject({ method: 'DELETE', url: `/api/event/${eventId}`, headers })
  })

  await t.test('410 CONNECTION_REVOKED when the grant is revoked', async (t) => {
    const eve = await userWithProvider('eve')
    const asEve = call(eve.headers)
    const connectionId = await connection(eve.userId, 'healthy', null)
    const existing = id()
    t.equal((await asEve.post({ ...CLOUD_EVENT, _id: existing })).statusCode, 204, 'allowed while the connection is healthy')
    await app.outbox.flush(eve.userId)
    t.equal((await sync.reports(eve.userId)).length, 1, 'Sync has the report of the create')
    await sync.db.collection('connections').updateOne({ _id: connectionId }, { $set: { state: 'actionRequired', reason: 'authorizationRevoked' } })
    const storedBefore = await events.findOne({ eventId: existing })

    const fresh = id()
    for (const [name, response] of [
      ['POST', await asEve.post({ ...CLOUD_EVENT, _id: fresh })],
      ['PUT', await asEve.put(existing, { ...CLOUD_EVENT, title: 'moved' })],
      ['DELETE', await asEve.delete(existing)]
    ] as const) {
      t.equal(response.statusCode, 410, name)
      t.match(response.json(), { statusCode: 410, code: 'CONNECTION_REVOKED', error: 'Gone', connectionId: connectionId.toHexString() }, name)
    }
    t.equal(await events.findOne({ eventId: fresh }), null, 'nothing created')
    t.same(await events.findOne({ eventId: existing }), storedBefore, 'nothing changed')
    t.equal(await outbox.countDocuments({ user: eve.userId }), 0, 'nothing waits to be reported')
    t.equal((await sync.reports(eve.userId)).length, 1, 'and nothing was reported')

    const local = id()
    t.equal((await asEve.post({ ...CLOUD_EVENT, calendarId: undefined, _id: local })).statusCode, 204, 'an event of no provider calendar is not a cloud edit')
    t.ok(await events.findOne({ eventId: local }))
  })

  await t.test('410 CONNECTION_REVOKED for an event of a CalDAV account whose password was withdrawn', async (t) => {
    // A CalDAV account keeps its credential at the Sync service only: the user record holds no
    // refresh token, the imported event its provider copy's id.
    const ivy = await signUp(app, { email: uniqueEmail('ivy'), password: 'correct horse 7' })
    const asIvy = call(ivy.headers)
    const imported = id()
    t.equal((await asIvy.post({ ...CLOUD_EVENT, calendarId: '/ivy/home/', _id: imported })).statusCode, 204)
    await events.updateOne({ eventId: imported }, { $set: { providerEventId: '/ivy/home/board.ics' } })
    const healthy = await connection(ivy.userId, 'healthy', null, 'caldav', ['/ivy/home/'])
    t.equal((await asIvy.put(imported, { ...CLOUD_EVENT, calendarId: '/ivy/home/', title: 'agenda' })).statusCode, 204, 'allowed while the account answers')
    await sync.db.collection('connections').updateOne({ _id: healthy }, { $set: { state: 'actionRequired', reason: 'authorizationRevoked' } })
    const storedBefore = await events.findOne({ eventId: imported })

    const refused = await asIvy.delete(imported)
    t.equal(refused.statusCode, 410)
    t.match(refused.json(), { code: 'CONNECTION_REVOKED', connectionId: healthy.toHexString() })
    t.same(await events.findOne({ eventId: imported }), storedBefore, 'nothing changed')
  })

  await t.test('410 answers for the calendar\'s own connection only, whatever the user\'s other connections', async (t) => {
    const jo = await userWithProvider('jo')
    const asJo = call(jo.headers)
    const google = await connection(jo.userId, 'healthy', null, 'google', ['jo@example.com'])
    const caldav = await connection(jo.userId, 'healthy', null, 'caldav', ['/jo/home/'])
    const atGoogle = id()
    const atCaldav = id()
    t.equal((await asJo.post({ ...CLOUD_EVENT, calendarId: 'jo@example.com', _id: atGoogle })).statusCode, 204)
    t.equal((await asJo.post({ ...CLOUD_EVENT, calendarId: '/jo/home/', _id: atCaldav })).statusCode, 204)

    await sync.db.collection('connections').updateOne({ _id: google }, { $set: { state: 'actionRequired', reason: 'authorizationRevoked' } })
    const refused = await asJo.put(atGoogle, { ...CLOUD_EVENT, calendarId: 'jo@example.com', title: 'moved' })
    t.equal(refused.statusCode, 410, 'the Google event, though the CalDAV account is live')
    t.match(refused.json(), { code: 'CONNECTION_REVOKED', connectionId: google.toHexString() })
    t.equal((await asJo.put(atCaldav, { ...CLOUD_EVENT, calendarId: '/jo/home/', title: 'moved' })).statusCode, 204, 'the CalDAV event, though the Google grant is revoked')
    t.equal((await asJo.post({ ...CLOUD_EVENT, calendarId: undefined, _id: id() })).statusCode, 204, 'an own event')

    await sync.db.collection('connections').updateOne({ _id: google }, { $set: { state: 'healthy', reason: null } })
    await sync.db.collection('connections').updateOne({ _id: caldav }, { $set: { state: 'actionRequired', reason: 'authorizationRevoked' } })
    t.equal((await asJo.delete(atCaldav)).statusCode, 410, 'and the other way round')
    t.equal((await asJo.delete(atGoogle)).statusCode, 204)
  })

  await t.test('a new event in a calendar the user does not hold is 400, and nothing is written or reported', async (t) => {
    const kim = await userWithProvider('kim')
    const lee = await userWithProvider('lee')
    await connection(kim.userId, 'healthy', null, 'caldav', ['https://dav.example.com/kim/home/'])
    await connection(lee.userId, 'healthy', null, 'google', ['lee@example.com'])
    const asKim = call(kim.headers)
    for (const calendarId of ['lee@example.com', 'http://127.0.0.1:27017/', 'https://dav.example.com/kim/home/../../lee/home/']) {
      const eventId = id()
      const refused = await asKim.post({ ...CLOUD_EVENT, calendarId, _id: eventId })
      t.equal(refused.statusCode, 400, calendarId)
      t.match(refused.json(), { code: 'EVENT_INVALID', message: 'body/calendarId must be one of your calendars (GET /api/calendars)' })
      t.equal(await events.findOne({ eventId }), null, 'nothing written')
    }
    const batch = await asKim.post([{ ...CLOUD_EVENT, calendarId: 'https://dav.example.com/kim/home/', _id: id() }, { ...CLOUD_EVENT, calendarId: 'lee@example.com', _id: id() }])
    t.equal(batch.statusCode, 400, 'one unknown calendar refuses the whole batch')
    t.match(batch.json(), { message: 'body/1/calendarId must be one of your calendars (GET /api/calendars)' })
    t.equal(await outbox.countDocuments({ user: kim.userId }), 0, 'nothing reported')
    t.equal((await asKim.post({ ...CLOUD_EVENT, calendarId: 'https://dav.example.com/kim/home/', _id: id() })).statusCode, 204, 'the user\'s own calendar')
  })

  await t.test('503 MAINTENANCE for cloud edits while Sync is in maintenance', async (t) => {
    await sync.stop()
    await sync.start({ cloudMutationMode: 'maintenance' })
    const finn = await userWithProvider('finn')
    await connection(finn.userId, 'healthy', null)
    const asFinn = call(finn.headers)
    const eventId = id()
    const response = await asFinn.post({ ...CLOUD_EVENT, _id: eventId })
    t.equal(response.statusCode, 503)
    t.same(response.json(), { statusCode: 503, code: 'MAINTENANCE', error: 'Service Unavailable', message: 'Provider calendars are in maintenance; try again later' })
    t.equal(await events.findOne({ eventId }), null, 'nothing written')
    t.equal(await outbox.countDocuments({ user: finn.userId }), 0, 'nothing reported')

    const local = id()
    t.equal((await asFinn.post({ ...CLOUD_EVENT, calendarId: undefined, _id: local })).statusCode, 204, 'own events stay writable')
  })

  await t.test('a user without a provider refresh token keeps writing, and the skip is logged', async (t) => {
    const gus = await signUp(app, { email: uniqueEmail('gus'), password: 'correct horse 8' })
    const eventId = id()
    const response = await call(gus.headers).post({ ...CLOUD_EVENT, _id: eventId })
    t.equal(response.statusCode, 204, 'even a calendarId event while Sync is in maintenance')
    t.ok(await events.findOne({ eventId }), 'the own write stays')
    const line = log.lines().find((entry) => entry.userId === gus.userId && entry.reason === 'MissingGoogleRefreshToken')
    t.match(line, { level: 30, msg: 'provider effect skipped: the user has no provider refresh token' })
    t.notOk(log.text().includes('stored-refresh-token'), 'no token in any log line')
  })

  await t.test('an unreachable Sync does not block a cloud edit: its report waits', async (t) => {
    await sync.stop()
    const hana = await userWithProvider('hana')
    const eventId = id()
    t.equal((await call(hana.headers).post({ ...CLOUD_EVENT, _id: eventId })).statusCode, 204)
    t.ok(await events.findOne({ eventId }))
    t.equal(await app.outbox.pending(hana.userId), 1)
    t.ok(log.lines().some((entry) => entry.userId === hana.userId && entry.msg === 'Sync unreachable before a provider calendar write; its report waits in the outbox'))
    await sync.start({ cloudMutationMode: 'enabled' })
  })
})
