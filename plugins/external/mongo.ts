import fp from 'fastify-plugin'
import { MongoClient, type ClientSession, type Db } from 'mongodb'

export interface MongoHandle {
  client: MongoClient
  db: Db
  /** Whether the deployment runs transactions (a replica set or a sharded cluster; a single server has none). */
  transactional: boolean
  /**
   * Runs `work` in one transaction where the deployment has them, so its writes happen together
   * or not at all; otherwise runs it as is (`session` undefined) and its writes go in order.
   */
  withTransaction: <T>(work: (session: ClientSession | undefined) => Promise<T>) => Promise<T>
}

declare module 'fastify' {
  interface FastifyInstance {
    mongo: MongoHandle
  }
}

/**
 * How long one database operation may take, retries included (the driver's client-side operation
 * timeout). A database that stopped answering (its process hung, its sockets open) would otherwise
 * hold a request for as long as the operating system keeps the connection: requests answer 503
 * instead, and nothing waits on a socket without an end.
 */
export const OPERATION_DEADLINE_MS = 5000
/** How long the driver looks for a server it can use before it gives up on an operation. */
export const SERVER_SELECTION_DEADLINE_MS = 3000

/** Connects to the database a URI names (its path names the database) and learns whether it has transactions. */
export async function connectMongo (uri: string): Promise<MongoHandle> {
  const client = new MongoClient(uri, {
    appName: 'calendar-backend',
    serverSelectionTimeoutMS: SERVER_SELECTION_DEADLINE_MS,
    timeoutMS: OPERATION_DEADLINE_MS
  })
  await client.connect()
  const db = client.db()
  const hello = await db.admin().command({ hello: 1 })
  const transactional = typeof hello.setName === 'string' || hello.msg === 'isdbgrid'

  async function withTransaction<T> (work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
    if (!transactional) return await work(undefined)
    const session = client.startSession()
    try {
      return await session.withTransaction(async () => await work(session))
    } finally {
      await session.endSession()
    }
  }

  return { client, db, transactional, withTransaction }
}

export default fp(async function mongo (fastify) {
  const handle = await connectMongo(fastify.config.database.uri)
  fastify.log.info({ transactional: handle.transactional }, 'database ready')
  fastify.decorate('mongo', handle)
  fastify.addHook('onClose', async () => { await handle.client.close() })
}, { name: 'mongo', dependencies: ['config'] })
