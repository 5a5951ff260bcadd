import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import type { Document, MongoServerError } from 'mongodb'
import { startTarget } from './target.js'
import { serverError } from './errors.js'

// A bulk write's writeErrors as the driver keeps them (it passes on index, code and errmsg only).
function writeErrorsOf (error: MongoServerError): Array<{ index: number, code: number, errmsg: string }> {
  return (error as unknown as { writeErrors: Array<{ index: number, code: number, errmsg: string }> }).writeErrors
}

test('indexes: kinds, errors and lookups', async (t) => {
  const target = await startTarget(t)
  const db = target.db

  t.test('unique: E11000 as mongod words it, in writeErrors of a bulk insert, and on update', async (t) => {
    const users = db.collection('users')
    t.equal(await users.createIndex({ email: 1 }, { unique: true }), 'email_1')
    await users.insertOne({ email: 'a@x.io', n: 1 })
    const single = await serverError(users.insertOne({ email: 'a@x.io' }))
    t.equal(single.code, 11000)
    t.equal(single.message, `E11000 duplicate key error collection: ${target.dbName}.users index: email_1 dup key: { email: "a@x.io" }`)
    t.same(single.keyPattern, { email: 1 })
    t.same(single.keyValue, { email: 'a@x.io' })

    const bulk = await serverError(users.insertMany([{ email: 'b@x.io' }, { email: 'a@x.io' }, { email: 'c@x.io' }], { ordered: false }))
    t.same(writeErrorsOf(bulk).map((e) => [e.index, e.code, e.errmsg]), [[1, 11000, `E11000 duplicate key error collection: ${target.dbName}.users index: email_1 dup key: { email: "a@x.io" }`]])
    t.equal(await users.countDocuments(), 3)

    const update = await serverError(users.updateOne({ email: 'b@x.io' }, { $set: { email: 'a@x.io' } }))
    t.equal(update.code, 11000)
    t.equal(await users.countDocuments({ email: 'b@x.io' }), 1)

    // updateMany goes document by document: the first one to collide stops it, earlier ones stay.
    const many = db.collection('many')
    await many.createIndex({ slot: 1 }, { unique: true })
    await many.insertMany([{ _id: 1, slot: 1 }, { _id: 2, slot: 2 }, { _id: 3, slot: 3 }] as unknown as Document[])
    const shifted = await serverError(many.updateMany({}, { $inc: { slot: 1 } }))
    t.equal(shifted.code, 11000)
    t.same((await many.find().sort({ _id: 1 }).toArray()).map((d) => d.slot), [1, 2, 3])
    const collision = await serverError(many.updateMany({}, [{ $set: { slot: { $cond: [{ $eq: ['$_id', 1] }, 10, 3] } } }]))
    t.equal(collision.code, 11000)
    t.same((await many.find().sort({ _id: 1 }).toArray()).map((d) => d.slot), [10, 2, 3])

    const missing = await users.insertOne({ n: 2 })
    t.ok(missing.insertedId)
    const secondMissing = await serverError(users.insertOne({ n: 3 }))
    t.equal(secondMissing.code, 11000)
    t.same(secondMissing.keyValue, { email: null })
  })

  t.test('compound and multikey unique indexes', async (t) => {
    const slots = db.collection('slots')
    t.equal(await slots.createIndex({ room: 1, hour: 1 }, { unique: true }), 'room_1_hour_1')
    await slots.insertMany([{ room: 'a', hour: 9 }, { room: 'a', hour: 10 }, { room: 'b', hour: 9 }])
    const clash = await serverError(slots.insertOne({ room: 'a', hour: 9 }))
    t.equal(clash.message, `E11000 duplicate key error collection: ${target.dbName}.slots index: room_1_hour_1 dup key: { room: "a", hour: 9 }`)
    t.same(clash.keyPattern, { room: 1, hour: 1 })

    const tags = db.collection('tags')
    await tags.createIndex({ tags: 1 }, { unique: true })
    await tags.insertOne({ tags: ['x', 'y'] })
    const shared = await serverError(tags.insertOne({ tags: ['z', 'y'] }))
    t.equal(shared.code, 11000)
    t.same(shared.keyValue, { tags: 'y' })
    await tags.insertOne({ tags: ['z'] })
    t.equal(await tags.countDocuments({ tags: 'z' }), 1)
  })

  t.test('sparse and partial unique indexes leave documents out', async (t) => {
    const sparse = db.collection('sparse')
    await sparse.createIndex({ handle: 1 }, { unique: true, sparse: true })
    await sparse.insertMany([{ n: 1 }, { n: 2 }, { handle: 'h' }])
    t.equal((await serverError(sparse.insertOne({ handle: 'h' }))).code, 11000)

    const partial = db.collection('partial')
    await partial.createIndex({ email: 1 }, { unique: true, partialFilterExpression: { active: true } })
    await partial.insertMany([{ email: 'a', active: false }, { email: 'a', active: false }, { email: 'a', active: true }])
    const second = await serverError(partial.insertOne({ email: 'a', active: true }))
    t.equal(second.code, 11000)
    t.equal(await partial.countDocuments({ email: 'a' }), 3)

    const listed = await partial.listIndexes().toArray()
    t.same(listed.map((index) => [index.name, index.unique, index.partialFilterExpression]), [['_id_', undefined, undefined], ['email_1', true, { active: true }]])
    t.same((await sparse.listIndexes().toArray()).find((index) => index.name === 'handle_1')?.sparse, true)
  })

  t.test('building a unique index over duplicates fails and creates nothing', async (t) => {
    const dupes = db.collection('dupes')
    await dupes.insertMany([{ k: 1 }, { k: 1 }])
    const failed = await serverError(dupes.createIndex({ k: 1 }, { unique: true }))
    t.equal(failed.code, 11000)
    t.same((await dupes.listIndexes().toArray()).map((index) => index.name), ['_id_'])
  })

  t.test('createIndex conflicts, listIndexes and dropIndex', async (t) => {
    const things = db.collection('things')
    t.equal(await things.createIndex({ a: 1 }), 'a_1')
    t.equal(await things.createIndex({ a: 1 }), 'a_1')
    t.equal(await things.createIndex({ b: -1, c: 1 }, { name: 'custom' }), 'custom')
    t.equal(await things.createIndex({ h: 'hashed' }), 'h_hashed')
    const otherName = await serverError(things.createIndex({ a: 1 }, { name: 'again' }))
    t.equal(otherName.code, 85)
    t.equal(otherName.codeName, 'IndexOptionsConflict')
    const otherKey = await serverError(things.createIndex({ z: 1 }, { name: 'custom' }))
    t.equal(otherKey.code, 86)
    t.equal(otherKey.codeName, 'IndexKeySpecsConflict')
    t.same((await things.listIndexes().toArray()).map((index) => [index.name, index.key]), [
      ['_id_', { _id: 1 }], ['a_1', { a: 1 }], ['custom', { b: -1, c: 1 }], ['h_hashed', { h: 'hashed' }]
    ])
    await things.dropIndex('custom')
    await things.dropIndex({ a: 1 } as unknown as string)
    t.same((await things.listIndexes().toArray()).map((index) => index.name), ['_id_', 'h_hashed'])
    const notThere = await serverError(things.dropIndex('custom'))
    t.equal(notThere.code, 27)
    t.equal(notThere.codeName, 'IndexNotFound')
    const idIndex = await serverError(things.dropIndex('_id_'))
    t.equal(idIndex.code, 72)
    await things.dropIndexes()
    t.same((await things.listIndexes().toArray()).map((index) => index.name), ['_id_'])
    const noCollection = await serverError(db.collection('absent').listIndexes().toArray())
    t.equal(noCollection.code, 26)
  })

  t.test('equality on _id or an indexed field examines one document, not the collection', async (t) => {
    const people = db.collection('lookups')
    await people.insertMany(Array.from({ length: 500 }, (_, i) => ({ _id: `p${i}`, email: `u${i}@x.io`, code: i % 50, plain: i })) as unknown as Document[])
    await people.createIndex({ email: 1 }, { unique: true })
    await people.createIndex({ code: 'hashed' })

    const byEmail = await people.find({ email: 'u321@x.io' }).explain('executionStats')
    t.equal(byEmail.executionStats.nReturned, 1)
    t.equal(byEmail.executionStats.totalDocsExamined, 1)
    const byId = await people.find({ _id: 'p77' } as unknown as Document).explain('executionStats')
    t.equal(byId.executionStats.totalDocsExamined, 1)
    const byHash = await people.find({ code: 7 }).explain('executionStats')
    t.equal(byHash.executionStats.nReturned, 10)
    t.equal(byHash.executionStats.totalDocsExamined, 10)
    const scan = await people.find({ plain: 321 }).explain('executionStats')
    t.equal(scan.executionStats.nReturned, 1)
    t.equal(scan.executionStats.totalDocsExamined, 500)
    t.same(await people.findOne({ email: 'u321@x.io' }, { projection: { _id: 1 } }), { _id: 'p321' })

    // Equality on the first field of a compound index with a range on the second: only that
    // user's documents are looked at, never the other users'.
    const events = db.collection('events')
    await events.insertMany(Array.from({ length: 300 }, (_, i) => ({ user: `u${i % 3}`, start: i })))
    await events.createIndex({ user: 1, start: 1 })
    const range = await events.find({ user: 'u1', start: { $gte: 100, $lt: 130 } }).explain('executionStats')
    t.equal(range.executionStats.nReturned, 10)
    t.ok(range.executionStats.totalDocsExamined <= 100, `examined ${range.executionStats.totalDocsExamined} of 300`)
    t.same((await events.find({ user: 'u1', start: { $gte: 100, $lt: 130 } }).sort({ start: 1 }).toArray()).map((d) => d.start), [100, 103, 106, 109, 112, 115, 118, 121, 124, 127])

    // Equality and `$in` on the first two fields of a three-field index, nothing on the third:
    // the index bounds the scan by those two, so only their documents are examined.
    const edits = db.collection('edits')
    await edits.insertMany(Array.from({ length: 400 }, (_, i) => ({ user: `u${i % 2}`, series: `s${i % 20}`, start: i })))
    await edits.createIndex({ user: 1, series: 1, start: 1 })
    const ofSeries = await edits.find({ user: 'u1', series: { $in: ['s1', 's3', 's4', 's-none'] } }).explain('executionStats')
    t.equal(ofSeries.executionStats.nReturned, 40, 's1 and s3 are u1\'s, 20 each; s4 is u0\'s')
    t.equal(ofSeries.executionStats.totalDocsExamined, 40, 'only the two series\' documents are examined, not all 200 of u1\'s')
    t.same((await edits.find({ user: 'u1', series: { $in: ['s3', 's1'] }, start: { $lt: 45 } }).sort({ start: 1 }).toArray()).map((d) => d.start), [1, 3, 21, 23, 41, 43])
  })

  t.test('equality and $in on every field of a compound index, partial on $exists, examine only the matches', async (t) => {
    const copies = db.collection('copies')
    await copies.insertMany(Array.from({ length: 600 }, (_, i) => ({ user: `u${i % 2}`, calendar: 'c', ...(i % 3 === 0 ? {} : { remote: `r${i}` }) })))
    await copies.createIndex({ user: 1, calendar: 1, remote: 1 }, { unique: true, partialFilterExpression: { remote: { $exists: true } } })
    const wanted = ['r1', 'r2', 'r4', 'r5', 'r9', 'r-none']
    const found = await copies.find({ user: 'u1', calendar: 'c', remote: { $in: wanted } }).explain('executionStats')
    t.equal(found.executionStats.nReturned, 2, 'r1 and r5 are u1\'s (r9 has no remote field: 9 % 3 === 0)')
    t.equal(found.executionStats.totalDocsExamined, 2, 'only the matches are examined')
    t.same((await copies.find({ user: 'u0', calendar: 'c', remote: { $in: wanted } }).toArray()).map((d) => d.remote).sort(), ['r2', 'r4'])
    const existsNotImplied = await copies.find({ user: 'u1', calendar: 'c' }).explain('executionStats')
    t.equal(existsNotImplied.executionStats.nReturned, 300, 'without a condition on remote the partial index cannot answer: documents without remote match too')
  })

  t.test('a TTL index removes expired documents on the monitor pass', async (t) => {
    const admin = target.client.db('admin')
    const previous = await admin.command({ setParameter: 1, ttlMonitorSleepSecs: 1 })
    t.teardown(() => admin.command({ setParameter: 1, ttlMonitorSleepSecs: previous.was }))
    const sessions = db.collection('ttl')
    await sessions.createIndex({ seenAt: 1 }, { expireAfterSeconds: 60 })
    t.equal((await sessions.listIndexes().toArray()).find((index) => index.name === 'seenAt_1')?.expireAfterSeconds, 60)
    await sessions.insertMany([
      { name: 'old', seenAt: new Date(Date.now() - 3_600_000) },
      { name: 'fresh', seenAt: new Date() },
      { name: 'not a date', seenAt: 'yesterday' },
      { name: 'none' }
    ])
    // The monitor runs every second now; give it a generous while before concluding it did not.
    for (let waited = 0; waited < 20_000 && await sessions.countDocuments({ name: 'old' }) > 0; waited += 200) await sleep(200)
    t.same((await sessions.find({}, { projection: { _id: 0, name: 1 } }).sort({ name: 1 }).toArray()).map((d) => d.name), ['fresh', 'none', 'not a date'])

    // collMod shortens the lifetime; the next pass removes what is now expired.
    const modified = await db.command({ collMod: 'ttl', index: { keyPattern: { seenAt: 1 }, expireAfterSeconds: 0 } })
    t.same([modified.expireAfterSeconds_old, modified.expireAfterSeconds_new], [60, 0])
    t.equal((await sessions.listIndexes().toArray()).find((index) => index.name === 'seenAt_1')?.expireAfterSeconds, 0)
    for (let waited = 0; waited < 20_000 && await sessions.countDocuments({ name: 'fresh' }) > 0; waited += 200) await sleep(200)
    t.same((await sessions.find({}).sort({ name: 1 }).toArray()).map((d) => d.name), ['none', 'not a date'])
  })
})
