import { randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'
import type { Collection } from 'mongodb'
import { isDuplicateKeyError } from '../lib/mongo-errors.js'
import type { FastifyBaseLogger } from 'fastify'
import { SyncRequestError, SyncUnavailableError } from '../lib/sync-client.js'
import type { EventChangeAccepted, EventChangeReport } from '../schemas/sync/index.js'
import { retryDelay, type OutboxLease, type OutboxRecord, type RetryPolicy } from '../lib/events/outbox.js'

declare module 'fastify' {
  interface FastifyInstance {
    outbox: OutboxSender
  }
}

export interface OutboxSenderOptions extends RetryPolicy {
  collection: Collection<OutboxRecord>
  leases: Collection<OutboxLease>
  /** How long a claim on a user's reports lasts without renewal (a crashed holder's claim expires). */
  leaseMs?: number
  send: (report: EventChangeReport) => Promise<EventChangeAccepted>
  log: FastifyBaseLogger
  /** How often the sender looks for reports that are due (reports of this process are sent at once). */
  pollIntervalMs: number
  now?: () => Date
  random?: () => number
}

const ORDER = { createdAt: 1, seq: 1, _id: 1 } as const
const BATCH = 50

/**
 * Delivers the outbox to the Sync service: one user's reports strictly in the order they were
 * written (a report waits while an older one of the same user is failing; one process at a time
 * sends them, under a lease), every user independently, each report until Sync has it. A report is removed only after Sync answered,
 * so a restart resends at most the report that was in flight; its idempotency key makes Sync
 * apply it once.
 */
export class OutboxSender {
  readonly #options: OutboxSenderOptions
  readonly #now: () => Date
  readonly #random: () => number
  readonly #running = new Map<string, Promise<void>>()
  readonly #queued = new Map<string, Promise<void>>()
  readonly #holder = randomUUID()
  readonly #leaseMs: number
  #timer: NodeJS.Timeout | undefined
  #stopped = false
  /** Bumped by every start, so a sweep still running from before a stop does not reschedule. */
  #generation = 0

  constructor (options: OutboxSenderOptions) {
    this.#options = options
    this.#now = options.now ?? (() => new Date())
    this.#random = options.random ?? Math.random
    this.#leaseMs = options.leaseMs ?? 30_000
  }

  start (): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#stopped = false
    this.#generation += 1
    this.#schedule(0, this.#generation)
  }

  /** Delivers the user's due reports now; resolves once this user's queue was worked through. */
  async flush (userId: string): Promise<void> {
    // One run per user at a time keeps the order. A run in progress may have read the queue
    // before the caller's report was written, so callers wait for one more run after it; all
    // callers arriving meanwhile share that run.
    const queued = this.#queued.get(userId)
    if (queued !== undefined) return await queued
    const running = this.#running.get(userId)
    if (running !== undefined) {
      const next = running.catch(() => {}).then(async () => {
        this.#queued.delete(userId)
        await this.flush(userId)
      })
      this.#queued.set(userId, next)
      return await next
    }
    const run = this.#deliver(userId).finally(() => { this.#running.delete(userId) })
    this.#running.set(userId, run)
    return await run
  }

  /** Starts delivery of the user's reports without waiting for it. */
  kick (userId: string): void {
    if (this.#stopped) return
    this.flush(userId).catch((error: unknown) => {
      this.#options.log.error({ err: error, userId }, 'event change report delivery failed')
    })
  }

  /** Delivers every user's due reports (what the timer does). */
  async flushDue (): Promise<void> {
    const users = await this.#options.collection.distinct('user', { nextAttemptAt: { $lte: this.#now() } })
    for (const userId of users) {
      if (this.#stopped) return
      await this.flush(userId)
    }
  }

  async pending (userId?: string): Promise<number> {
    return await this.#options.collection.countDocuments(userId === undefined ? {} : { user: userId })
  }

  async stop (): Promise<void> {
    this.#stopped = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    await Promise.allSettled([...this.#running.values(), ...this.#queued.values()])
  }

  #schedule (delayMs: number, generation: number): void {
    if (this.#stopped || generation !== this.#generation) return
    this.#timer = setTimeout(() => {
      this.flushDue()
        .catch((error: unknown) => { this.#options.log.error({ err: error }, 'event outbox sweep failed') })
        .finally(() => { this.#schedule(this.#options.pollIntervalMs, generation) })
    }, delayMs)
    // The sweep must never keep a process alive that is otherwise done.
    this.#timer.unref()
  }

  async #deliver (userId: string): Promise<void> {
    let claimedAt = await this.#claim(userId)
    if (claimedAt === null) return
    try {
      while (!this.#stopped) {
        // Reports are read in batches in order; only the first can be waiting for a retry, since
        // delivery stops at the first report Sync does not take.
        const batch = await this.#options.collection.find({ user: userId }).sort(ORDER).limit(BATCH).toArray()
        if (batch.length === 0) return
        for (const record of batch) {
          if (this.#stopped || record.nextAttemptAt > this.#now()) return
          if (this.#now().getTime() - claimedAt.getTime() > this.#leaseMs / 3) {
            claimedAt = await this.#claim(userId)
            if (claimedAt === null) return
          }
          if (!await this.#send(record)) return
        }
      }
    } finally {
      await this.#options.leases.deleteOne({ _id: userId, holder: this.#holder })
    }
  }

  /**
   * Takes (or renews) this process's claim on the user's reports; null while another process
   * holds a live claim. A claim that was not renewed in time lapses, so a crashed process does
   * not block the user's reports for longer than the lease.
   */
  async #claim (userId: string): Promise<Date | null> {
    const now = this.#now()
    const lease = { holder: this.#holder, until: new Date(now.getTime() + this.#leaseMs) }
    const renewed = await this.#options.leases.updateOne(
      { _id: userId, $or: [{ holder: this.#holder }, { until: { $lte: now } }] },
      { $set: lease }
    )
    if (renewed.matchedCount === 1) return now
    try {
      await this.#options.leases.insertOne({ _id: userId, ...lease })
      return now
    } catch (error) {
      // Another process holds a live claim.
      if (isDuplicateKeyError(error)) return null
      throw error
    }
  }

  /** Sends one report; false when Sync did not take it and it waits for its retry. */
  async #send (record: OutboxRecord): Promise<boolean> {
    const { collection, log } = this.#options
    const { userId, eventId } = record.report
    try {
      const answer = await this.#options.send(record.report)
      await collection.deleteOne({ _id: record._id })
      log.debug({ userId, eventId, duplicate: answer.duplicate }, 'event change reported to Sync')
      return true
    } catch (error) {
      if (error instanceof SyncUnavailableError || (error instanceof SyncRequestError && error.code === 'MAINTENANCE')) {
        const delay = retryDelay(record.attempts, this.#options, this.#random)
        await collection.updateOne({ _id: record._id }, {
          $inc: { attempts: 1 },
          $set: { nextAttemptAt: new Date(this.#now().getTime() + delay), lastError: error.message }
        })
        log.warn({ userId, eventId, attempts: record.attempts + 1, retryInMs: delay, reason: error.message }, 'Sync did not take an event change report; will retry')
        return false
      }
      if (error instanceof SyncRequestError) {
        // Sync answered and refused this report for good (revoked connection, invalid report):
        // retrying cannot change the answer, and holding it would block the user's later reports.
        await collection.deleteOne({ _id: record._id })
        log.warn({ userId, eventId, statusCode: error.statusCode, code: error.code }, 'Sync refused an event change report; dropped')
        return true
      }
      throw error
    }
  }
}

export default fp(async function outbox (fastify) {
  const sender = new OutboxSender({
    collection: fastify.eventStore.outbox,
    leases: fastify.eventStore.outboxLeases,
    send: async (report) => await fastify.syncClient.reportEventChange(report),
    log: fastify.log.child({ component: 'event-outbox' }),
    pollIntervalMs: 2000,
    baseDelayMs: 500,
    maxDelayMs: 60_000
  })
  fastify.decorate('outbox', sender)
  fastify.addHook('onReady', async () => { sender.start() })
  fastify.addHook('onClose', async () => { await sender.stop() })
}, { name: 'outbox', dependencies: ['event-store', 'sync-client'] })
