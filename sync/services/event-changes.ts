// Reports of own-data event changes from the backend: an `event` invalidation for the user's other
// tabs and devices, and the provider write to the connection holding the event's calendar when it
// is live and execution is active. Each idempotency key is applied once; a repeat answers what the first one answered.
import type { ClientSession } from 'mongodb'
import type { EventChangeAccepted, EventChangeReport } from '../../schemas/sync/index.js'
import { isDuplicateKeyError } from '../../stores/database.js'
import type { Clock } from '../lib/clock.js'
import { decideReport, fingerprint, refusal, replayAnswer } from '../lib/event-changes.js'
import type { Modes, Refusal } from '../lib/event-changes.js'
import type { ChangeFeed } from '../stores/change-feed.js'
import type { CalendarStore } from '../stores/calendars.js'
import type { ConnectionStore } from '../stores/connections.js'
import type { EventChangeReportStore } from '../stores/event-change-reports.js'
import type { SyncEngine } from './sync-engine.js'

export interface EventChangesParts {
  reports: EventChangeReportStore
  connections: ConnectionStore
  /** Which connection holds the calendar a report names. */
  calendars: Pick<CalendarStore, 'connectionsHolding'>
  feed: ChangeFeed
  engine: SyncEngine
  clock: Clock
  /** Read on every report, as the configuration holds them. */
  modes: Modes
  /** JobQueue.announceDue: a provider write queued in a report's transaction is due once it committed. */
  announceDue: () => void
  /** SyncDatabase.withTransaction: one report's writes commit together, where the deployment has transactions. */
  transaction: <T>(work: (session: ClientSession | undefined) => Promise<T>) => Promise<T>
}

/**
 * How often a report's transaction runs before its duplicate key error is answered: a concurrent
 * report of the same key (or a job queued under the same key) committed after the transaction
 * began, and the next run sees it.
 */
const TRANSACTION_RUNS = 3

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
   *
   * The report's writes (its feed entry, its provider write or held change, and the record of its
   * key) are one transaction where the deployment has transactions: a report that met a database
   * past its deadline (503) left nothing, and the backend's retry applies it once. Without
   * transactions they go in that order, the record last: a report cut off half-way is applied
   * again by the retry (a second `event` invalidation at worst, the provider write coalescing by
   * its key) rather than answered as done with its invalidation and write missing.
   */
  async apply (report: EventChangeReport): Promise<EventChangeAccepted> {
    const print = fingerprint(report)
    for (let run = 1; ; run++) {
      try {
        const answer = await this.#parts.transaction(async (session) => await this.#applyOnce(report, print, session))
        // Committed: held reads of the user's feed answer now (a replayed report wakes them for nothing).
        this.#parts.feed.announce(report.userId)
        if ('refused' in answer) throw refusal(answer.refused)
        // Committed: the provider write is claimed now, not at the worker's next poll.
        if (answer.providerWriteQueued) this.#parts.announceDue()
        return answer
      } catch (error) {
        if (run < TRANSACTION_RUNS && isDuplicateKeyError(error)) continue
        throw error
      }
    }
  }

  async #applyOnce (report: EventChangeReport, print: string, session: ClientSession | undefined): Promise<EventChangeAccepted | { refused: Refusal }> {
    const { reports, connections, calendars, feed, engine, clock, modes } = this.#parts
    const previous = await reports.find(report.userId, report.idempotencyKey, { session })
    if (previous) return replayAnswer(previous, print)

    const holders = report.calendarId ? await calendars.connectionsHolding(report.userId, report.calendarId) : []
    const { outcome, writable } = decideReport(report, await connections.listByUser(report.userId), holders, modes)
    if (outcome.kind === 'refused' && outcome.code === 'MAINTENANCE') throw refusal(outcome)

    await feed.appendWith({ session }, report.userId, {
      kind: 'event',
      eventId: report.eventId,
      ...(report.connectionId ? { connectionId: report.connectionId } : {}),
      ...(report.calendarId ? { calendarId: report.calendarId } : {})
    })
    const change = { eventId: report.eventId, operation: report.operation, calendarId: report.calendarId ?? null, subject: report.subject }
    if (outcome.kind === 'held') {
      await engine.holdProviderWrite(outcome.connectionId, report.userId, change, { session })
    } else if (outcome.kind === 'accepted' && outcome.providerWriteQueued) {
      for (const connection of writable) await engine.queueProviderWrite(connection, change, { session })
    }

    // The same report may arrive twice at once; the one recorded first gives the answer.
    const winner = await reports.record({ userId: report.userId, idempotencyKey: report.idempotencyKey, fingerprint: print, outcome, createdAt: clock.now() }, { session })
    if (winner) return replayAnswer(winner, print)
    if (outcome.kind === 'refused') return { refused: outcome }
    if (outcome.kind === 'held') return { duplicate: false, providerWriteQueued: false, heldUntilReconnect: true }
    return { duplicate: false, providerWriteQueued: outcome.providerWriteQueued }
  }
}
