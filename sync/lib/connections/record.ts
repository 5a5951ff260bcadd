// A provider connection as the Sync service stores it, and the summary the backend reads of it.
import type { ObjectId } from 'bson'
import type {
  ConnectionReason, ConnectionState, ConnectionSummary, ImportCounts, ImportOperation, Provider
} from '../../../schemas/sync/index.js'

export interface StoredImportProgress {
  phase: 'progress' | 'completed'
  operation: ImportOperation
  counts: ImportCounts
  updatedAt: Date
}

export interface ConnectionRecord {
  _id: ObjectId
  userId: string
  provider: Provider
  /**
   * Which account at the provider this is, without any secret (for CalDAV the server and user
   * name), so a new connect of the same account repairs it even after its credential was
   * discarded. Absent on connections made before it was recorded.
   */
  account?: string
  state: ConnectionState
  reason: ConnectionReason | null
  lastReadFailureAt: Date | null
  lastSyncedAt: Date | null
  lastHealthyAt: Date | null
  importProgress: StoredImportProgress | null
  /**
   * The provider answered "unavailable" (429, 5xx, no answer): when the connection's jobs try it
   * again. Null (or absent, on older records) while it answers.
   */
  providerRetryAt?: Date | null
  /** Unavailable answers in a row; the next try backs off with it. */
  unavailableStreak?: number
  createdAt: Date
  updatedAt: Date
}

/**
 * `pendingWrites`: the connection's own-data changes not yet written to the provider;
 * `unsyncedWrites`: events whose change the provider refused or keeps failing.
 */
export function connectionSummary (record: ConnectionRecord, pendingWrites = 0, unsyncedWrites = 0): ConnectionSummary {
  const iso = (date: Date | null) => date?.toISOString() ?? null
  return {
    connectionId: record._id.toHexString(),
    provider: record.provider,
    state: record.state,
    reason: record.reason,
    lastReadFailureAt: iso(record.lastReadFailureAt),
    lastSyncedAt: iso(record.lastSyncedAt),
    lastHealthyAt: iso(record.lastHealthyAt),
    importProgress: record.importProgress && { ...record.importProgress, updatedAt: record.importProgress.updatedAt.toISOString() },
    pendingWrites,
    unsyncedWrites,
    providerRetryAt: iso(record.providerRetryAt ?? null),
    createdAt: record.createdAt.toISOString()
  }
}
