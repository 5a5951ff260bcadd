// The backend's SyncClient against the real Sync app over HTTP: both sides of every contract agree.
import { test } from 'tap'
import type { AddressInfo } from 'node:net'
import { SyncClient, SyncRequestError } from '../../clients/sync.js'
import { buildSyncApp, INTERNAL_TOKEN, newUserId, startDatabase } from './helper.js'
import { ScriptedProvider } from './scripted-provider.js'

test('every client method round-trips against the Sync service', async (t) => {
  const provider = new ScriptedProvider()
  const built = await buildSyncApp(t, await startDatabase(t), { providers: { google: provider } })
  await built.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = built.app.server.address() as AddressInfo
  // The client signs with the real clock; the service checks against the test clock.
  const client = new SyncClient({ baseUrl: `http://127.0.0.1:${port}`, internalAuthToken: INTERNAL_TOKEN, now: () => built.clock.now().getTime() })
  t.teardown(() => client.close())
  const userId = newUserId()

  const watermark = await client.changes(userId, null)
  t.same(watermark.invalidations, [])
  const accepted = await client.reportEventChange({ userId, eventId: 'event-1', operation: 'create', idempotencyKey: 'contract-key-1' })
  t.same(accepted, { duplicate: false, providerWriteQueued: false })
  const page = await client.changes(userId, watermark.cursor, { limit: 10 })
  t.same(page.invalidations.map((item) => item.kind), ['event'])
  t.same(await client.changesBatch([{ userId, cursor: watermark.cursor }], { limit: 10 }), [page], 'batched answer equals the single one')

  const begin = await client.beginConnection(userId, { provider: 'google', intent: 'connect' })
  t.match(begin, { intent: 'connect', connectionId: null })
  t.ok(begin.authorizationUrl.startsWith('https://accounts.example.test/authorize?'))

  const connection = await built.app.syncEngine.authorize(userId, 'google', { refreshToken: 'r' }, null)
  const metadata = await client.metadata(userId)
  t.same(metadata.connections.map((item) => [item.connectionId, item.state]), [[connection._id.toHexString(), 'importing']])
  t.same(await client.restartSync(userId), { queued: 1 })
  t.same(await client.stopWatches(userId), { stopped: 0 })
  t.same(await client.ready(), { status: 'ok', timestamp: built.clock.now().toISOString() })

  const reused = await client.reportEventChange({ userId, eventId: 'event-2', operation: 'create', idempotencyKey: 'contract-key-1' }).catch((error: unknown) => error)
  t.ok(reused instanceof SyncRequestError)
  t.match(reused, { statusCode: 409, code: 'IDEMPOTENCY_KEY_REUSED' })

  const skewed = new SyncClient({ baseUrl: `http://127.0.0.1:${port}`, internalAuthToken: INTERNAL_TOKEN, now: () => built.clock.now().getTime() - 60 * 60_000 })
  t.teardown(() => skewed.close())
  const stale = await skewed.metadata(userId).catch((error: unknown) => error)
  t.match(stale, { statusCode: 401, code: 'UNAUTHORIZED' }, 'a clock an hour off is refused')
})
