// Reports of own-data event changes from the backend: an `event` invalidation for the user's other
// tabs and devices, and the provider write when the user has a live connection and execution is
// active. Each idempotency key is applied once; a repeat answers what the first one answered.
import type { EventChangeAccepted, EventChangeReport } from '../../schemas/sync/index.js'
import type { Clock } from '../lib/clock.js'
import { decideReport, fingerprint, refusal, replayAnswer } from '../lib/event-changes.js'
import type { Modes } from '../lib/event-changes.js'
import type { ChangeFeed } from '../stores/change-feed.js'
import type { ConnectionStore } from '../stores/connections.js'
import type { EventChangeReportStore } from '../stores/event-change-reports.js'
import type { SyncEngine } from './sync-engine.js'

export interface EventChangesParts {
  reports: EventChangeReportStore
  connections: ConnectionStore
  feed: ChangeFeed
  engine: SyncEngine
  clock: Clock
  /** Read on every report, as the configuration holds them. */
  modes: Modes
}

export class EventChanges {
  readonly #parts: EventChangesParts

  constructor (parts: EventChangesParts) {
    this.#parts = parts
  }

  /**
   * Applies a report. MAINTENANCE (503) changes nothing, so the backend's retry applies the report
   * once maintenance ends. A report for a revoked connection is held until the user reconnects it,
   * and still appends the `event` invalidation: the backend's own write stands and the user's other
   * tabs must see it.
   */
  async apply (report: EventChangeReport): Promise<EventChangeAccepted> {
    const { reports, connections, feed, engine, clock, modes } = this.#parts
    const print = fingerprint(report)
    const previous = await reports.find(report.userId, report.idempotencyKey)
    if (previous) return replayAnswer(previous, print)

    const { outcome, writable } = decideReport(report, await connections.listByUser(report.userId), modes)
    if (outcome.kind === 'refused' && outcome.code === 'MAINTENANCE') throw refusal(outcome)

    // The same report may arrive twice at once; the one recorded first is the one applied.
    const winner = await reports.record({ userId: report.userId, idempotencyKey: report.idempotencyKey, fingerprint: print, outcome, createdAt: clock.now() })
    if (winner) return replayAnswer(winner, print)

    await feed.append(report.userId, {
      kind: 'event',
      eventId: report.eventId,
      ...(report.connectionId ? { connectionId: report.connectionId } : {}),
      ...(report.calendarId ? { calendarId: report.calendarId } : {})
    })
    if (outcome.kind === 'refused') throw refusal(outcome)
    if (outcome.kind === 'held') {
      await engine.holdProviderWrite(outcome.connectionId, report.userId, { eventId: report.eventId, operation: report.operation, calendarId: report.calendarId ?? null, subject: report.subject })
      return { duplicate: false, providerWriteQueued: false, heldUntilReconnect: true }
    }
    if (outcome.providerWriteQueued) {
      for (const connection of writable) {
        await engine.queueProviderWrite(connection, { eventId: report.eventId, operation: report.operation, calendarId: report.calendarId ?? null, subject: report.subject })
      }
    }
    return { duplicate: false, providerWriteQueued: outcome.providerWriteQueued }
  }
}
