import { test } from 'tap'
import { MongoServerError } from 'mongodb'
import type { ObjectId } from 'mongodb'
import { startTarget } from './target.js'
import { serverError } from './errors.js'

const id = (value: string): ObjectId => value as unknown as ObjectId

test('multi-document transactions on a replica set', async (t) => {
  const target = await startTarget(t, { replicaSet: true })
  const skip = target.isReplicaSet ? false : 'transactions need a replica set'
  const db = target.db
  const client = target.client

  t.test('commit: the session sees its own writes, others only after commit', { skip }, async (t) => {
    const accounts = db.collection('accounts')
    await accounts.insertMany([{ _id: id('a'), balance: 100 }, { _id: id('b'), balance: 0 }])
    const session = client.startSession()
    t.teardown(() => session.endSession())
    session.startTransaction()
    await accounts.updateOne({ _id: id('a') }, { $inc: { balance: -30 } }, { session })
    await accounts.updateOne({ _id: id('b') }, { $inc: { balance: 30 } }, { session })
    await db.collection('ledger').insertOne({ from: 'a', to: 'b', amount: 30 }, { session })

    t.same((await accounts.find({}, { session }).sort({ _id: 1 }).toArray()).map((d) => d.balance), [70, 30])
    t.equal(await db.collection('ledger').countDocuments({}, { session }), 1)
    t.same((await accounts.aggregate([{ $group: { _id: null, total: { $sum: '$balance' } } }], { session }).toArray())[0]?.total, 100)
    t.same((await accounts.find({}).sort({ _id: 1 }).toArray()).map((d) => d.balance), [100, 0])
    t.equal(await db.collection('ledger').countDocuments({}), 0)

    await session.commitTransaction()
    t.same((await accounts.find({}).sort({ _id: 1 }).toArray()).map((d) => d.balance), [70, 30])
    t.equal(await db.collection('ledger').countDocuments({}), 1)
  })

  t.test('abortTransaction and a throwing callback roll everything back', { skip }, async (t) => {
    const items = db.collection('rollback')
    await items.insertOne({ _id: id('x'), v: 1 })
    const session = client.startSession()
    t.teardown(() => session.endSession())
    session.startTransaction()
    await items.updateOne({ _id: id('x') }, { $set: { v: 2 } }, { session })
    await items.insertOne({ _id: id('y') }, { session })
    await session.abortTransaction()
    t.same(await items.find({}).toArray(), [{ _id: 'x', v: 1 }])

    const thrown = await session.withTransaction(async () => {
      await items.deleteOne({ _id: id('x') }, { session })
      await items.insertOne({ _id: id('z') }, { session })
      throw new Error('callback failed')
    }).catch((error: unknown) => error)
    t.equal((thrown as Error).message, 'callback failed')
    t.same(await items.find({}).toArray(), [{ _id: 'x', v: 1 }])
  })

  t.test('a duplicate key inside a transaction fails it and commits nothing', { skip }, async (t) => {
    const users = db.collection('txn_users')
    await users.createIndex({ email: 1 }, { unique: true })
    await users.insertOne({ email: 'taken@x.io' })
    const session = client.startSession()
    t.teardown(() => session.endSession())
    const error = await session.withTransaction(async () => {
      await users.insertOne({ email: 'new@x.io' }, { session })
      await users.insertOne({ email: 'taken@x.io' }, { session })
    }).catch((caught: unknown) => caught)
    t.ok(error instanceof MongoServerError)
    t.equal((error as MongoServerError).code, 11000)
    t.same((await users.find({}, { projection: { _id: 0 } }).toArray()), [{ email: 'taken@x.io' }])
  })

  t.test('two transactions writing one document: WriteConflict 112, labelled transient', { skip }, async (t) => {
    const docs = db.collection('conflict')
    await docs.insertOne({ _id: id('d'), v: 0 })
    const first = client.startSession()
    const second = client.startSession()
    t.teardown(async () => {
      await first.endSession()
      await second.endSession()
    })
    first.startTransaction()
    second.startTransaction()
    await docs.updateOne({ _id: id('d') }, { $set: { v: 1 } }, { session: first })
    const conflict = await serverError(docs.updateOne({ _id: id('d') }, { $set: { v: 2 } }, { session: second }))
    t.equal(conflict.code, 112)
    t.equal(conflict.codeName, 'WriteConflict')
    t.ok(conflict.hasErrorLabel('TransientTransactionError'))
    await second.abortTransaction()
    await first.commitTransaction()
    t.same(await docs.findOne({ _id: id('d') }), { _id: 'd', v: 1 })
  })

  t.test('withTransaction retries after a write conflict and then succeeds', { skip }, async (t) => {
    const counters = db.collection('counters')
    await counters.insertOne({ _id: id('c'), n: 0 })
    const session = client.startSession()
    const other = client.startSession()
    t.teardown(async () => {
      await session.endSession()
      await other.endSession()
    })
    let attempts = 0
    await session.withTransaction(async () => {
      attempts++
      await counters.findOne({ _id: id('c') }, { session })
      if (attempts === 1) {
        // Another transaction changes the document after this one began, and commits first.
        await other.withTransaction(async () => {
          await counters.updateOne({ _id: id('c') }, { $inc: { n: 100 } }, { session: other })
        })
      }
      await counters.updateOne({ _id: id('c') }, { $inc: { n: 1 } }, { session })
    })
    t.equal(attempts, 2)
    t.same(await counters.findOne({ _id: id('c') }), { _id: 'c', n: 101 })
  })

  t.test('reads inside a transaction see the snapshot taken when it started', { skip }, async (t) => {
    const docs = db.collection('snapshot')
    await docs.insertMany([{ _id: id('kept'), v: 1 }, { _id: id('changed'), v: 1 }, { _id: id('removed'), v: 1 }])
    const session = client.startSession()
    t.teardown(() => session.endSession())
    session.startTransaction({ readConcern: { level: 'snapshot' } })
    t.equal(await docs.countDocuments({}, { session }), 3)
    await docs.updateOne({ _id: id('changed') }, { $set: { v: 2 } })
    await docs.deleteOne({ _id: id('removed') })
    await docs.insertOne({ _id: id('added'), v: 1 })
    t.same(await docs.find({ v: 1 }, { session }).sort({ _id: 1 }).toArray(), [
      { _id: 'changed', v: 1 }, { _id: 'kept', v: 1 }, { _id: 'removed', v: 1 }
    ])
    t.same(await docs.findOne({ _id: id('removed') }, { session }), { _id: 'removed', v: 1 })
    t.equal(await docs.findOne({ _id: id('added') }, { session }), null)
    await session.commitTransaction()
    t.same((await docs.find({}).sort({ _id: 1 }).toArray()).map((d) => [d._id, d.v]), [['added', 1], ['changed', 2], ['kept', 1]])
  })

  t.test('a write outside the transaction waits for the transaction to end', { skip }, async (t) => {
    const docs = db.collection('waiting')
    await docs.insertOne({ _id: id('w'), by: 'nobody' })
    const session = client.startSession()
    t.teardown(() => session.endSession())
    session.startTransaction()
    await docs.updateOne({ _id: id('w') }, { $set: { by: 'transaction' } }, { session })
    let plainDone = false
    const plain = docs.updateOne({ _id: id('w') }, { $set: { by: 'plain' } }).then((result) => {
      plainDone = true
      return result
    })
    t.same(await docs.findOne({ _id: id('w') }), { _id: 'w', by: 'nobody' })
    t.equal(plainDone, false)
    await session.commitTransaction()
    t.equal((await plain).modifiedCount, 1)
    t.same(await docs.findOne({ _id: id('w') }), { _id: 'w', by: 'plain' })
  })
})

test('a standalone server refuses transactions', async (t) => {
  const target = await startTarget(t, { replicaSet: false })
  const skip = target.isReplicaSet ? 'the target is a replica set' : false
  t.test('withTransaction fails and writes nothing', { skip }, async (t) => {
    const session = target.client.startSession()
    t.teardown(() => session.endSession())
    const items = target.db.collection('standalone')
    const error = await session.withTransaction(async () => {
      await items.insertOne({ a: 1 }, { session })
    }).catch((caught: unknown) => caught)
    t.ok(error instanceof MongoServerError)
    // mongod answers code 20 ("Transaction numbers are only allowed on a replica set member or
    // mongos"), which the driver rewords as the retryable-writes hint.
    t.match((error as Error).message, /does not support retryable writes|Transaction numbers are only allowed/)
    t.equal(await items.countDocuments(), 0)
  })
})
