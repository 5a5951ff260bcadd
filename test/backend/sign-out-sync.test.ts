import { test } from 'tap'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { startSyncService, type SyncService } from '../events/sync-service.js'
import { waitFor } from '../processes.js'

// A provider watch of the user, as the Sync service stores one.
async function addWatch (sync: SyncService, userId: string, channelId: string) {
  const watches = sync.db.collection('watches')
  await watches.insertOne({
    _id: channelId as never,
    userId,
    connectionId: `connection-of-${channelId}`,
    calendarId: 'primary',
    resourceId: `resource-of-${channelId}`,
    tokenDigest: '00',
    expiresAt: new Date(Date.now() + 86_400_000)
  })
  return watches
}

test('sign-out asks the Sync service to stop the user\'s provider watches', async (t) => {
  const deps = await startDependencies(t)
  const sync = await startSyncService(t, deps.databaseUri(`sync_signout_${Date.now()}`))
  const { app, log } = await buildApp(t, deps, { syncUrl: sync.url, internalAuthToken: sync.internalAuthToken })

  const session = await signUp(app, { email: uniqueEmail('watcher'), password: 'pw-for-watcher-1' })
  const watches = await addWatch(sync, session.userId, 'channel-1')

  const response = await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { ...session.headers, 'sx-auth-mode': 'header' } })
  t.equal(response.statusCode, 200)
  t.ok(await waitFor(async () => await watches.countDocuments({ userId: session.userId }) === 0, 5000), 'Sync stopped and removed the user\'s watch')
  // Sync removes the watch before it answers; the backend drops the entry once it has the answer.
  t.ok(await waitFor(async () => await app.outbox.pending(session.userId) === 0, 5000), 'nothing waits in the outbox')
  t.notOk(log.lines().some((line) => String(line.msg).startsWith('sign-out: Sync did not stop')), 'no retry was needed')

  const stream = await app.inject({ method: 'GET', url: '/api/events/stream', headers: session.headers })
  t.equal(stream.statusCode, 401, 'the signed-out access token cannot open a new event stream')
})

test('SuperTokens\' own frontend SDKs: st-auth-mode gets st-* token headers', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const response = await app.inject({
    method: 'POST',
    url: '/api/auth/signup',
    headers: { 'st-auth-mode': 'header', rid: 'emailpassword' },
    payload: { formFields: [{ id: 'name', value: 'Sdk' }, { id: 'email', value: uniqueEmail('sdk') }, { id: 'password', value: 'pw-for-sdk-1' }] }
  })
  t.equal(response.statusCode, 200)
  t.type(response.headers['st-access-token'], 'string')
  t.type(response.headers['st-refresh-token'], 'string')
  t.type(response.headers['front-token'], 'string')
  t.notOk(response.headers['sx-access-token'])
  const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: { authorization: `Bearer ${String(response.headers['st-access-token'])}` } })
  t.equal(profile.statusCode, 200)
})

test('a watch stop Sync could not take is kept and retried after a backend restart', async (t) => {
  const deps = await startDependencies(t)
  const sync = await startSyncService(t, deps.databaseUri(`sync_signout_retry_${Date.now()}`))
  const apiDatabase = `calendar_signout_retry_${Date.now()}`
  const overrides = { syncUrl: sync.url, internalAuthToken: sync.internalAuthToken, apiDatabase }
  const first = await buildApp(t, deps, overrides)

  const session = await signUp(first.app, { email: uniqueEmail('away'), password: 'pw-for-away-1' })
  const watches = await addWatch(sync, session.userId, 'channel-away')

  await sync.stop()
  const response = await first.app.inject({ method: 'POST', url: '/api/auth/signout', headers: { ...session.headers, 'sx-auth-mode': 'header' } })
  t.equal(response.statusCode, 200, 'sign-out succeeds while Sync is away')
  t.ok(await waitFor(() => first.log.lines().some((line) => line.msg === 'sign-out: Sync did not stop the user\'s watches; will retry'), 5000), 'the failed attempt is logged')
  t.equal(await first.app.outbox.pending(session.userId, 'watchStop'), 1, 'the stop is kept in the backend\'s database')
  await first.app.close()

  // A new backend process on the same database, and Sync is back.
  await sync.start()
  const second = await buildApp(t, deps, overrides)
  await second.app.mongo.db.collection('syncOutbox').updateMany({ user: session.userId }, { $set: { nextAttemptAt: new Date(0) } })
  await second.app.outbox.flushDue()
  t.equal(await watches.countDocuments({ userId: session.userId }), 0, 'Sync stopped the watch')
  t.equal(await second.app.outbox.pending(), 0, 'nothing is left to retry')
  t.ok(second.log.lines().some((line) => line.msg === 'sign-out: Sync stopped the user\'s watches after a retry'))
})

test('sign-out answers at once while the Sync service hangs', async (t) => {
  // A Sync that takes connections and never answers: the HTTP client would wait for its timeout.
  const sockets: Socket[] = []
  const hung = createServer((socket) => { sockets.push(socket) })
  await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const socket of sockets) socket.destroy(); hung.close() })
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps, { syncUrl: `http://127.0.0.1:${(hung.address() as AddressInfo).port}` })

  const session = await signUp(app, { email: uniqueEmail('hung'), password: 'pw-for-hung-1' })
  const started = Date.now()
  const response = await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { ...session.headers, 'sx-auth-mode': 'header' } })
  t.equal(response.statusCode, 200)
  t.ok(Date.now() - started < 2000, `answered in ${Date.now() - started} ms, not after the Sync client's timeout`)
  t.equal(await app.outbox.pending(session.userId, 'watchStop'), 1, 'the stop waits in the outbox')
})
