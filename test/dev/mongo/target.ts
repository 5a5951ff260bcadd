// The server the conformance suite runs against: a real MongoDB when MONGODB_URI is set,
// otherwise the stand-in in dev/mongo. The suite only ever talks to it through the real driver.
import { randomBytes } from 'node:crypto'
import { MongoClient } from 'mongodb'
import type { Db, MongoClientOptions } from 'mongodb'
import { startMongo } from '../../../dev/mongo/index.js'
import type { MongoUser } from '../../../dev/mongo/index.js'

export interface Target {
  /** Connection string with the administrator's credentials when the target has users. */
  uri: string
  /** True when the server is (a member of) a replica set, so transactions are available. */
  isReplicaSet: boolean
  /** True when the target is the stand-in. */
  isStandIn: boolean
  client: MongoClient
  /** A database of its own for this test file, dropped at the end. */
  db: Db
  dbName: string
  /** Connects another client (the caller closes it, or it is closed at teardown). */
  connect (options?: MongoClientOptions & { uri?: string }): Promise<MongoClient>
  /** Starts a fresh stand-in with the same options (used by restart tests); undefined on a real server. */
  restart?: () => Promise<void>
}

interface Teardown { teardown (fn: () => unknown): void }

export interface TargetOptions {
  replicaSet?: boolean
  users?: MongoUser[]
  dataDir?: string
}

export const ADMIN = { user: 'conformance-admin', password: 'conformance-admin-password' }

export async function startTarget (t: Teardown, options: TargetOptions = {}): Promise<Target> {
  const clients: MongoClient[] = []
  let uri = process.env.MONGODB_URI
  let isStandIn = false
  let stop: (() => Promise<void>) | undefined
  if (uri === undefined || uri === '') {
    isStandIn = true
    const users = options.users === undefined ? undefined : [{ ...ADMIN, roles: [{ role: 'root', db: 'admin' }] }, ...options.users]
    const server = await startMongo({
      ...(options.replicaSet === true ? { replicaSet: 'rs0' } : {}),
      ...(users === undefined ? {} : { users }),
      ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir })
    })
    stop = () => server.close()
    uri = users === undefined ? server.uri : withCredentials(server.uri, ADMIN.user, ADMIN.password)
  }
  const connect = async (extra: MongoClientOptions & { uri?: string } = {}): Promise<MongoClient> => {
    const { uri: otherUri, ...clientOptions } = extra
    const client = new MongoClient(otherUri ?? uri, { serverSelectionTimeoutMS: 5000, ...clientOptions })
    clients.push(client)
    await client.connect()
    return client
  }
  const client = await connect()
  const hello = await client.db('admin').command({ hello: 1 })
  const dbName = `conformance_${randomBytes(4).toString('hex')}`
  t.teardown(async () => {
    if (!isStandIn) await client.db(dbName).dropDatabase().catch(() => {})
    for (const opened of clients) await opened.close().catch(() => {})
    await stop?.()
  })
  return { uri, isReplicaSet: typeof hello.setName === 'string', isStandIn, client, db: client.db(dbName), dbName, connect }
}

export function withCredentials (uri: string, user: string, password: string, authSource = 'admin'): string {
  const url = new URL(uri)
  url.username = encodeURIComponent(user)
  url.password = encodeURIComponent(password)
  url.searchParams.set('authSource', authSource)
  return url.toString()
}
