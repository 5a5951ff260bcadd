import { test } from 'tap'
import { Long, ObjectId } from 'mongodb'
import type { Document } from 'mongodb'
import { startTarget } from './target.js'
import { serverError } from './errors.js'

test('CRUD, cursors, count and distinct through the driver', async (t) => {
  const target = await startTarget(t)
  const db = target.db

  t.test('insertOne and insertMany return the ids; _id is generated when absent', async (t) => {
    const items = db.collection('inserts')
    const one = await items.insertOne({ name: 'first' })
    t.ok(one.insertedId instanceof ObjectId)
    const many = await items.insertMany([{ _id: 'a' as unknown as ObjectId, n: 1 }, { n: 2 }])
    t.equal(many.insertedCount, 2)
    t.equal(many.insertedIds[0], 'a')
    const stored = await items.findOne({ _id: one.insertedId })
    t.same(stored, { _id: one.insertedId, name: 'first' })
    const duplicate = await serverError(items.insertOne({ _id: 'a' as unknown as ObjectId }))
    t.equal(duplicate.code, 11000)
    t.match(duplicate.message, `E11000 duplicate key error collection: ${target.dbName}.inserts index: _id_ dup key: { _id: "a" }`)
    t.same(duplicate.keyPattern, { _id: 1 })
    t.same(duplicate.keyValue, { _id: 'a' })
    t.equal(await items.countDocuments(), 3)
  })

  t.test('ordered insertMany stops at the first error; unordered goes on', async (t) => {
    const items = db.collection('bulk')
    await items.insertOne({ _id: 2 as unknown as ObjectId })
    const ordered = await serverError(items.insertMany([1, 2, 3].map((n) => ({ _id: n as unknown as ObjectId }))))
    t.equal(ordered.code, 11000)
    t.same((await items.find().sort({ _id: 1 }).toArray()).map((d) => d._id), [1, 2])
    const unordered = await serverError(items.insertMany([2, 4, 5].map((n) => ({ _id: n as unknown as ObjectId })), { ordered: false }))
    t.equal(unordered.code, 11000)
    const writeErrors = (unordered as unknown as { writeErrors: Array<{ index: number, code: number }> }).writeErrors
    t.same(writeErrors.map((e) => [e.index, e.code]), [[0, 11000]])
    t.same((await items.find().sort({ _id: 1 }).toArray()).map((d) => d._id), [1, 2, 4, 5])
  })

  t.test('find: filter operators, projection, sort, skip, limit', async (t) => {
    const people = db.collection('people')
    await people.insertMany([
      { name: 'ada', age: 36, tags: ['math', 'code'], address: { city: 'London' } },
      { name: 'bob', age: 25, tags: ['art'], address: { city: 'Oslo' } },
      { name: 'cy', age: 41, tags: [], address: { city: 'London' } },
      { name: 'dee', age: 30 }
    ])
    const names = async (filter: Document, sort: Document = { name: 1 }): Promise<string[]> =>
      (await people.find(filter).sort(sort).toArray()).map((d) => d.name as string)
    t.same(await names({ age: { $gte: 30, $lt: 40 } }), ['ada', 'dee'])
    t.same(await names({ 'address.city': 'London' }), ['ada', 'cy'])
    t.same(await names({ tags: 'code' }), ['ada'])
    t.same(await names({ tags: { $size: 0 } }), ['cy'])
    t.same(await names({ address: { $exists: false } }), ['dee'])
    t.same(await names({ $or: [{ name: 'bob' }, { age: { $gt: 40 } }] }), ['bob', 'cy'])
    t.same(await names({ name: { $in: ['cy', 'ada', 'zed'] } }), ['ada', 'cy'])
    t.same(await names({ name: { $regex: '^[ab]' } }), ['ada', 'bob'])
    t.same(await names({}, { age: -1 }), ['cy', 'ada', 'dee', 'bob'])
    const page = await people.find({}, { projection: { _id: 0, name: 1, age: 1 } }).sort({ age: 1 }).skip(1).limit(2).toArray()
    t.same(page, [{ name: 'dee', age: 30 }, { name: 'ada', age: 36 }])
    const excluded = await people.findOne({ name: 'bob' }, { projection: { tags: 0, address: 0 } })
    t.same(Object.keys(excluded ?? {}).sort(), ['_id', 'age', 'name'])
    const nested = await people.findOne({ name: 'ada' }, { projection: { _id: 0, 'address.city': 1 } })
    t.same(nested, { address: { city: 'London' } })
    t.equal(await people.findOne({ name: 'nobody' }), null)
  })

  t.test('cursors span several batches, and a closed cursor is gone', async (t) => {
    const numbers = db.collection('numbers')
    await numbers.insertMany(Array.from({ length: 250 }, (_, i) => ({ i })))
    const all = await numbers.find({}).sort({ i: 1 }).batchSize(7).toArray()
    t.equal(all.length, 250)
    t.same(all.slice(0, 3).map((d) => d.i), [0, 1, 2])
    t.equal(all[249]?.i, 249)

    const cursor = numbers.find({}).batchSize(10)
    let seen = 0
    for await (const document of cursor) {
      t.type(document.i, 'number')
      if (++seen === 15) break
    }
    t.equal(seen, 15)
    // Leaving the loop early kills the cursor on the server.
    const killed = await serverError(db.command({ getMore: cursor.id, collection: 'numbers' }))
    t.equal(killed.code, 43)

    const limited = await numbers.find({}).sort({ i: -1 }).limit(120).batchSize(50).toArray()
    t.equal(limited.length, 120)
    t.equal(limited[119]?.i, 130)

    const aggregated = await numbers.aggregate([{ $match: { i: { $lt: 230 } } }], { batchSize: 20 }).toArray()
    t.equal(aggregated.length, 230)

    const empty = await db.command({ find: 'numbers', filter: { i: { $lt: 3 } }, sort: { i: 1 }, batchSize: 0 })
    t.same(empty.cursor.firstBatch, [])
    t.not(empty.cursor.id.toString(), '0')
    const rest = await db.command({ getMore: empty.cursor.id, collection: 'numbers' })
    t.same(rest.cursor.nextBatch.map((d: { i: number }) => d.i), [0, 1, 2])
    t.equal(rest.cursor.id.toString(), '0')

    const missing = await serverError(db.command({ getMore: Long.fromNumber(123456789), collection: 'numbers' }))
    t.equal(missing.code, 43)
    t.equal(missing.codeName, 'CursorNotFound')
  })

  t.test('large documents and batches larger than one TCP read', async (t) => {
    const blobs = db.collection('blobs')
    const blob = 'x'.repeat(1024 * 1024)
    await blobs.insertMany(Array.from({ length: 24 }, (_, i) => ({ i, blob })))
    const back = await blobs.find({}).sort({ i: 1 }).toArray()
    t.equal(back.length, 24)
    t.ok(back.every((document, i) => document.i === i && document.blob === blob))
    await blobs.drop()
  })

  t.test('count, estimatedDocumentCount and distinct', async (t) => {
    const sales = db.collection('sales')
    await sales.insertMany([
      { item: 'pen', tags: ['blue', 'red'], qty: 1 },
      { item: 'pen', tags: ['blue'], qty: 5 },
      { item: 'ink', qty: 2 }
    ])
    t.equal(await sales.countDocuments({ item: 'pen' }), 2)
    t.equal(await sales.countDocuments({}, { skip: 1, limit: 5 }), 2)
    t.equal(await sales.estimatedDocumentCount(), 3)
    t.same((await sales.distinct('item')).sort(), ['ink', 'pen'])
    t.same((await sales.distinct('tags')).sort(), ['blue', 'red'])
    t.same(await sales.distinct('item', { qty: { $gt: 1 } }).then((v) => v.sort()), ['ink', 'pen'])
  })

  t.test('deleteOne and deleteMany', async (t) => {
    const trash = db.collection('trash')
    await trash.insertMany([{ k: 1 }, { k: 1 }, { k: 2 }, { k: 3 }])
    t.equal((await trash.deleteOne({ k: 1 })).deletedCount, 1)
    t.equal((await trash.deleteMany({ k: { $gte: 1 } })).deletedCount, 3)
    t.equal((await trash.deleteMany({})).deletedCount, 0)
    t.equal((await db.collection('never-created').deleteMany({})).deletedCount, 0)
  })

  t.test('aggregate: group, sort, project, unwind and $lookup across collections', async (t) => {
    const orders = db.collection('orders')
    const customers = db.collection('customers')
    await customers.insertMany([{ _id: 'c1' as unknown as ObjectId, name: 'Ann' }, { _id: 'c2' as unknown as ObjectId, name: 'Ben' }])
    await orders.insertMany([
      { customer: 'c1', total: 10, items: ['a', 'b'] },
      { customer: 'c1', total: 5, items: ['c'] },
      { customer: 'c2', total: 7, items: [] }
    ])
    const totals = await orders.aggregate([
      { $group: { _id: '$customer', sum: { $sum: '$total' }, count: { $sum: 1 } } },
      { $sort: { _id: 1 } }
    ]).toArray()
    t.same(totals, [{ _id: 'c1', sum: 15, count: 2 }, { _id: 'c2', sum: 7, count: 1 }])
    const joined = await orders.aggregate([
      { $match: { total: { $gte: 7 } } },
      { $lookup: { from: 'customers', localField: 'customer', foreignField: '_id', as: 'who' } },
      { $unwind: '$who' },
      { $project: { _id: 0, total: 1, name: '$who.name' } },
      { $sort: { total: -1 } }
    ]).toArray()
    t.same(joined, [{ total: 10, name: 'Ann' }, { total: 7, name: 'Ben' }])
    const items = await orders.aggregate([{ $unwind: '$items' }, { $count: 'n' }]).toArray()
    t.same(items, [{ n: 3 }])
  })

  t.test('collections: create, listCollections, drop, dropDatabase', async (t) => {
    await db.createCollection('made')
    const exists = await serverError(db.createCollection('made'))
    t.equal(exists.code, 48)
    t.equal(exists.codeName, 'NamespaceExists')
    const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name)
    t.ok(names.includes('made'))
    t.same((await db.listCollections({ name: 'made' }).toArray()).map((c) => [c.name, c.type]), [['made', 'collection']])
    t.equal(await db.collection('made').drop(), true)
    t.notOk((await db.listCollections({}, { nameOnly: true }).toArray()).some((c) => c.name === 'made'))

    const before = db.collection('before')
    await before.insertMany([{ k: 1 }, { k: 2 }])
    await before.createIndex({ k: 1 }, { unique: true })
    const after = await before.rename('after')
    t.equal(await after.countDocuments(), 2)
    t.same((await after.listIndexes().toArray()).map((index) => index.name), ['_id_', 'k_1'])
    t.equal(await db.collection('before').countDocuments(), 0)
    t.equal((await serverError(db.collection('nowhere').rename('elsewhere'))).code, 26)
    await db.collection('occupied').insertOne({})
    t.equal((await serverError(after.rename('occupied'))).code, 48)

    const stats = await db.stats()
    t.equal(stats.db, target.dbName)
    t.ok(stats.collections >= 1)
    t.ok(stats.objects >= 2)

    const scratch = target.client.db(`${target.dbName}_scratch`)
    await scratch.collection('x').insertOne({ a: 1 })
    t.equal(await scratch.dropDatabase(), true)
    t.equal(await scratch.collection('x').countDocuments(), 0)
  })

  t.test('unsupported things are refused the way mongod refuses them', async (t) => {
    const unknown = await serverError(db.command({ frobnicate: 1 }))
    t.equal(unknown.code, 59)
    t.equal(unknown.codeName, 'CommandNotFound')
    t.equal((await db.command({ ping: 1 })).ok, 1)
    const info = await db.admin().command({ buildInfo: 1 })
    t.match(info.version, /^\d+\.\d+\.\d+/)
    if (!target.isReplicaSet) {
      // Change streams need a replica set; a standalone mongod refuses them with 40573.
      const stream = await serverError(db.collection('watched').aggregate([{ $changeStream: {} }]).toArray())
      t.equal(stream.code, 40573)
    }
  })
})
