// The storage contract the core's rules rely on, held to both implementations.
import { randomUUID } from 'node:crypto'
import { test } from 'tap'
import type { Test } from 'tap'
import { startMongo } from '../../../dev/mongo/index.js'
import { createMemoryStorage } from '../../../dev/session-core/memory-storage.js'
import { createMongoStorage } from '../../../dev/session-core/mongo-storage.js'
import type { SessionRecord, Storage } from '../../../dev/session-core/storage.js'

const session = (handle: string, expiry: number): SessionRecord => ({
  handle,
  userId: 'u1',
  tenantId: 'public',
  refreshTokenHash2: 'h0',
  expiry,
  createdTime: 0,
  userDataInJWT: {},
  userDataInDatabase: {},
  useStaticKey: false
})

async function contract (t: Test, storage: Storage): Promise<void> {
  await t.test('refresh hash swaps only from the expected value', async (t) => {
    await storage.insertSession(session('s1', Date.now() + 60_000))
    t.equal(await storage.swapRefreshHash('s1', 'wrong', 'h1', 1), false)
    t.equal((await storage.getSession('s1'))?.refreshTokenHash2, 'h0', 'a failed swap changes nothing')
    t.equal(await storage.swapRefreshHash('s1', 'h0', 'h1', Date.now() + 120_000), true)
    t.equal(await storage.swapRefreshHash('s1', 'h0', 'h2', 1), false, 'the old value no longer matches')
    t.equal((await storage.getSession('s1'))?.refreshTokenHash2, 'h1')
  })

  await t.test('a token is taken once', async (t) => {
    await storage.insertToken({ kind: 'password-reset', tokenHash: 'th', userId: 'u1', email: 'a@b.c', expiry: Date.now() + 60_000 })
    t.equal((await storage.takeToken('password-reset', 'th'))?.userId, 'u1')
    t.equal(await storage.takeToken('password-reset', 'th'), null)
    t.equal(await storage.takeToken('email-verification', 'th'), null, 'kinds do not mix')
  })

  await t.test('unique keys refuse duplicates on insert and update', async (t) => {
    const base = { recipeId: 'emailpassword' as const, tenantIds: ['public'], timeJoined: 1 }
    t.equal(await storage.insertUser({ ...base, id: 'a', email: 'a@x.y', uniqueKey: 'k:a' }), 'ok')
    t.equal(await storage.insertUser({ ...base, id: 'b', email: 'b@x.y', uniqueKey: 'k:b' }), 'ok')
    t.equal(await storage.insertUser({ ...base, id: 'c', email: 'a@x.y', uniqueKey: 'k:a' }), 'duplicate')
    t.equal(await storage.updateUser('b', { email: 'a@x.y', uniqueKey: 'k:a' }), 'duplicate')
    t.equal((await storage.getUser('b'))?.email, 'b@x.y', 'a refused update changes nothing')
    t.equal(await storage.updateUser('nobody', { email: 'z@x.y' }), 'missing')
  })

  await t.test('expired sessions and tokens are purged, live ones kept', async (t) => {
    const now = Date.now()
    await storage.insertSession(session('old', now - 1))
    await storage.insertSession(session('live', now + 60_000))
    await storage.insertToken({ kind: 'email-verification', tokenHash: 'old-token', userId: 'u1', email: 'a@b.c', expiry: now - 1 })
    await storage.purgeExpired(now)
    t.equal(await storage.getSession('old'), null)
    t.not(await storage.getSession('live'), null)
    t.equal(await storage.takeToken('email-verification', 'old-token'), null)
  })
}

test('memory storage', async (t) => {
  const storage = createMemoryStorage()
  t.teardown(() => storage.close())
  await contract(t, storage)
})

test('MongoDB storage', async (t) => {
  let uri = process.env['MONGODB_URI']
  if (uri === undefined || uri === '') {
    const mongo = await startMongo()
    t.teardown(() => mongo.close())
    uri = mongo.uri
  }
  const database = `session_core_${randomUUID().replaceAll('-', '')}`
  const storage = await createMongoStorage(uri.replace(/^(mongodb(?:\+srv)?:\/\/[^/?]+)\/?[^?]*/, `$1/${database}`))
  t.teardown(() => storage.close())
  await contract(t, storage)
})
