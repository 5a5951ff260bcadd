// Reports of own-data event changes from the backend: an `event` invalidation for the user's other
// tabs and devices, and the provider write when the user has a live connection and execution is
// active. Each idempotency key is applied once; a repeat answers what the first one answered.
import { createHash } from 'node:crypto'
import type { Collection, Db } from 'mongodb'
import type { EventChangeAccepted, EventChangeReport, SyncErrorCode } from '../../schemas/sync/index.js'
import type { ChangeFeed } from './change-feed.js'
import type { Clock } from './clock.js'
import { isLive } from './connections/state-machine.js'
import type { ConnectionStore } from './connections/store.js'
import { SyncServiceError } from './errors.js'
import { isDuplicateKeyError } from '../../lib/mongo-errors.js'
import type { SyncEngine } from './sync-engine.js'

/** Idempotency keys are remembered as long as the change feed keeps entries. */
const REPORT_RETENTION_SECONDS = 8 * 24 * 60 * 60

type Refusal = { kind: 'refused', code: Extract<SyncErrorCode, 'CONNECTION_REVOKED' | 'MAINTENANCE'>, connectionId: string | null }
type Outcome = { kind: 'accepted', providerWriteQueued: boolean } | Refusal

interface ReportRow {
  userId: string
  idempotencyKey: string
  fingerprint: string
  outcome: Outcome
  createdAt: Date
}

export interface Modes {
  cloudMutationMode: 'enabled' | 'maintenance'
  execution: 'passive' | 'active'
}

function fingerprint (report: EventChangeReport): string {
  const { eventId, operation, connectionId, calendarId } = report
  return createHash('sha256').update(JSON.stringify([eventId, operation, connectionId ?? null, calendarId ?? null])).digest('hex')
}

function refusal (outcome: Refusal): SyncServiceError {
  return outcome.code === 'MAINTENANCE'
    ? new SyncServiceError('MAINTENANCE', 'Cloud calendar edits are paused for maintenance; try again later')
    : new SyncServiceError('CONNECTION_REVOKED', 'The provider grant of this connection was revoked; reconnect it', outcome.connectionId ?? undefined)
}

export class EventChangeReports {
  readonly #rows: Collection<ReportRow>
  readonly #connections: ConnectionStore
  readonly #feed: ChangeFeed
  readonly #engine: SyncEngine
  readonly #clock: Clock

  constructor (db: Db, parts: { connections: ConnectionStore, feed: ChangeFeed, engine: SyncEngine, clock: Clock }) {
    this.#rows = db.collection<ReportRow>('eventChangeReports')
    this.#connections = parts.connections
    this.#feed = parts.feed
    this.#engine = parts.engine
    this.#clock = parts.clock
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ userId: 1, idempotencyKey: 1 }, { unique: true, name: 'user_key' })
    await this.#rows.createIndex({ createdAt: 1 }, { name: 'retention', expireAfterSeconds: REPORT_RETENTION_SECONDS })
  }

  /**
   * Applies a report. MAINTENANCE (503) changes nothing, so the backend's retry applies the report
   * once maintenance ends. CONNECTION_REVOKED (410) is final for its key and still appends the
   * `event` invalidation: the backend's own write stands and the user's other tabs must see it.
   */
  async apply (report: EventChangeReport, modes: Modes): Promise<EventChangeAccepted> {
    const print = fingerprint(report)
    const previous = await this.#rows.findOne({ userId: report.userId, idempotencyKey: report.idempotencyKey })
    if (previous) return this.#replay(previous, print)

    const targets = (await this.#connections.listByUser(report.userId))
      .filter((connection) => connection.state !== 'disconnected')
      .filter((connection) => !report.connectionId || connection._id.toHexString() === report.connectionId)
    if (modes.cloudMutationMode === 'maintenance' && targets.length > 0) throw refusal({ kind: 'refused', code: 'MAINTENANCE', connectionId: null })

    const writable = targets.filter((connection) => isLive(connection.state))
    // Revoked only when no connection the change could go to is left; a live one takes the write.
    const revoked = writable.length === 0
      ? targets.find((connection) => connection.state === 'actionRequired' && connection.reason === 'authorizationRevoked')
      : undefined
    const outcome: Outcome = revoked
      ? { kind: 'refused', code: 'CONNECTION_REVOKED', connectionId: revoked._id.toHexString() }
      : { kind: 'accepted', providerWriteQueued: modes.execution === 'active' && writable.length > 0 }

    try {
      await this.#rows.insertOne({ userId: report.userId, idempotencyKey: report.idempotencyKey, fingerprint: print, outcome, createdAt: this.#clock.now() })
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error
      // The same report arrived twice at once; the other one applied it.
      const winner = await this.#rows.findOne({ userId: report.userId, idempotencyKey: report.idempotencyKey })
      if (winner) return this.#replay(winner, print)
      throw error
    }

    await this.#feed.append(report.userId, {
      kind: 'event',
      eventId: report.eventId,
      ...(report.connectionId ? { connectionId: report.connectionId } : {}),
      ...(report.calendarId ? { calendarId: report.calendarId } : {})
    })
    if (outcome.kind === 'refused') throw refusal(outcome)
    if (outcome.providerWriteQueued) {
      for (const connection of writable) {
        await this.#engine.queueProviderWrite(connection, { eventId: report.eventId, operation: report.operation, calendarId: report.calendarId ?? null })
      }
    }
    return { duplicate: false, providerWriteQueued: outcome.providerWriteQueued }
  }

  #replay (row: ReportRow, print: string): EventChangeAccepted {
    if (row.fingerprint !== print) {
      throw new SyncServiceError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was already used for a different event change')
    }
    if (row.outcome.kind === 'refused') throw refusal(row.outcome)
    return { duplicate: true, providerWriteQueued: row.outcome.providerWriteQueued }
  }
}
