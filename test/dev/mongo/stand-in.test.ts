// What only the stand-in has: its data directory, its start options, its CLI and its refusal to
// run in production. Still observed through the driver and the process's output only.
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { connect } from 'node:net'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { test } from 'tap'
import { MongoClient, MongoServerError } from 'mongodb'
import { startMongo } from '../../../dev/mongo/index.js'
import { withCredentials } from './target.js'
import { serverError } from './errors.js'

async function tempDir (t: { teardown: (fn: () => unknown) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dev-mongo-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function withClient<T> (uri: string, run: (client: MongoClient) => Promise<T>): Promise<T> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 })
  try {
    await client.connect()
    return await run(client)
  } finally {
    await client.close()
  }
}

test('a clean stop keeps every collection, document, index and user', async (t) => {
  const dataDir = await tempDir(t)
  const users = [{ user: 'owner', password: 'owner-pw', roles: [{ role: 'root', db: 'admin' }] }]
  const first = await startMongo({ dataDir, users, replicaSet: 'rs0' })
  t.teardown(() => first.close())
  await withClient(withCredentials(first.uri, 'owner', 'owner-pw'), async (client) => {
    const app = client.db('app')
    await app.collection('people').insertMany([{ _id: 1, email: 'a@x.io', born: new Date('1990-01-02T00:00:00Z') }, { _id: 2, email: 'b@x.io' }] as never[])
    await app.collection('people').createIndex({ email: 1 }, { unique: true })
    await app.collection('people').createIndex({ born: 1 }, { expireAfterSeconds: 3600, partialFilterExpression: { born: { $exists: true } }, name: 'born_ttl' })
    await app.collection('doomed').insertOne({ x: 1 })
    await app.collection('doomed').drop()
    await client.db('other_db').collection('dotted.name').insertOne({ ok: true })
    await app.command({ createUser: 'reader', pwd: 'reader-pw', roles: ['read'] })
  })
  await t.rejects(startMongo({ dataDir }), /in use/, 'a second server may not share the directory')
  await first.close()

  const second = await startMongo({ dataDir, replicaSet: 'rs0' })
  t.teardown(() => second.close())
  await withClient(withCredentials(second.uri, 'owner', 'owner-pw'), async (client) => {
    const people = client.db('app').collection('people')
    t.same(await people.find().sort({ _id: 1 }).toArray(), [
      { _id: 1, email: 'a@x.io', born: new Date('1990-01-02T00:00:00Z') },
      { _id: 2, email: 'b@x.io' }
    ])
    t.same((await people.listIndexes().toArray()).map((index) => [index.name, index.unique, index.expireAfterSeconds]), [
      ['_id_', undefined, undefined], ['email_1', true, undefined], ['born_ttl', undefined, 3600]
    ])
    t.equal((await serverError(people.insertOne({ email: 'a@x.io' }))).code, 11000)
    t.same((await client.db('app').listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name), ['people'])
    t.same(await client.db('other_db').collection('dotted.name').findOne({}, { projection: { _id: 0 } }), { ok: true })
  })
  t.equal((await stat(join(dataDir, 'users.json'))).mode & 0o777, 0o600)
  t.notMatch(await readFile(join(dataDir, 'users.json'), 'utf8'), /owner-pw|reader-pw/)
  const readerCount = await withClient(withCredentials(second.uri, 'reader', 'reader-pw', 'app'), (client) => client.db('app').collection('people').countDocuments())
  t.equal(readerCount, 2)
})

test('start options: users, replica-set hello, 127.0.0.1', async (t) => {
  const server = await startMongo({ replicaSet: 'set9', users: [{ user: 'app', password: 'pw', db: 'cal', roles: [{ role: 'readWrite', db: 'cal' }] }] })
  t.teardown(() => server.close())
  t.match(server.uri, /^mongodb:\/\/127\.0\.0\.1:\d+\/\?replicaSet=set9$/)
  await withClient(withCredentials(server.uri, 'app', 'pw', 'cal'), async (client) => {
    const hello = await client.db('admin').command({ hello: 1 })
    t.equal(hello.setName, 'set9')
    t.equal(hello.isWritablePrimary, true)
    t.equal(hello.primary, `127.0.0.1:${server.port}`)
    t.same(hello.hosts, [`127.0.0.1:${server.port}`])
    t.equal(hello.topologyVersion, undefined)
    t.equal(hello.compression, undefined)
    await client.db('cal').collection('e').insertOne({ a: 1 })
    t.equal((await serverError(client.db('other').collection('e').findOne({}))).code, 13)
  })
})

test('a connection sending garbage is closed; the server keeps serving others', async (t) => {
  const server = await startMongo()
  t.teardown(() => server.close())
  const socket = connect(server.port, '127.0.0.1')
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.on('error', () => {})
  socket.write(Buffer.from([0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4]))
  await closed
  t.ok(socket.destroyed)
  const pong = await withClient(server.uri, (client) => client.db('admin').command({ ping: 1 }))
  t.equal(pong.ok, 1)
})

test('the stand-in refuses to start with NODE_ENV=production', async (t) => {
  const previous = process.env.NODE_ENV
  process.env.NODE_ENV = 'production'
  t.teardown(() => {
    if (previous === undefined) delete process.env.NODE_ENV
    else process.env.NODE_ENV = previous
  })
  await t.rejects(startMongo(), /development stand-in/)
})

interface CliRun { uri: Promise<string>, exit: Promise<{ code: number | null, stderr: string }>, stop: () => void }

function runCli (args: string[], env: NodeJS.ProcessEnv = {}): CliRun {
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/mongo/cli.ts', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const uri = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve)
    child.once('exit', () => reject(new Error(`cli exited before printing a URI: ${stderr}`)))
  })
  // Runs that are expected to fail never print a URI; only callers that await it care.
  uri.catch(() => {})
  const exit = new Promise<{ code: number | null, stderr: string }>((resolve) => child.once('exit', (code) => resolve({ code, stderr })))
  return { uri, exit, stop: () => child.kill('SIGTERM') }
}

test('the CLI prints the URI, serves until stopped, and keeps data in --data-dir', async (t) => {
  const dataDir = await tempDir(t)
  const args = ['--port', '0', '--replica-set', 'rs0', '--data-dir', dataDir, '--user', 'admin:a:b:c:root@admin']
  const first = runCli(args)
  t.teardown(first.stop)
  const uri = await first.uri
  t.match(uri, /^mongodb:\/\/127\.0\.0\.1:\d+\/\?replicaSet=rs0$/)
  await withClient(withCredentials(uri, 'admin', 'a:b:c'), async (client) => {
    await client.db('app').collection('kept').insertOne({ n: 1 })
  })
  first.stop()
  t.equal((await first.exit).code, 0)

  const second = runCli(args)
  t.teardown(second.stop)
  const secondUri = await second.uri
  const kept = await withClient(withCredentials(secondUri, 'admin', 'a:b:c'), (client) => client.db('app').collection('kept').find({}, { projection: { _id: 0 } }).toArray())
  t.same(kept, [{ n: 1 }])
  const anonymous = await withClient(secondUri, (client) => client.db('app').collection('kept').findOne({}).catch((error: unknown) => error))
  t.ok(anonymous instanceof MongoServerError)
  second.stop()
  t.equal((await second.exit).code, 0)
})

test('the CLI refuses bad flags and production', async (t) => {
  const badUser = runCli(['--user', 'nobody'])
  const bad = await badUser.exit
  t.equal(bad.code, 1)
  t.match(bad.stderr, /--user expects NAME:PASSWORD:ROLE@DB/)
  const production = await runCli([], { NODE_ENV: 'production' }).exit
  t.equal(production.code, 1)
  t.match(production.stderr, /development stand-in/)
})
