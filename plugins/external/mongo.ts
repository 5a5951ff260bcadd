import fp from 'fastify-plugin'
import { MongoClient, type ClientSession } from 'mongodb'
import { DATABASE_DEADLINES, requestDatabaseDeadlineMs, type MongoHandle } from '../../stores/database.js'
import { hasTransactions, transactionRunner } from '../../stores/transactions.js'
import { observeDatabaseCalls } from '../../stores/database-metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    mongo: MongoHandle
  }
}

/** Connects to the database a URI names (its path names the database) and learns whether it has transactions. */
export async function connectMongo (uri: string, options: { monitorCommands?: boolean } = {}): Promise<MongoHandle> {
  const client = new MongoClient(uri, { appName: 'calendar-backend', ...DATABASE_DEADLINES, monitorCommands: options.monitorCommands ?? false })
  await client.connect()
  const db = client.db()
  const transactional = await hasTransactions(db)
  const runTransaction = transactionRunner(client, transactional)
  async function withTransaction<T> (work: (session: ClientSession | undefined, signal: AbortSignal) => Promise<T>, deadlineMs = requestDatabaseDeadlineMs()): Promise<T> {
    return await runTransaction(work, deadlineMs)
  }

  let outstanding: Promise<boolean> | undefined
  async function ping (deadlineMs: number): Promise<boolean> {
    outstanding ??= db.command({ ping: 1 })
      .then(() => true, () => false)
      .finally(() => { outstanding = undefined })
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), deadlineMs) })
    try {
      return await Promise.race([outstanding, deadline])
    } finally {
      clearTimeout(timer)
    }
  }

  return { client, db, transactional, withTransaction, ping }
}

export default fp(async function mongo (fastify) {
  const measured = fastify.metricsPort !== null
  const handle = await connectMongo(fastify.config.database.uri, { monitorCommands: measured })
  if (measured) observeDatabaseCalls(handle.client, fastify.metrics)
  fastify.log.info({ transactional: handle.transactional }, 'database ready')
  fastify.decorate('mongo', handle)
  fastify.addHook('onClose', async () => { await handle.client.close() })
}, { name: 'mongo', dependencies: ['config', 'metrics'] })
