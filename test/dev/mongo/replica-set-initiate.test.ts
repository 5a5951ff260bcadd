// A mongod started with --replSet before rs.initiate(), as the self-host stack's database step
// meets it on first start: no primary, refusals for reads and writes, then replSetInitiate.
// With MONGODB_URI naming a fresh `mongod --replSet NAME` (directConnection=true, the root user's
// credentials; NAME from the URI's replicaSet parameter or rs0) the same assertions run against it
// and initiate it. A server that is already initiated cannot be taken back, so then they skip.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { test } from 'tap'
import { MongoClient } from 'mongodb'
import type { MongoClientOptions } from 'mongodb'
import { startMongo } from '../../../dev/mongo/index.js'
import { ADMIN, withCredentials } from './target.js'
import { serverError } from './errors.js'

const READER = { user: 'reader', password: 'reader-password' }

interface Fresh {
  /** The root user's direct connection, as the database step opens it. */
  uri: string
  setName: string
  member: string
  isStandIn: boolean
  connect (options?: MongoClientOptions & { uri?: string }): Promise<MongoClient>
}

async function freshMember (t: { teardown (fn: () => unknown): void }): Promise<Fresh> {
  const clients: MongoClient[] = []
  const connect = async (extra: MongoClientOptions & { uri?: string } = {}): Promise<MongoClient> => {
    const { uri: otherUri, ...options } = extra
    const client = new MongoClient(otherUri ?? uri, { serverSelectionTimeoutMS: 5000, ...options })
    clients.push(client)
    await client.connect()
    return client
  }
  t.teardown(async () => {
    for (const client of clients) await client.close().catch(() => {})
  })
  const given = process.env.MONGODB_URI
  let uri: string
  if (given !== undefined && given !== '') {
    const url = new URL(given)
    const setName = url.searchParams.get('replicaSet') ?? 'rs0'
    url.searchParams.delete('replicaSet')
    url.searchParams.set('directConnection', 'true')
    uri = url.toString()
    return { uri, setName, member: url.host, isStandIn: false, connect }
  }
  const server = await startMongo({
    replicaSet: { name: 'rs0', initiated: false },
    users: [{ ...ADMIN, roles: [{ role: 'root', db: 'admin' }] }, { ...READER, roles: [{ role: 'readWriteAnyDatabase', db: 'admin' }] }]
  })
  t.teardown(() => server.close())
  uri = withCredentials(server.uri, ADMIN.user, ADMIN.password)
  return { uri, setName: 'rs0', member: `127.0.0.1:${server.port}`, isStandIn: true, connect }
}

async function hello (client: MongoClient): Promise<Record<string, unknown>> {
  return await client.db('admin').command({ hello: 1 })
}

test('a member started with --replSet and no config, then replSetInitiate', async (t) => {
  const fresh = await freshMember(t)
  const root = await fresh.connect()
  const before = await hello(root)
  if (typeof before.setName === 'string') {
    t.plan(0, `MONGODB_URI names a server already in replica set ${before.setName}: initiation can only be tested on a fresh mongod --replSet`)
    return
  }

  await t.test('hello: no primary, no set name, a replica-set member without a config', async (t) => {
    t.equal(before.isWritablePrimary, false)
    t.equal(before.secondary, false)
    t.equal(before.isreplicaset, true)
    t.equal(before.info, 'Does not have a valid replica set config')
    t.equal(before.setName, undefined)
    t.equal(before.hosts, undefined)
    const legacy = await root.db('admin').command({ isMaster: 1 })
    t.equal(legacy.ismaster, false, 'the legacy isMaster says the same')
  })

  await t.test('writes, reads and user creation need a primary; the status has no config', async (t) => {
    const probe = root.db('initiate_probe').collection('things')
    const write = await serverError(probe.insertOne({ n: 1 }))
    t.equal(write.code, 10107)
    t.equal(write.codeName, 'NotWritablePrimary')
    // The driver reads with primaryPreferred on a direct connection, so the member's state is the refusal.
    const read = await serverError(probe.findOne({}))
    t.equal(read.code, 13436)
    t.equal(read.codeName, 'NotPrimaryOrSecondary')
    const user = await serverError(root.db('admin').command({ createUser: 'early', pwd: 'early-password', roles: ['read'] }))
    t.equal(user.code, 10107, 'createUser writes admin.system.users, which needs a primary')
    const status = await serverError(root.db('admin').command({ replSetGetStatus: 1 }))
    t.equal(status.code, 94)
    t.equal(status.codeName, 'NotYetInitialized')
    t.equal((await root.db('admin').command({ ping: 1 })).ok, 1, 'ping answers')
  })

  await t.test('with users, replSetInitiate needs authentication and a cluster role', async (t) => {
    const anonymousUrl = new URL(fresh.uri)
    anonymousUrl.username = ''
    anonymousUrl.password = ''
    anonymousUrl.searchParams.delete('authSource')
    const anonymous = await fresh.connect({ uri: anonymousUrl.toString() })
    const config = { _id: fresh.setName, members: [{ _id: 0, host: fresh.member }] }
    const refused = await serverError(anonymous.db('admin').command({ replSetInitiate: config }))
    t.equal(refused.code, 13)
    t.equal(refused.codeName, 'Unauthorized')
    if (!fresh.isStandIn) return
    // On mongod the only user before initiation is the one the image's entrypoint made, so this part
    // needs the stand-in's users given at start.
    const reader = await fresh.connect({ uri: withCredentials(fresh.uri, READER.user, READER.password) })
    const notCluster = await serverError(reader.db('admin').command({ replSetInitiate: config }))
    t.equal(notCluster.code, 13, 'readWriteAnyDatabase is no cluster role')
    t.equal((await hello(root)).isWritablePrimary, false, 'nothing was initiated')
  })

  await t.test('a config for another set or without this node is refused', async (t) => {
    const otherSet = await serverError(root.db('admin').command({ replSetInitiate: { _id: `${fresh.setName}-other`, members: [{ _id: 0, host: fresh.member }] } }))
    t.equal(otherSet.code, 93)
    t.equal(otherSet.codeName, 'InvalidReplicaSetConfig')
    t.match(otherSet.message, /set name that differs from command line set name/)
    const notThisNode = await serverError(root.db('admin').command({ replSetInitiate: { _id: fresh.setName, members: [{ _id: 0, host: 'nowhere.invalid:27017' }] } }))
    t.equal(notThisNode.code, 74)
    t.equal(notThisNode.codeName, 'NodeNotFound')
    t.equal((await hello(root)).setName, undefined, 'the member is still without a config')
  })

  await t.test('a valid config: ok at once, primary shortly after, and only once', async (t) => {
    const reply = await root.db('admin').command({ replSetInitiate: { _id: fresh.setName, members: [{ _id: 0, host: fresh.member }] } })
    t.equal(reply.ok, 1)
    const deadline = Date.now() + 30_000
    let after = await hello(root)
    while (after.isWritablePrimary !== true && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      after = await hello(root)
    }
    t.equal(after.isWritablePrimary, true, 'the member becomes primary')
    t.equal(after.setName, fresh.setName)
    t.same(after.hosts, [fresh.member])
    t.equal(after.primary, fresh.member)
    t.equal(after.isreplicaset, undefined)

    const again = await serverError(root.db('admin').command({ replSetInitiate: { _id: fresh.setName, members: [{ _id: 0, host: fresh.member }] } }))
    t.equal(again.code, 23)
    t.equal(again.codeName, 'AlreadyInitialized')
    const status = await root.db('admin').command({ replSetGetStatus: 1 })
    t.equal(status.set, fresh.setName)
    t.equal(status.myState, 1, 'PRIMARY')

    // Writes now succeed, and a client that names the set finds its primary.
    const url = new URL(fresh.uri)
    url.searchParams.delete('directConnection')
    url.searchParams.set('replicaSet', fresh.setName)
    const member = await fresh.connect({ uri: url.toString() })
    const things = member.db('initiate_probe').collection('things')
    await things.insertOne({ n: 1 })
    t.same(await things.findOne({}, { projection: { _id: 0 } }), { n: 1 })
    await member.db('initiate_probe').dropDatabase()
  })
})

test('stand-in only: the CLI flag, the default config, and a data directory that stays initiated', { skip: process.env.MONGODB_URI ? 'MONGODB_URI is set: these cover options of the stand-in' : false }, async (t) => {
  const cli = spawn(process.execPath, ['--import', 'tsx', 'dev/mongo/cli.ts', '--replica-set', 'rs0', '--uninitiated'], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => { cli.kill('SIGTERM') })
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: cli.stdout }).once('line', resolve)
    cli.once('exit', () => reject(new Error('the CLI exited before printing a URI')))
  })
  t.match(line, /^mongodb:\/\/127\.0\.0\.1:\d+\/\?directConnection=true$/, 'the CLI prints the direct connection string')
  const viaCli = new MongoClient(line, { serverSelectionTimeoutMS: 5000 })
  t.teardown(() => viaCli.close())
  t.equal((await viaCli.db('admin').command({ hello: 1 })).isreplicaset, true)
  const withoutSet = spawn(process.execPath, ['--import', 'tsx', 'dev/mongo/cli.ts', '--uninitiated'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let refusal = ''
  withoutSet.stderr.on('data', (chunk: Buffer) => { refusal += chunk.toString() })
  t.equal(await new Promise((resolve) => withoutSet.once('exit', resolve)), 1, '--uninitiated alone is refused')
  t.match(refusal, /--uninitiated needs --replica-set/)

  const dataDir = await mkdtemp(join(tmpdir(), 'dev-mongo-initiate-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const first = await startMongo({ dataDir, replicaSet: { name: 'rs0', initiated: false } })
  t.teardown(() => first.close())
  const client = new MongoClient(first.uri, { serverSelectionTimeoutMS: 5000 })
  t.teardown(() => client.close())
  const reply = await client.db('admin').command({ replSetInitiate: {} })
  t.equal(reply.info2, 'no configuration specified. Using a default configuration for the set', 'rs.initiate() without a config')
  t.same((await client.db('admin').command({ hello: 1 })).hosts, [`127.0.0.1:${first.port}`])
  await client.close()
  await first.close()

  const second = await startMongo({ dataDir, replicaSet: { name: 'rs0', initiated: false } })
  t.teardown(() => second.close())
  t.match(second.uri, /\?replicaSet=rs0$/, 'a restarted member keeps its config, as mongod keeps local.system.replset')
  await second.close()
  await t.rejects(startMongo({ dataDir, replicaSet: 'other' }), /belongs to replica set "rs0"/, 'and refuses to start as another set')

  const standalone = await startMongo()
  t.teardown(() => standalone.close())
  const direct = new MongoClient(standalone.uri, { serverSelectionTimeoutMS: 5000 })
  t.teardown(() => direct.close())
  const notReplicated = await serverError(direct.db('admin').command({ replSetInitiate: {} }))
  t.equal(notReplicated.code, 76, 'a server started without a replica set refuses replSetInitiate')
  t.equal(notReplicated.codeName, 'NoReplicationEnabled')
})
