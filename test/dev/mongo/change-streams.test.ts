// Collection change streams through the driver's collection.watch(), on a replica set. Like the
// rest of the suite, it runs against a real replica set when MONGODB_URI names one.
import { test } from 'tap'
import { MongoClient, Timestamp } from 'mongodb'
import type { ChangeStream, ChangeStreamDocument, Collection, Document } from 'mongodb'
import { setTimeout as sleep } from 'node:timers/promises'
import { startMongo } from '../../../dev/mongo/index.js'
import { serverError } from './errors.js'
import { startTarget } from './target.js'

interface Counter { _id: string, seq: number, updatedAt?: Date }

/** Opens the stream on the server (the driver sends the aggregate lazily) and checks it starts empty. */
async function opened<T extends Document> (stream: ChangeStream<T>): Promise<void> {
  const first = await stream.tryNext()
  if (first !== null) throw new Error(`a new change stream returned an event at once: ${JSON.stringify(first)}`)
}

/** A pending next(), observed from the start so that its rejection is never left unhandled. */
function pendingNext<T extends Document> (stream: ChangeStream<T>): Promise<unknown> {
  return stream.next().then((event) => event, (error: unknown) => error)
}

async function settlesWithin (promise: Promise<unknown>, ms: number): Promise<boolean> {
  return await Promise.race([promise.then(() => true), sleep(ms).then(() => false)])
}

test('collection change streams', async (t) => {
  const target = await startTarget(t, { replicaSet: true })
  const skip = target.isReplicaSet ? false : 'change streams need a replica set'
  const db = target.db

  t.test('insert, update with updateLookup, replace and delete arrive in order', { skip }, async (t) => {
    const feed = db.collection<Counter>('feed')
    const stream = feed.watch([], { fullDocument: 'updateLookup', maxAwaitTimeMS: 200 })
    t.teardown(() => stream.close())
    await opened(stream)

    const at = new Date('2024-05-01T10:00:00Z')
    await feed.insertOne({ _id: 'u1', seq: 1 })
    const inserted = await stream.next()
    t.equal(inserted.operationType, 'insert')
    if (inserted.operationType !== 'insert') return
    t.same(inserted.fullDocument, { _id: 'u1', seq: 1 })
    t.same(inserted.documentKey, { _id: 'u1' })
    t.same(inserted.ns, { db: target.dbName, coll: 'feed' })
    t.ok(inserted.clusterTime instanceof Timestamp, 'clusterTime is a timestamp')
    t.ok(inserted.wallTime instanceof Date, 'wallTime is a date')
    t.type((inserted._id as { _data: unknown })._data, 'string')

    await feed.updateOne({ _id: 'u1' }, { $inc: { seq: 1 }, $set: { updatedAt: at } })
    const updated = await stream.next()
    t.equal(updated.operationType, 'update')
    if (updated.operationType !== 'update') return
    t.same(updated.documentKey, { _id: 'u1' })
    t.same(updated.updateDescription.updatedFields, { seq: 2, updatedAt: at })
    t.same(updated.updateDescription.removedFields, [])
    t.same(updated.fullDocument, { _id: 'u1', seq: 2, updatedAt: at })
    t.ok(inserted.clusterTime !== undefined && updated.clusterTime?.greaterThan(inserted.clusterTime) === true, 'cluster times increase')

    await feed.updateOne({ _id: 'u1' }, { $unset: { updatedAt: '' } })
    const unset = await stream.next()
    t.same(unset.operationType === 'update' ? unset.updateDescription.removedFields : undefined, ['updatedAt'])

    await feed.replaceOne({ _id: 'u1' }, { seq: 10 })
    const replaced = await stream.next()
    t.equal(replaced.operationType, 'replace')
    t.same(replaced.operationType === 'replace' ? replaced.fullDocument : undefined, { _id: 'u1', seq: 10 })

    await feed.deleteOne({ _id: 'u1' })
    const deleted = await stream.next()
    t.equal(deleted.operationType, 'delete')
    t.same(deleted.operationType === 'delete' ? deleted.documentKey : undefined, { _id: 'u1' })
    t.notOk('fullDocument' in deleted, 'a delete carries no document')
  })

  t.test('without updateLookup an update carries no fullDocument', { skip }, async (t) => {
    const plain = db.collection<Counter>('plain')
    const stream = plain.watch([], { maxAwaitTimeMS: 200 })
    t.teardown(() => stream.close())
    await opened(stream)
    await plain.insertOne({ _id: 'p', seq: 1 })
    await plain.updateOne({ _id: 'p' }, { $inc: { seq: 1 } })
    t.equal((await stream.next()).operationType, 'insert')
    const updated = await stream.next()
    t.equal(updated.operationType, 'update')
    t.notOk('fullDocument' in updated)
  })

  t.test('upserts through findOneAndUpdate: an insert event, then update events', { skip }, async (t) => {
    const counters = db.collection<Counter>('changeFeedCounters')
    const stream = counters.watch([{ $match: { operationType: { $in: ['insert', 'update', 'replace'] } } }], { fullDocument: 'updateLookup', maxAwaitTimeMS: 200 })
    t.teardown(() => stream.close())
    await opened(stream)
    const bump = async (userId: string): Promise<void> => {
      await counters.findOneAndUpdate({ _id: userId }, { $inc: { seq: 1 }, $set: { updatedAt: new Date() } }, { upsert: true, returnDocument: 'after' })
    }
    await bump('alice')
    const created = await stream.next()
    t.equal(created.operationType, 'insert')
    t.equal(created.operationType === 'insert' ? created.fullDocument.seq : undefined, 1)
    await bump('alice')
    const bumped = await stream.next()
    t.equal(bumped.operationType, 'update')
    if (bumped.operationType !== 'update') return
    t.same(Object.keys(bumped.updateDescription.updatedFields ?? {}).sort(), ['seq', 'updatedAt'])
    t.equal(bumped.fullDocument?.seq, 2)
  })

  t.test('a $match pipeline filters on the event fields', { skip }, async (t) => {
    const items = db.collection<{ _id: string, x: number }>('matched')
    const stream = items.watch<{ _id: string, x: number }, ChangeStreamDocument<{ _id: string, x: number }>>([
      { $match: { $or: [{ operationType: 'insert', 'fullDocument.x': { $gte: 10 } }, { operationType: 'update', 'documentKey._id': 'b' }] } }
    ], { maxAwaitTimeMS: 200 })
    t.teardown(() => stream.close())
    await opened(stream)
    await items.insertMany([{ _id: 'a', x: 1 }, { _id: 'b', x: 20 }])
    await items.updateOne({ _id: 'a' }, { $set: { x: 2 } })
    await items.updateOne({ _id: 'b' }, { $set: { x: 21 } })
    await items.deleteOne({ _id: 'b' })
    const first = await stream.next()
    t.same([first.operationType, first.operationType === 'insert' ? first.documentKey._id : undefined], ['insert', 'b'])
    const second = await stream.next()
    t.same([second.operationType, second.operationType === 'update' ? second.updateDescription.updatedFields : undefined], ['update', { x: 21 }])
    t.equal(await stream.tryNext(), null, 'nothing else matched')
  })

  t.test('a $project that keeps _id shapes the events', { skip }, async (t) => {
    const shaped = db.collection('shaped')
    const stream = shaped.watch([{ $project: { operationType: 1, 'fullDocument.x': 1 } }], { maxAwaitTimeMS: 200 })
    t.teardown(() => stream.close())
    await opened(stream)
    await shaped.insertOne({ _id: 'p' as unknown as never, x: 1, y: 2 })
    const event = await stream.next() as unknown as Document
    t.same(Object.keys(event).sort(), ['_id', 'fullDocument', 'operationType'])
    t.same(event.fullDocument, { x: 1 })
  })

  t.test('a transaction\'s writes appear when it commits, never when it aborts', { skip }, async (t) => {
    const counters = db.collection<Counter>('txnCounters')
    const stream = counters.watch([], { maxAwaitTimeMS: 200 })
    t.teardown(() => stream.close())
    await opened(stream)
    const session = target.client.startSession()
    t.teardown(() => session.endSession())

    session.startTransaction()
    await counters.findOneAndUpdate({ _id: 'x' }, { $inc: { seq: 1 } }, { upsert: true, session })
    await counters.findOneAndUpdate({ _id: 'y' }, { $inc: { seq: 1 } }, { upsert: true, session })
    await counters.findOneAndUpdate({ _id: 'x' }, { $inc: { seq: 1 } }, { upsert: true, session })
    t.equal(await stream.tryNext(), null, 'nothing before the commit')
    await session.commitTransaction()
    const events = [await stream.next(), await stream.next(), await stream.next()]
    t.same(events.map((event) => event.operationType), ['insert', 'insert', 'update'])
    t.same(events.map((event) => 'documentKey' in event ? event.documentKey._id : undefined), ['x', 'y', 'x'])
    const [first] = events
    if (first?.operationType === 'insert' && first.clusterTime !== undefined) {
      const commitTime = first.clusterTime
      t.ok(first.lsid !== undefined && first.txnNumber !== undefined, 'events of a transaction name its session and number')
      t.ok(events.every((event) => 'clusterTime' in event && event.clusterTime?.equals(commitTime) === true), 'one cluster time: the commit\'s')
    }

    session.startTransaction()
    await counters.updateOne({ _id: 'x' }, { $inc: { seq: 100 } }, { session })
    await counters.insertOne({ _id: 'z', seq: 1 }, { session })
    await session.abortTransaction()
    await counters.insertOne({ _id: 'after-abort', seq: 0 })
    const next = await stream.next()
    t.same(next.operationType === 'insert' ? next.documentKey : undefined, { _id: 'after-abort' }, 'the aborted writes never appear')
  })

  t.test('resumeAfter and startAfter resume after an event or a postBatchResumeToken', { skip }, async (t) => {
    const log = db.collection<{ _id: string }>('resumed')
    const first = log.watch([], { maxAwaitTimeMS: 200 })
    await opened(first)
    await log.insertMany([{ _id: 'a' }, { _id: 'b' }, { _id: 'c' }])
    const a = await first.next()
    await first.close()

    const resumed = log.watch([], { resumeAfter: a._id, maxAwaitTimeMS: 200 })
    t.teardown(() => resumed.close())
    t.same([(await resumed.next()), (await resumed.next())].map((event) => 'documentKey' in event ? event.documentKey._id : undefined), ['b', 'c'])
    t.equal(await resumed.tryNext(), null)
    const highWaterMark = resumed.resumeToken
    await log.insertOne({ _id: 'd' })

    const fromMark = log.watch([], { startAfter: highWaterMark, maxAwaitTimeMS: 200 })
    t.teardown(() => fromMark.close())
    const d = await fromMark.next()
    t.same('documentKey' in d ? d.documentKey : undefined, { _id: 'd' })
  })

  t.test('a stream with no writes waits for maxAwaitTimeMS and answers nothing, without polling hard', { skip }, async (t) => {
    const client = await target.connect({ monitorCommands: true })
    let getMores = 0
    client.on('commandStarted', (event) => { if (event.commandName === 'getMore') getMores++ })
    const quiet = client.db(target.dbName).collection('quiet')
    const stream = quiet.watch([], { maxAwaitTimeMS: 300 })
    t.teardown(() => stream.close())
    await opened(stream)
    const started = Date.now()
    t.equal(await stream.tryNext(), null)
    t.ok(Date.now() - started >= 250, `tryNext waited for the server (${Date.now() - started} ms)`)

    getMores = 0
    const pending = stream.next()
    await sleep(1000)
    t.ok(getMores >= 2 && getMores <= 5, `about one getMore per maxAwaitTimeMS while idle (${getMores} in 1 s)`)
    await quiet.insertOne({ woke: true })
    t.equal((await pending).operationType, 'insert')
  })

  t.test('closing the stream releases the server at once', { skip }, async (t) => {
    const waiting = db.collection('waiting')
    const stream = waiting.watch([], { maxAwaitTimeMS: 20_000 })
    // next() sends the aggregate, then a getMore the server holds for up to 20 s.
    const pending = pendingNext(stream)
    await sleep(300)
    const started = Date.now()
    await stream.close()
    t.ok(await settlesWithin(pending, 3000), 'the waiting next() settles')
    t.ok(Date.now() - started < 3000, `close took ${Date.now() - started} ms, not the 20 s await`)
    // The server still serves streams and writes.
    const again = waiting.watch([], { maxAwaitTimeMS: 200 })
    t.teardown(() => again.close())
    await opened(again)
    await waiting.insertOne({ after: 'close' })
    t.equal((await again.next()).operationType, 'insert')
  })

  t.test('closing the client releases its waiting getMore', { skip }, async (t) => {
    const other = await target.connect()
    const stream = other.db(target.dbName).collection('client-close').watch([], { maxAwaitTimeMS: 20_000 })
    const pending = pendingNext(stream)
    await sleep(300)
    const started = Date.now()
    await other.close()
    t.ok(await settlesWithin(pending, 3000), 'the waiting next() settles')
    t.ok(Date.now() - started < 3000, `client.close took ${Date.now() - started} ms`)
    t.equal((await db.command({ ping: 1 })).ok, 1)
  })

  t.test('dropping the collection ends its stream with drop and invalidate', { skip }, async (t) => {
    const doomed = db.collection('doomed')
    await doomed.insertOne({ x: 1 })
    const stream = doomed.watch([], { maxAwaitTimeMS: 200 })
    t.teardown(() => stream.close())
    await opened(stream)
    await doomed.drop()
    t.equal((await stream.next()).operationType, 'drop')
    const invalidate = await stream.next()
    t.equal(invalidate.operationType, 'invalidate')
    const resumed = await serverError(doomed.watch([], { resumeAfter: invalidate._id }).next())
    t.equal(resumed.code, 260, 'resumeAfter an invalidate is refused (startAfter is the way)')
  })

  t.test('pipelines mongod refuses', { skip }, async (t) => {
    const refused = db.collection('refused')
    const grouped = await serverError(refused.watch([{ $group: { _id: '$operationType' } }]).next())
    t.equal(grouped.code, 20, '$group is not permitted after $changeStream')
    const stream = refused.watch([{ $project: { _id: 0 } }], { maxAwaitTimeMS: 200 })
    await opened(stream)
    await refused.insertOne({ x: 1 })
    const modified = await serverError(stream.next())
    t.equal(modified.code, 280, 'an event whose _id the pipeline removed is fatal')
    await stream.close()
  })
})

test('history: resuming from a point no longer kept answers ChangeStreamHistoryLost', { skip: process.env.MONGODB_URI !== undefined && process.env.MONGODB_URI !== '' ? 'needs a stand-in with a small history' : false }, async (t) => {
  const server = await startMongo({ replicaSet: 'rs0', changeStreamHistory: 5 })
  // A short server selection: once the server is gone, the driver's attempt to resume gives up soon.
  const client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 1000 })
  t.teardown(async () => {
    await client.close()
    await server.close()
  })
  const events: Collection<{ _id: number }> = client.db('history').collection('events')
  const stream = events.watch([], { maxAwaitTimeMS: 100 })
  await opened(stream)
  await events.insertOne({ _id: 0 })
  const token = (await stream.next())._id
  await stream.close()
  for (let i = 1; i <= 10; i++) await events.insertOne({ _id: i })
  const lost = await serverError(events.watch([], { resumeAfter: token }).next())
  t.equal(lost.code, 286)
  t.equal(lost.codeName, 'ChangeStreamHistoryLost')

  // A server closing releases the getMores waiting on it.
  const live = events.watch([], { maxAwaitTimeMS: 20_000 })
  const pending = pendingNext(live)
  await sleep(300)
  const started = Date.now()
  await server.close()
  t.ok(Date.now() - started < 1000, `server.close took ${Date.now() - started} ms, not the 20 s await`)
  t.ok(await settlesWithin(pending, 4000), 'the waiting next() fails once resuming finds no server')
})

test('a standalone refuses change streams with 40573', { skip: process.env.MONGODB_URI !== undefined && process.env.MONGODB_URI !== '' ? 'the target is one deployment' : false }, async (t) => {
  const server = await startMongo()
  const client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 5000 })
  t.teardown(async () => {
    await client.close()
    await server.close()
  })
  const refused = await serverError(client.db('standalone').collection('watched').watch().next())
  t.equal(refused.code, 40573)
})
