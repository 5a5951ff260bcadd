// `npm run backup` and `npm run restore`: every database of a MongoDB deployment (the API's, Sync's
// and, in the local stack, the session core's) copied to a directory laid out as `mongodump --out`
// lays it out (<database>/<collection>.bson and .metadata.json), and back. mongorestore reads what
// backup writes and restore reads what mongodump writes, so a self-hosted install can use either
// pair (docs/self-hosting.md, "Back up"). On a replica set every collection is read at one instant.
//
//   npm run backup  -- --uri URI --out DIR             (a user that can read every database: root)
//   npm run backup  -- --local [--out DIR]             the local stack's (npm start) MongoDB
//   npm run restore -- --uri URI --from DIR [--drop]   into an empty deployment (--drop: replace)
//   npm run restore -- --local --from DIR [--drop]
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { BSON, MongoClient, type ClientSession, type Db, type Document } from 'mongodb'

const { EJSON } = BSON

class BackupError extends Error {}

/** What backup.json records: when, and how many documents each collection held, for restore to check. */
interface Manifest {
  format: 'mongodump-directory'
  createdAt: string
  databases: Record<string, Record<string, number>>
}

const SYSTEM_DATABASES = new Set(['admin', 'local', 'config'])
const INSERT_BATCH = 1000

/** The local stack's MongoDB, as its root user (dev/start.ts keeps the password in the data directory). */
async function localStackUri (): Promise<string> {
  const dataDir = resolve(process.env.DEV_DATA_DIR ?? '.data')
  let secrets: { rootPassword?: unknown }
  try {
    secrets = JSON.parse(await readFile(join(dataDir, 'dev-secrets.json'), 'utf8')) as { rootPassword?: unknown }
  } catch {
    throw new BackupError(`no local stack in ${dataDir}: start it once with npm start (or set DEV_DATA_DIR)`)
  }
  if (typeof secrets.rootPassword !== 'string') throw new BackupError(`${join(dataDir, 'dev-secrets.json')} holds no rootPassword`)
  const port = Number(process.env.DEV_MONGO_PORT ?? 27117)
  return `mongodb://root:${encodeURIComponent(secrets.rootPassword)}@127.0.0.1:${port}/?authSource=admin&replicaSet=rs0`
}

async function userDatabases (client: MongoClient): Promise<string[]> {
  const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true })
  return databases.map((database) => database.name).filter((name) => !SYSTEM_DATABASES.has(name)).sort()
}

/** A session whose reads all see one instant, where the deployment keeps snapshots (a replica set). */
async function snapshotSession (client: MongoClient): Promise<ClientSession | undefined> {
  const session = client.startSession({ snapshot: true })
  try {
    await client.db('admin').command({ ping: 1 })
    await client.db('admin').collection('system.version').findOne({}, { session })
    return session
  } catch {
    await session.endSession()
    return undefined
  }
}

async function dumpCollection (db: Db, name: string, folder: string, session: ClientSession | undefined): Promise<number> {
  const out = createWriteStream(join(folder, `${name}.bson`))
  let count = 0
  for await (const document of db.collection(name).find({}, { ...(session === undefined ? {} : { session }), batchSize: INSERT_BATCH })) {
    if (!out.write(BSON.serialize(document))) await once(out, 'drain')
    count++
  }
  out.end()
  await once(out, 'finish')
  const indexes = await db.collection(name).listIndexes().toArray()
  await writeFile(join(folder, `${name}.metadata.json`), EJSON.stringify({ indexes, collectionName: name, type: 'collection' }, { relaxed: false }))
  return count
}

async function backup (uri: string, out: string): Promise<Manifest> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 })
  await client.connect()
  const session = await snapshotSession(client)
  try {
    const manifest: Manifest = { format: 'mongodump-directory', createdAt: new Date().toISOString(), databases: {} }
    for (const name of await userDatabases(client)) {
      const db = client.db(name)
      const folder = join(out, name)
      await mkdir(folder, { recursive: true })
      const counts: Record<string, number> = {}
      const collections = await db.listCollections({ type: 'collection' }, { nameOnly: true }).toArray()
      for (const { name: collection } of collections.filter((entry) => !entry.name.startsWith('system.'))) {
        counts[collection] = await dumpCollection(db, collection, folder, session)
      }
      manifest.databases[name] = counts
    }
    await writeFile(join(out, 'backup.json'), `${JSON.stringify(manifest, null, 2)}\n`)
    return manifest
  } finally {
    await session?.endSession()
    await client.close()
  }
}

/** The documents of a .bson file (one after another, each prefixed by its length), read in order without holding the file. */
async function * documentsOf (file: string): AsyncGenerator<Document> {
  let pending: Buffer = Buffer.alloc(0)
  for await (const chunk of createReadStream(file)) {
    pending = pending.length === 0 ? chunk as Buffer : Buffer.concat([pending, chunk as Buffer])
    let offset = 0
    while (pending.length - offset >= 4) {
      const size = pending.readInt32LE(offset)
      if (size < 5) throw new BackupError(`${file} is not a BSON dump (a document of ${size} bytes at ${offset})`)
      if (pending.length - offset < size) break
      yield BSON.deserialize(pending.subarray(offset, offset + size), { promoteValues: true })
      offset += size
    }
    pending = pending.subarray(offset)
  }
  if (pending.length > 0) throw new BackupError(`${file} ends inside a document`)
}

async function restoreCollection (db: Db, folder: string, name: string, drop: boolean): Promise<number> {
  const collection = db.collection(name)
  const existing = await collection.estimatedDocumentCount()
  if (existing > 0 && !drop) throw new BackupError(`${db.databaseName}.${name} already holds ${existing} documents; restore into an empty deployment, or pass --drop to replace it`)
  if (drop) await collection.drop().catch(() => {})
  const metadata = EJSON.parse(await readFile(join(folder, `${name}.metadata.json`), 'utf8').catch(() => '{"indexes":[]}'), { relaxed: false }) as { indexes?: Array<Document & { key: Document, name: string }> }
  await db.createCollection(name).catch(() => {})
  const indexes = (metadata.indexes ?? []).filter((index) => index.name !== '_id_')
  if (indexes.length > 0) {
    await collection.createIndexes(indexes.map(({ v: _version, ns: _namespace, ...index }) => ({ ...index, key: index.key, name: index.name })))
  }
  let batch: Document[] = []
  let count = 0
  for await (const document of documentsOf(join(folder, `${name}.bson`))) {
    batch.push(document)
    if (batch.length === INSERT_BATCH) {
      await collection.insertMany(batch, { ordered: true })
      count += batch.length
      batch = []
    }
  }
  if (batch.length > 0) await collection.insertMany(batch, { ordered: true })
  return count + batch.length
}

async function restore (uri: string, from: string, drop: boolean): Promise<Record<string, Record<string, number>>> {
  const manifest = JSON.parse(await readFile(join(from, 'backup.json'), 'utf8').catch(() => 'null')) as Manifest | null
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 })
  await client.connect()
  try {
    const restored: Record<string, Record<string, number>> = {}
    const databases = manifest === null
      ? (await readdir(from, { withFileTypes: true })).filter((entry) => entry.isDirectory() && !SYSTEM_DATABASES.has(entry.name)).map((entry) => entry.name)
      : Object.keys(manifest.databases)
    for (const name of databases) {
      const folder = join(from, name)
      const collections = (await readdir(folder)).filter((file) => file.endsWith('.bson')).map((file) => file.slice(0, -'.bson'.length))
      restored[name] = {}
      for (const collection of collections) {
        const count = await restoreCollection(client.db(name), folder, collection, drop)
        const expected = manifest?.databases[name]?.[collection]
        if (expected !== undefined && expected !== count) throw new BackupError(`${name}.${collection}: the backup recorded ${expected} documents, ${count} were restored`)
        restored[name][collection] = count
      }
    }
    return restored
  } finally {
    await client.close()
  }
}

function summary (databases: Record<string, Record<string, number>>): string {
  return Object.entries(databases).map(([name, collections]) =>
    `  ${name}: ${Object.values(collections).reduce((sum, count) => sum + count, 0)} documents in ${Object.keys(collections).length} collections`).join('\n')
}

async function main (): Promise<void> {
  const [command, ...rest] = process.argv.slice(2)
  const { values } = parseArgs({ args: rest, options: { uri: { type: 'string' }, local: { type: 'boolean' }, out: { type: 'string' }, from: { type: 'string' }, drop: { type: 'boolean' } } })
  if (values.uri === undefined && values.local !== true) throw new BackupError('give --uri URI (a user that can read and write every database), or --local for the local stack')
  const uri = values.uri ?? await localStackUri()
  if (command === 'backup') {
    const out = resolve(values.out ?? `backup-${new Date().toISOString().slice(0, 19).replace(/:/g, '-')}`)
    const manifest = await backup(uri, out)
    process.stdout.write(`backup written to ${out}\n${summary(manifest.databases)}\n`)
  } else if (command === 'restore') {
    if (values.from === undefined) throw new BackupError('give --from DIR, a directory npm run backup or mongodump --out wrote')
    const restored = await restore(uri, resolve(values.from), values.drop === true)
    process.stdout.write(`restored from ${resolve(values.from)}\n${summary(restored)}\n`)
  } else {
    throw new BackupError('npm run backup -- ... or npm run restore -- ...')
  }
}

main().catch((error: unknown) => {
  // A refused login or an unreachable server is one line; the driver's message names no password.
  process.stderr.write(`${error instanceof BackupError ? error.message : error instanceof Error ? `${error.name}: ${error.message.split('\n')[0] ?? ''}` : String(error)}\n`)
  process.exit(1)
})
