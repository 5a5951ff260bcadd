import fp from 'fastify-plugin'
import { MongoClient } from 'mongodb'
import type { ClientSession, Db } from 'mongodb'
import type { SyncConfig } from '../../schemas/config.js'
import { DATABASE_DEADLINES, isUnauthorizedError, withDatabaseDeadline } from '../../stores/database.js'
import { hasTransactions, transactionRunner } from '../../stores/transactions.js'
import { apiDatabaseOf, checkIsolation, SyncStartupError } from '../lib/isolation.js'
import { databaseCallDeadlineMs } from '../stores/database-calls.js'
import { observeDatabaseCalls } from '../../stores/database-metrics.js'

export interface SyncDatabase {
  client: MongoClient
  db: Db
  /**
   * Resolves while the database answers; the readiness probe asks it. Rejects with
   * DatabaseDeadlineError when no answer came within the database deadline (DATABASE_CALL_DEADLINE_MS).
   */
  ping: () => Promise<void>
  /** Whether the deployment runs transactions (a replica set or a sharded cluster; a single server has none). */
  transactional: boolean
  /**
   * Runs `work` in one transaction where the deployment has them, so its writes happen together or
   * not at all; otherwise runs it as is (`session` undefined) and its writes go in order. The whole
   * has the deadline of one database call of the work it belongs to (sync/stores/database-calls.ts):
   * past it the caller meets DatabaseDeadlineError and the transaction is not committed, even when
   * the database answers later (only a commit already sent may still land, whole).
   */
  withTransaction: <T>(work: (session: ClientSession | undefined) => Promise<T>) => Promise<T>
}

declare module 'fastify' {
  interface FastifyInstance {
    syncDb: SyncDatabase
  }
}

/**
 * Proves that the Sync database user cannot read the API database: a read there must be refused by
 * the server (code 13, Unauthorized). Anything else, success included, refuses the start.
 */
async function proveLeastPrivilege (client: MongoClient, config: SyncConfig): Promise<void> {
  const apiDatabase = apiDatabaseOf(config)
  if (apiDatabase === null) {
    throw new SyncStartupError('sync.enforceLeastPrivilege is true but no API database is named (set sync.apiDatabase)')
  }
  try {
    await client.db(apiDatabase).collection('users').find({}, { limit: 1 }).toArray()
  } catch (error) {
    if (isUnauthorizedError(error)) return
    const reason = error instanceof Error ? error.message.split('\n')[0] : 'unknown error'
    throw new SyncStartupError(`least-privilege check could not prove that the Sync database user is denied the API database "${apiDatabase}": ${reason}`)
  }
  throw new SyncStartupError(`the Sync database user can read the API database "${apiDatabase}"; give it a user limited to its own database or turn off sync.enforceLeastPrivilege`)
}

// The Sync service's own database (sync.databaseUri); it is never the API database.
export default fp(async function syncDatabase (fastify) {
  const config = fastify.syncConfig
  checkIsolation(config)
  const measured = fastify.metricsPort !== null
  const client = new MongoClient(config.sync.databaseUri, { appName: 'calendar-sync', ...DATABASE_DEADLINES, monitorCommands: measured })
  if (measured) observeDatabaseCalls(client, fastify.metrics)
  await client.connect()
  try {
    if (config.sync.enforceLeastPrivilege === true) await proveLeastPrivilege(client, config)
  } catch (error) {
    await client.close()
    throw error
  }
  const db = client.db()
  const transactional = await hasTransactions(db)
  const runTransaction = transactionRunner(client, transactional)
  async function withTransaction<T> (work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
    return await runTransaction(async (session) => await work(session), databaseCallDeadlineMs())
  }

  fastify.log.info({ transactional }, 'sync database ready')
  fastify.decorate('syncDb', {
    client,
    db,
    ping: async () => { await withDatabaseDeadline(async (signal) => await db.command({ ping: 1 }, { signal })) },
    transactional,
    withTransaction
  })
  fastify.addHook('onClose', async () => { await client.close() })
}, { name: 'sync-database', dependencies: ['sync-config', 'metrics'] })
