// The Sync database is isolated from the API database (specification, "sync" keys): never the same
// database, and, when sync.enforceLeastPrivilege is true, a database user the server refuses to let
// read the API database.
import type { MongoClient } from 'mongodb'
import { databaseNameOf } from '../../lib/config-rules.js'
import type { SyncConfig } from '../../schemas/config.js'
import { isUnauthorizedError } from '../../lib/mongo-errors.js'

/** Why the Sync service refuses to start; the message is one line and never holds a secret. */
export class SyncStartupError extends Error {
  override name = 'SyncStartupError'
}

/** The API database the least-privilege check must be denied, when one is known. */
export function apiDatabaseOf (config: SyncConfig): string | null {
  if (config.sync.apiDatabase !== undefined) return config.sync.apiDatabase
  return config.database === undefined ? null : databaseNameOf(config.database.uri)
}

export function checkIsolation (config: SyncConfig): void {
  const syncDatabase = databaseNameOf(config.sync.databaseUri)
  const apiDatabase = apiDatabaseOf(config)
  if (apiDatabase !== null && apiDatabase === syncDatabase) {
    throw new SyncStartupError(`sync.databaseUri names the API database "${apiDatabase}"; the Sync service needs a database of its own`)
  }
}

/**
 * Proves that the Sync database user cannot read the API database: a read there must be refused by
 * the server (code 13, Unauthorized). Anything else, success included, refuses the start.
 */
export async function proveLeastPrivilege (client: MongoClient, config: SyncConfig): Promise<void> {
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
