// The Sync database is isolated from the API database (specification, "sync" keys): never the same
// database, and, when sync.enforceLeastPrivilege is true, a database user the server refuses to let
// read the API database (proved at start by sync/plugins/database.ts).
import { databaseNameOf } from '../../lib/config-rules.js'
import type { SyncConfig } from '../../schemas/config.js'

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
