import { randomBytes } from 'node:crypto'
import { ObjectId } from 'mongodb'
import { test } from 'tap'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { startSyncService } from '../events/sync-service.js'

// GET /api/calendars against the real Sync service: the calendars Sync keeps for the user's
// connections (rows as its import stores them), with names, colours and the primary first.
test('the calendar list', async (t) => {
  const deps = await startDependencies(t)
  const sync = await startSyncService(t, deps.databaseUri(`sync_calendars_${randomBytes(4).toString('hex')}`))
  const { app } = await buildApp(t, deps, { syncUrl: sync.url, internalAuthToken: sync.internalAuthToken })
  const user = await signUp(app, { email: uniqueEmail('calendars'), password: 'pw-for-calendars-1' })
  const other = await signUp(app, { email: uniqueEmail('calendars-other'), password: 'pw-for-calendars-2' })
  const list = async (headers: Record<string, string> = user.headers) => await app.inject({ method: 'GET', url: '/api/calendars', headers })

  const connection = async (userId: string, provider: string, state = 'healthy', createdAt = new Date()) => {
    const _id = new ObjectId()
    await sync.db.collection('connections').insertOne({
      _id, userId, provider, state, reason: null, lastReadFailureAt: null, lastSyncedAt: null, lastHealthyAt: null, importProgress: null, createdAt, updatedAt: createdAt
    })
    return _id.toHexString()
  }
  const calendar = async (connectionId: string, userId: string, calendarId: string, fields: { name: string, primary?: boolean, color?: string | null, defaultReminders?: Array<{ minutes: number }> }) => {
    await sync.db.collection('calendars').insertOne({
      _id: `${connectionId}:${calendarId}` as unknown as ObjectId,
      connectionId,
      userId,
      calendarId,
      name: fields.name,
      primary: fields.primary ?? false,
      timeZone: 'Europe/Berlin',
      ...(fields.color === undefined ? {} : { color: fields.color }),
      ...(fields.defaultReminders === undefined ? {} : { defaultReminders: fields.defaultReminders }),
      cursor: null,
      generation: 1,
      expiryStreak: 0,
      importedInRun: null,
      checkpoint: null,
      lastUpdatedAt: new Date()
    })
  }

  await t.test('a session is required; no connection lists nothing', async (t) => {
    t.equal((await list({})).statusCode, 401)
    const answer = await list()
    t.equal(answer.statusCode, 200)
    t.same(answer.json(), { calendars: [] })
  })

  await t.test('each connection\'s calendars, primary first, with the provider\'s colour or the provider\'s own', async (t) => {
    const google = await connection(user.userId, 'google', 'healthy', new Date('2026-01-01T00:00:00Z'))
    const caldav = await connection(user.userId, 'caldav', 'healthy', new Date('2026-02-01T00:00:00Z'))
    const gone = await connection(user.userId, 'microsoft', 'disconnected', new Date('2026-03-01T00:00:00Z'))
    await calendar(google, user.userId, 'family@group.calendar.google.com', { name: 'Family', color: '#f83a22' })
    await calendar(google, user.userId, 'sam@example.com', { name: 'sam@example.com', primary: true, color: '#9fc6e7', defaultReminders: [{ minutes: 10 }, { minutes: 1440 }] })
    await calendar(caldav, user.userId, 'https://dav.example.com/cal/home/', { name: 'Home', primary: true })
    await calendar(gone, user.userId, 'AAMk', { name: 'Old Outlook', primary: true, color: '#0078d4' })
    const otherConnection = await connection(other.userId, 'google')
    await calendar(otherConnection, other.userId, 'other@example.com', { name: 'Someone else', primary: true, color: '#000000' })

    const answer = await list()
    t.equal(answer.statusCode, 200)
    t.same(answer.json(), {
      calendars: [
        { connectionId: google, provider: 'google', calendarId: 'sam@example.com', name: 'sam@example.com', color: '#9fc6e7', primary: true, defaultReminders: [{ minutes: 10 }, { minutes: 1440 }] },
        { connectionId: google, provider: 'google', calendarId: 'family@group.calendar.google.com', name: 'Family', color: '#f83a22', primary: false, defaultReminders: [] },
        { connectionId: caldav, provider: 'caldav', calendarId: 'https://dav.example.com/cal/home/', name: 'Home', color: '#8e8e93', primary: true, defaultReminders: [] }
      ]
    }, 'the disconnected connection and the other user\'s calendars are not listed')
  })

  await t.test('hidden calendars are kept with the account', async (t) => {
    const hidden = async (headers: Record<string, string> = user.headers) => await app.inject({ method: 'GET', url: '/api/calendars/hidden', headers })
    const hide = async (payload: unknown, headers: Record<string, string> = user.headers) =>
      await app.inject({ method: 'PUT', url: '/api/calendars/hidden', headers, payload: payload as object })
    t.equal((await hidden({})).statusCode, 401)
    t.equal((await hide({ hidden: ['own'] }, {})).statusCode, 401)
    t.same((await hidden()).json(), { hidden: [] }, 'nothing hidden at first')

    const chosen = ['own', 'family@group.calendar.google.com']
    const stored = await hide({ hidden: chosen })
    t.equal(stored.statusCode, 200)
    t.same(stored.json(), { hidden: chosen })
    t.same((await hidden()).json(), { hidden: chosen }, 'read back, as another browser of the account would')
    t.same((await hidden(other.headers)).json(), { hidden: [] }, 'another user\'s choice is their own')

    for (const [payload, why] of [
      [{ hidden: ['own', 'own'] }, 'a key twice'],
      [{ hidden: [''] }, 'an empty key'],
      [{ hidden: ['x'.repeat(501)] }, 'a key longer than any calendarId'],
      [{ hidden: Array.from({ length: 501 }, (_, index) => `c${index}`) }, 'more than 500 keys'],
      [{ hidden: 'own' }, 'not a list'],
      [{ hidden: [], extra: true }, 'an unknown field'],
      [{}, 'no list']
    ] as const) {
      const refused = await hide(payload)
      t.equal(refused.statusCode, 400, why)
    }
    t.same((await hidden()).json(), { hidden: chosen }, 'refused bodies changed nothing')
    t.same((await hide({ hidden: [] })).json(), { hidden: [] }, 'all shown again')
    t.same((await hidden()).json(), { hidden: [] })
  })

  await t.test('Sync refusing the backend\'s signature (another token, or clocks apart): 503 SYNC_UNAVAILABLE, never a 401 the client takes for a lost session', async (t) => {
    const { app: misconfigured } = await buildApp(t, deps, { syncUrl: sync.url, internalAuthToken: `${sync.internalAuthToken}-not-the-same` })
    for (const [method, url] of [['GET', '/api/calendars'], ['POST', '/api/connections/refresh']] as const) {
      const answer = await misconfigured.inject({ method, url, headers: user.headers, ...(method === 'POST' ? { payload: {} } : {}) })
      t.equal(answer.statusCode, 503, `${method} ${url}`)
      t.equal(answer.json().code, 'SYNC_UNAVAILABLE')
      t.equal(answer.headers['retry-after'], '5')
    }
  })

  await t.test('Sync away: 503 SYNC_UNAVAILABLE with Retry-After', async (t) => {
    await sync.stop()
    const answer = await list()
    t.equal(answer.statusCode, 503)
    t.equal(answer.json().code, 'SYNC_UNAVAILABLE')
    t.equal(answer.headers['retry-after'], '5')
    const hidden = await app.inject({ method: 'GET', url: '/api/calendars/hidden', headers: user.headers })
    t.equal(hidden.statusCode, 200, 'the hidden set needs only the database')
  })
})
