import { test } from 'tap'
import type { Document, ObjectId } from 'mongodb'
import { startTarget } from './target.js'
import { serverError } from './errors.js'

const id = (value: string): ObjectId => value as unknown as ObjectId

test('update operators, upserts and findAndModify', async (t) => {
  const target = await startTarget(t)
  const db = target.db
  let counter = 0
  // Applies one update to a fresh document and returns the stored result without its _id.
  const afterUpdate = async (start: Document, update: Document, options: Document = {}): Promise<Document | null> => {
    const collection = db.collection(`ops${counter++}`)
    await collection.insertOne({ _id: id('doc'), ...start })
    const result = await collection.updateOne({ _id: id('doc'), ...(options.filter ?? {}) }, update, options.arrayFilters === undefined ? {} : { arrayFilters: options.arrayFilters })
    t.equal(result.matchedCount, 1)
    return await collection.findOne({ _id: id('doc') }, { projection: { _id: 0 } })
  }

  t.test('field operators', async (t) => {
    t.same(await afterUpdate({ a: 1 }, { $set: { a: 2, 'b.c': 3 } }), { a: 2, b: { c: 3 } })
    t.same(await afterUpdate({ a: 1, b: 2 }, { $unset: { a: '' } }), { b: 2 })
    t.same(await afterUpdate({ a: 1 }, { $inc: { a: 5, n: 2 } }), { a: 6, n: 2 })
    t.same(await afterUpdate({ a: 3 }, { $mul: { a: 4 } }), { a: 12 })
    t.same(await afterUpdate({ a: 3, b: 3 }, { $min: { a: 1, b: 9 } }), { a: 1, b: 3 })
    t.same(await afterUpdate({ a: 3, b: 3 }, { $max: { a: 1, b: 9 } }), { a: 3, b: 9 })
    t.same(await afterUpdate({ a: 1 }, { $rename: { a: 'z' } }), { z: 1 })
    t.same(await afterUpdate({ a: 5 }, { $bit: { a: { and: 4 } } }), { a: 4 })
    const dated = await afterUpdate({ a: 1 }, { $currentDate: { at: true } })
    t.ok(dated?.at instanceof Date)
    t.same(await afterUpdate({ a: 1 }, { $setOnInsert: { b: 1 } }), { a: 1 })
  })

  t.test('$set, $unset and $inc through embedded documents, arrays and odd values', async (t) => {
    t.same(await afterUpdate({ a: { b: 1, c: 2 } }, { $set: { 'a.b': { d: [1] } }, $unset: { 'a.c': '', 'x.y': '' }, $inc: { 'a.n': 2, 'm.n': 1 } }),
      { a: { b: { d: [1] }, n: 2 }, m: { n: 1 } }, 'new fields come last, missing paths are made, unsetting a missing one is nothing')
    t.same(await afterUpdate({ a: { n: 1.5 }, b: 1 }, { $inc: { 'a.n': -0.5, b: 0 } }), { a: { n: 1 }, b: 1 })
    t.same(await afterUpdate({ l: [{ v: 1 }, { v: 2 }] }, { $set: { 'l.1.v': 5 } }), { l: [{ v: 1 }, { v: 5 }] }, 'a numeric part indexes an array')
    t.same(await afterUpdate({ o: { 1: 'x' } }, { $set: { 'o.1': 'y' } }), { o: { 1: 'y' } }, 'and names a field of a document')
    t.same(await afterUpdate({ a: 1 }, { $set: { a: 1 } }), { a: 1 })
    const unchanged = await db.collection('counts-plain').insertOne({ k: 1, v: 1 })
    const same = await db.collection('counts-plain').updateOne({ _id: unchanged.insertedId }, { $set: { v: 1 } })
    t.same([same.matchedCount, same.modifiedCount], [1, 0], 'setting the value a field has modifies nothing')
    const strings = db.collection('inc-errors')
    await strings.insertOne({ _id: id('s'), a: 'text', n: null, c: 'scalar' })
    t.equal((await serverError(strings.updateOne({ _id: id('s') }, { $inc: { a: 1 } }))).code, 14, '$inc of a string: TypeMismatch')
    t.equal((await serverError(strings.updateOne({ _id: id('s') }, { $inc: { n: 1 } }))).code, 14, '$inc of null: TypeMismatch')
    t.equal((await serverError(strings.updateOne({ _id: id('s') }, { $set: { 'c.d': 1 } }))).code, 28, 'a field inside a string cannot be made: PathNotViable')
    t.same(await strings.findOne({ _id: id('s') }, { projection: { _id: 0 } }), { a: 'text', n: null, c: 'scalar' }, 'a refused update changes nothing')
  })

  t.test('array operators', async (t) => {
    t.same(await afterUpdate({ l: [1] }, { $push: { l: 2 } }), { l: [1, 2] })
    t.same(await afterUpdate({ l: [3] }, { $push: { l: { $each: [1, 5, 2], $sort: 1, $slice: 3 } } }), { l: [1, 2, 3] })
    t.same(await afterUpdate({ l: [1, 2] }, { $addToSet: { l: 2 } }), { l: [1, 2] })
    t.same(await afterUpdate({ l: [1] }, { $addToSet: { l: { $each: [1, 3] } } }), { l: [1, 3] })
    t.same(await afterUpdate({ l: [1, 2, 3] }, { $pop: { l: 1 } }), { l: [1, 2] })
    t.same(await afterUpdate({ l: [1, 2, 3] }, { $pop: { l: -1 } }), { l: [2, 3] })
    t.same(await afterUpdate({ l: [1, 2, 3, 2] }, { $pull: { l: 2 } }), { l: [1, 3] })
    t.same(await afterUpdate({ l: [{ k: 1 }, { k: 2 }] }, { $pull: { l: { k: 1 } } }), { l: [{ k: 2 }] })
    t.same(await afterUpdate({ l: [1, 2, 3] }, { $pullAll: { l: [1, 3] } }), { l: [2] })
  })

  t.test('positional $ and arrayFilters', async (t) => {
    t.same(await afterUpdate({ l: [1, 2, 3] }, { $set: { 'l.$': 20 } }, { filter: { l: 2 } }), { l: [1, 20, 3] })
    t.same(await afterUpdate({ l: [{ k: 1, v: 0 }, { k: 2, v: 0 }] }, { $set: { 'l.$.v': 9 } }, { filter: { 'l.k': 2 } }), { l: [{ k: 1, v: 0 }, { k: 2, v: 9 }] })
    t.same(await afterUpdate({ l: [1, 5, 7] }, { $set: { 'l.$[big]': 0 } }, { arrayFilters: [{ big: { $gt: 4 } }] }), { l: [1, 0, 0] })
    t.same(await afterUpdate({ l: [1, 2] }, { $inc: { 'l.$[]': 10 } }), { l: [11, 12] })
  })

  t.test('matched and modified counts; multi; replaceOne', async (t) => {
    const items = db.collection('counts')
    await items.insertMany([{ k: 1, v: 0 }, { k: 1, v: 0 }, { k: 2, v: 5 }])
    const one = await items.updateOne({ k: 1 }, { $set: { v: 1 } })
    t.same([one.matchedCount, one.modifiedCount], [1, 1])
    const many = await items.updateMany({ k: 1 }, { $set: { v: 1 } })
    t.same([many.matchedCount, many.modifiedCount], [2, 1])
    const none = await items.updateMany({ k: 3 }, { $set: { v: 1 } })
    t.same([none.matchedCount, none.modifiedCount, none.upsertedCount], [0, 0, 0])
    const replaced = await items.replaceOne({ k: 2 }, { k: 2, replaced: true })
    t.equal(replaced.modifiedCount, 1)
    t.same(await items.findOne({ k: 2 }, { projection: { _id: 0 } }), { k: 2, replaced: true })
    const pipeline = await items.updateMany({ k: 1 }, [{ $set: { doubled: { $multiply: ['$v', 2] } } }])
    t.equal(pipeline.modifiedCount, 2)
    t.same((await items.find({ k: 1 }).toArray()).map((d) => d.doubled), [2, 2])
  })

  t.test('upserts seed the new document from the filter and apply $setOnInsert', async (t) => {
    const items = db.collection('upserts')
    const created = await items.updateOne({ email: 'a@x.io', 'profile.tier': 'free' }, { $set: { seen: 1 }, $setOnInsert: { created: true } }, { upsert: true })
    t.equal(created.upsertedCount, 1)
    t.equal(created.matchedCount, 0)
    t.same(await items.findOne({ _id: created.upsertedId ?? undefined }, { projection: { _id: 0 } }), { email: 'a@x.io', profile: { tier: 'free' }, seen: 1, created: true })
    const again = await items.updateOne({ email: 'a@x.io' }, { $set: { seen: 2 }, $setOnInsert: { created: false } }, { upsert: true })
    t.same([again.matchedCount, again.modifiedCount, again.upsertedCount], [1, 1, 0])
    t.same(await items.findOne({ email: 'a@x.io' }, { projection: { _id: 0, seen: 1, created: 1 } }), { seen: 2, created: true })
    const withId = await items.updateOne({ _id: id('chosen') }, { $inc: { n: 1 } }, { upsert: true })
    t.equal(withId.upsertedId, 'chosen')
    const replacedUpsert = await items.replaceOne({ _id: id('r1') }, { whole: true }, { upsert: true })
    t.equal(replacedUpsert.upsertedId, 'r1')
    t.same(await items.findOne({ _id: id('r1') }), { _id: 'r1', whole: true })
    // A filter the seed cannot match as a whole ($or, a range) still gets the update applied.
    const leased = await items.updateOne(
      { _id: id('lease'), $or: [{ holder: 'someone-else' }, { until: { $lt: 5 } }] },
      { $set: { holder: 'me', until: 10 } },
      { upsert: true }
    )
    t.equal(leased.upsertedId, 'lease')
    t.same(await items.findOne({ _id: id('lease') }), { _id: 'lease', holder: 'me', until: 10 })
  })

  t.test('_id is immutable and bad updates are refused without change', async (t) => {
    const items = db.collection('immutable')
    await items.insertOne({ _id: id('x'), v: 1 })
    const changed = await serverError(items.updateOne({ _id: id('x') }, { $set: { _id: 'y', v: 2 } }))
    t.equal(changed.code, 66)
    const replaced = await serverError(items.replaceOne({ _id: id('x') }, { _id: 'y', v: 2 }))
    t.equal(replaced.code, 66)
    const unknownOperator = await serverError(items.updateOne({ _id: id('x') }, { $frob: { v: 2 } }))
    t.equal(unknownOperator.code, 9)
    const conflicting = await serverError(items.updateOne({ _id: id('x') }, { $set: { v: 2 }, $inc: { v: 1 } }))
    t.equal(conflicting.code, 40)
    t.same(await items.findOne({ _id: id('x') }), { _id: 'x', v: 1 })
  })

  t.test('findOneAndUpdate, findOneAndReplace and findOneAndDelete', async (t) => {
    const queue = db.collection('queue')
    await queue.insertMany([{ job: 'a', pri: 2, state: 'new' }, { job: 'b', pri: 9, state: 'new' }, { job: 'c', pri: 5, state: 'new' }])
    const before = await queue.findOneAndUpdate({ state: 'new' }, { $set: { state: 'taken' } }, { sort: { pri: -1 }, projection: { _id: 0, job: 1, state: 1 } })
    t.same(before, { job: 'b', state: 'new' })
    const after = await queue.findOneAndUpdate({ state: 'new' }, { $set: { state: 'taken' } }, { sort: { pri: -1 }, returnDocument: 'after', projection: { _id: 0, job: 1, state: 1 } })
    t.same(after, { job: 'c', state: 'taken' })
    const nothing = await queue.findOneAndUpdate({ state: 'gone' }, { $set: { state: 'x' } })
    t.equal(nothing, null)
    const upserted = await queue.findOneAndUpdate({ job: 'd' }, { $set: { pri: 1 } }, { upsert: true, returnDocument: 'after', projection: { _id: 0 } })
    t.same(upserted, { job: 'd', pri: 1 })
    const upsertedBefore = await queue.findOneAndUpdate({ job: 'e' }, { $set: { pri: 1 } }, { upsert: true, includeResultMetadata: true })
    t.equal(upsertedBefore.value, null)
    t.equal(upsertedBefore.lastErrorObject?.updatedExisting, false)
    t.ok(upsertedBefore.lastErrorObject?.upserted !== undefined)
    const replaced = await queue.findOneAndReplace({ job: 'a' }, { job: 'a2' }, { returnDocument: 'after', projection: { _id: 0 } })
    t.same(replaced, { job: 'a2' })
    const removed = await queue.findOneAndDelete({ state: 'taken' }, { sort: { pri: 1 }, projection: { _id: 0, job: 1 } })
    t.same(removed, { job: 'c' })
    t.equal(await queue.countDocuments({ job: 'c' }), 0)
  })
})
