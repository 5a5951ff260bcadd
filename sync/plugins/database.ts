import fp from 'fastify-plugin'
import { MongoClient } from 'mongodb'
import type { Db } from 'mongodb'
import type { SyncConfig } from '../../schemas/config.js'
import { DATABASE_DEADLINES, isUnauthorizedError, withDatabaseDeadline } from '../../lib/mongo-errors.js'
import { apiDatabaseOf, checkIsolation, SyncStartupError } from '../lib/isolation.js'

export interface SyncDatabase {
  client: MongoClient
  db: Db
  /**
   * Resolves while the database answers; the readiness probe asks it. Rejects with
   * DatabaseDeadlineError when no answer came within the database deadline (DATABASE_CALL_DEADLINE_MS).
   */
  ping: () => Promise<void>
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
  const client = new MongoClient(config.sync.databaseUri, { appName: 'calendar-sync', ...DATABASE_DEADLINES })
  await client.connect()
  try {
    if (config.sync.enforceLeastPrivilege === true) await proveLeastPrivilege(client, config)
  } catch (error) {
    await client.close()
    throw error
  }
  const db = client.db()
  fastify.decorate('syncDb', {
    client,
    db,
    ping: async () => { await withDatabaseDeadline(async (signal) => await db.command({ ping: 1 }, { signal })) }
  })
  fastify.addHook('onClose', async () => { await client.close() })
}, { name: 'sync-database', dependencies: ['sync-config'] })
