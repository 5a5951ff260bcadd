// Throughput of the MongoDB stand-in through the real driver, at 100k documents:
// insertOne, findOne by _id, and findOne on a unique-indexed field. Prints ops/s and the
// ratio of the indexed lookup to the _id lookup (1.0 = as fast).
import { MongoClient, ObjectId } from 'mongodb'
import { startMongo } from '../dev/mongo/index.js'

const DOCUMENTS = 100_000
const LOOKUPS = 2_000
const ROUNDS = 4
const INSERTS = 5_000
const CONCURRENCY = 16

const WARM_UP = 500

async function timed (count: number, run: (i: number) => Promise<unknown>): Promise<number> {
  // A short unmeasured run first, so JIT and pool warm-up do not count against the first figure.
  let next = 0
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < WARM_UP) await run(count + next++)
  }))
  next = 0
  const started = process.hrtime.bigint()
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < count) await run(next++)
  }))
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  return count / seconds
}

const server = await startMongo()
const client = new MongoClient(server.uri, { maxPoolSize: CONCURRENCY })
try {
  await client.connect()
  const collection = client.db('bench').collection<{ _id: ObjectId, email: string, n: number }>('people')
  await collection.createIndex({ email: 1 }, { unique: true })
  const ids: ObjectId[] = []
  for (let start = 0; start < DOCUMENTS; start += 10_000) {
    const batch = Array.from({ length: 10_000 }, (_, i) => ({ _id: new ObjectId(), email: `user${start + i}@example.com`, n: start + i }))
    for (const document of batch) ids.push(document._id)
    await collection.insertMany(batch)
  }

  const insertOne = await timed(INSERTS, (i) => collection.insertOne({ _id: new ObjectId(), email: `extra${i}@example.com`, n: -i }))
  const pick = (i: number): number => (i * 7919) % DOCUMENTS
  // The two lookups alternate in rounds so that garbage collection after the bulk load and
  // machine noise fall on both alike; each figure is its total count over its total time.
  let idSeconds = 0
  let emailSeconds = 0
  for (let round = 0; round < ROUNDS; round++) {
    idSeconds += LOOKUPS / await timed(LOOKUPS, async (i) => {
      const found = await collection.findOne({ _id: ids[pick(i + round)] as ObjectId })
      if (found === null) throw new Error('lookup by _id missed')
    })
    emailSeconds += LOOKUPS / await timed(LOOKUPS, async (i) => {
      const found = await collection.findOne({ email: `user${pick(i + round)}@example.com` })
      if (found === null) throw new Error('lookup by email missed')
    })
  }
  const byId = (LOOKUPS * ROUNDS) / idSeconds
  const byEmail = (LOOKUPS * ROUNDS) / emailSeconds

  const count = await collection.estimatedDocumentCount()
  console.log(`documents: ${count}`)
  console.log(`insertOne: ${Math.round(insertOne)} ops/s`)
  console.log(`findOne by _id: ${Math.round(byId)} ops/s`)
  console.log(`findOne by unique email: ${Math.round(byEmail)} ops/s`)
  console.log(`indexed/_id ratio: ${(byEmail / byId).toFixed(2)} (target >= 0.5)`)
} finally {
  await client.close()
  await server.close()
}
