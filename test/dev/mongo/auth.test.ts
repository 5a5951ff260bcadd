import { test } from 'tap'
import { MongoServerError } from 'mongodb'
import { startTarget, withCredentials } from './target.js'
import { serverError } from './errors.js'

test('SCRAM-SHA-256 authentication and per-database roles', async (t) => {
  const target = await startTarget(t, { users: [] })
  const status = await target.client.db('admin').command({ connectionStatus: 1 })
  const skip = status.authInfo.authenticatedUsers.length > 0 ? false : 'the target runs without access control'
  const syncDb = `${target.dbName}_sync`
  const calendarDb = `${target.dbName}_calendar`
  const password = 'p@ss:word/with%signs'

  t.before(async () => {
    if (skip !== false) return
    await target.client.db(syncDb).command({ createUser: 'sync-worker', pwd: password, roles: ['readWrite'] })
    await target.client.db(calendarDb).command({ createUser: 'viewer', pwd: password, roles: [{ role: 'read', db: calendarDb }] })
    await target.client.db(calendarDb).collection('events').insertOne({ title: 'standup' })
  })
  t.teardown(async () => {
    if (skip !== false) return
    await target.client.db(syncDb).command({ dropUser: 'sync-worker' }).catch(() => {})
    await target.client.db(calendarDb).command({ dropUser: 'viewer' }).catch(() => {})
    await target.client.db(syncDb).dropDatabase().catch(() => {})
    await target.client.db(calendarDb).dropDatabase().catch(() => {})
  })

  t.test('readWrite on one database: full use there, code 13 elsewhere', { skip }, async (t) => {
    const worker = await target.connect({ uri: withCredentials(target.uri, 'sync-worker', password, syncDb) })
    const jobs = worker.db(syncDb).collection('jobs')
    await jobs.insertOne({ job: 'pull' })
    t.equal(await jobs.countDocuments(), 1)
    await jobs.createIndex({ job: 1 }, { unique: true })

    const read = await serverError(worker.db(calendarDb).collection('events').findOne({}))
    t.equal(read.code, 13)
    t.equal(read.codeName, 'Unauthorized')
    t.match(read.message, `not authorized on ${calendarDb}`)
    const write = await serverError(worker.db(calendarDb).collection('events').insertOne({ title: 'sneaky' }))
    t.equal(write.code, 13)
    t.equal(await target.client.db(calendarDb).collection('events').countDocuments({ title: 'sneaky' }), 0)

    const status = await worker.db('admin').command({ connectionStatus: 1 })
    t.same(status.authInfo.authenticatedUsers, [{ user: 'sync-worker', db: syncDb }])
    const listed = (await worker.db('admin').admin().listDatabases({ nameOnly: true })).databases.map((entry) => entry.name)
    t.ok(listed.includes(syncDb))
    t.notOk(listed.includes(calendarDb))
  })

  t.test('read role: reads pass, writes are refused', { skip }, async (t) => {
    const viewer = await target.connect({ uri: withCredentials(target.uri, 'viewer', password, calendarDb) })
    const events = viewer.db(calendarDb).collection('events')
    t.same(await events.find({}, { projection: { _id: 0 } }).toArray(), [{ title: 'standup' }])
    const write = await serverError(events.updateOne({}, { $set: { title: 'changed' } }))
    t.equal(write.code, 13)
    t.same(await target.client.db(calendarDb).collection('events').findOne({}, { projection: { _id: 0 } }), { title: 'standup' })
  })

  t.test('wrong password, unknown user and no credentials are refused', { skip }, async (t) => {
    for (const [user, secret] of [['sync-worker', 'wrong'], ['nobody', password]] as const) {
      const failed = await target.connect({ uri: withCredentials(target.uri, user, secret, syncDb), serverSelectionTimeoutMS: 3000 }).catch((error: unknown) => error)
      t.ok(failed instanceof MongoServerError, `${user} is refused`)
      t.equal((failed as MongoServerError).code, 18)
      t.equal((failed as MongoServerError).codeName, 'AuthenticationFailed')
    }
    const anonymousUri = new URL(target.uri)
    anonymousUri.username = ''
    anonymousUri.password = ''
    anonymousUri.searchParams.delete('authSource')
    const anonymous = await target.connect({ uri: anonymousUri.toString() })
    const refused = await serverError(anonymous.db(syncDb).collection('jobs').findOne({}))
    t.equal(refused.code, 13)
    t.equal((await anonymous.db('admin').command({ ping: 1 })).ok, 1)
  })

  t.test('createUser twice fails; a dropped user can no longer log in', { skip }, async (t) => {
    const again = await serverError(target.client.db(syncDb).command({ createUser: 'sync-worker', pwd: 'x', roles: ['read'] }))
    t.equal(again.code, 51003)
    await target.client.db(syncDb).command({ createUser: 'temporary', pwd: password, roles: ['read'] })
    const temporary = await target.connect({ uri: withCredentials(target.uri, 'temporary', password, syncDb) })
    t.equal((await temporary.db(syncDb).command({ ping: 1 })).ok, 1)
    await target.client.db(syncDb).command({ dropUser: 'temporary' })
    const gone = await target.connect({ uri: withCredentials(target.uri, 'temporary', password, syncDb), serverSelectionTimeoutMS: 3000 }).catch((error: unknown) => error)
    t.equal((gone as MongoServerError).code, 18)
  })
})
