import { randomUUID } from 'node:crypto'
import { ObjectId } from 'bson'
import type { EventChangeReport } from '../../schemas/sync/index.js'
import type { PersistencePlan } from './transition.js'

/**
 * A change report waiting for the Sync service. It is written in the same transaction as the
 * own-data change it reports, so a report exists exactly when the change does.
 */
export interface OutboxRecord {
  _id: ObjectId
  user: string
  report: EventChangeReport
  createdAt: Date
  /** Position within the write that created it; with createdAt it orders one user's reports. */
  seq: number
  attempts: number
  nextAttemptAt: Date
  lastError: string | null
}

/**
 * Which process delivers a user's reports right now. Several backend processes may share one
 * database; a user's reports keep their order only if one of them sends at a time.
 */
export interface OutboxLease {
  /** The user id. */
  _id: string
  holder: string
  until: Date
}

export function outboxRecordsFor (userId: string, plans: PersistencePlan[], now: Date): OutboxRecord[] {
  const records: OutboxRecord[] = []
  for (const plan of plans) {
    if (plan.report === null) continue
    records.push({
      _id: new ObjectId(),
      user: userId,
      report: {
        userId,
        eventId: plan.report.eventId,
        operation: plan.report.operation,
        // Chosen once and stored, so every retry of this report carries the same key.
        idempotencyKey: randomUUID(),
        ...(plan.report.calendarId === undefined ? {} : { calendarId: plan.report.calendarId })
      },
      createdAt: now,
      seq: records.length,
      attempts: 0,
      nextAttemptAt: now,
      lastError: null
    })
  }
  return records
}

export interface RetryPolicy {
  baseDelayMs: number
  maxDelayMs: number
}

/**
 * Exponential backoff with full jitter: a random delay up to base * 2^attempts (capped), so
 * many backends retrying after a Sync outage do not all arrive at the same moment.
 */
export function retryDelay (attempts: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(attempts, 30))
  return Math.max(1, Math.round(random() * ceiling))
}
