import { test } from 'tap'
import { MongoServerError } from 'mongodb'
import { startTarget } from './target.js'

for (const replicaSet of [false, true]) {
  test(`ordinary CRUD through the driver (${replicaSet ? 'replica set' : 'standalone'})`, async (t) => {
    const target = await startTarget(t, { replicaSet })
    const people = target.db.collection('people')

    const inserted = await people.insertMany([{ name: 'ada', age: 36 }, { name: 'bob', age: 25 }, { name: 'cy', age: 41 }])
    t.equal(inserted.insertedCount, 3)

    const older = await people.find({ age: { $gt: 30 } }, { projection: { _id: 0, name: 1 } }).sort({ age: -1 }).toArray()
    t.same(older, [{ name: 'cy' }, { name: 'ada' }])

    const updated = await people.updateOne({ name: 'bob' }, { $inc: { age: 1 }, $set: { city: 'Oslo' } })
    t.equal(updated.matchedCount, 1)
    t.equal(updated.modifiedCount, 1)
    t.match(await people.findOne({ name: 'bob' }, { projection: { _id: 0 } }), { name: 'bob', age: 26, city: 'Oslo' })

    await people.createIndex({ name: 1 }, { unique: true })
    const duplicate = await people.insertOne({ name: 'ada' }).catch((error: unknown) => error)
    t.ok(duplicate instanceof MongoServerError)
    t.equal((duplicate as MongoServerError).code, 11000)
    t.match((duplicate as MongoServerError).message, `E11000 duplicate key error collection: ${target.dbName}.people index: name_1 dup key: { name: "ada" }`)
    t.same((duplicate as MongoServerError).keyValue, { name: 'ada' })

    const removed = await people.deleteOne({ name: 'cy' })
    t.equal(removed.deletedCount, 1)
    t.equal(await people.countDocuments(), 2)

    const unknown = await target.db.command({ notACommand: 1 }).catch((error: unknown) => error)
    t.equal((unknown as MongoServerError).code, 59)
    t.equal((unknown as MongoServerError).codeName, 'CommandNotFound')
    // The stand-in presents itself in the mode it was started in; a real server is what it is.
    if (target.isStandIn) t.equal(target.isReplicaSet, replicaSet)
  })
}
