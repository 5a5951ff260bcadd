// A durable job queue in the Sync database. One live job per coalescing key (completed jobs are
// deleted, so any row blocks its key), leases that expire so a crashed worker's job runs again,
// a per-attempt retry ladder, and the self-heal sweep of the specification.
import { ObjectId } from 'mongodb'
import type { Collection, Db, Filter } from 'mongodb'
import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../lib/clock.js'
import { isDuplicateKeyError } from '../../stores/database.js'
import { ATTEMPT_BUDGET, retryDelayMs, sweepAction } from '../lib/jobs/rules.js'
import type { JobStatus } from '../lib/jobs/rules.js'
import { databaseCall } from './database-calls.js'
import type { InTransaction } from './database-calls.js'
import { leaseTo, NO_LEASE, type Lease } from '../../lib/leases.js'
import { currentRequestId } from '../../lib/request-id.js'

export type JobType = 'import' | 'pull' | 'providerWrite'

export interface JobRecord extends Lease {
  _id: ObjectId
  type: JobType
  coalescingKey: string
  userId: string | null
  connectionId: string | null
  payload: Record<string, string>
  status: JobStatus
  /** Attempts used from the current budget. */
  attempts: number
  requeueCount: number
  runAt: Date
  /** Enqueued again while running: run once more after this run instead of being deleted. */
  rerun: boolean
  /** The request that asked for it last (lib/request-id.ts), carried into the work's log lines and calls. */
  requestId?: string
  /**
   * Waiting for its provider to answer again (it met the provider unavailable, or another job of
   * its connection did): released the moment the provider answers, and never made due earlier by
   * a new request. Absent on older rows.
   */
  waitingForProvider?: boolean
  lastError: string | null
  failedAt: Date | null
  createdAt: Date
  updatedAt: Date
}

export interface JobRequest {
  type: JobType
  coalescingKey: string
  userId?: string | null
  connectionId?: string | null
  payload?: Record<string, string>
  runAt?: Date
}

export interface QueueOptions {
  leaseMs?: number
  random?: () => number
}

export const DEFAULT_LEASE_MS = 5 * 60_000

export interface SweepReport {
  requeued: number
  exhausted: number
  removed: number
}

/** A job queued to run within this long is announced when it becomes due; a later one waits for a worker's poll. */
const ANNOUNCE_AHEAD_MS = 10_000
const EARLY_TIMER_SLACK_MS = 20

export class JobQueue {
  readonly #rows: Collection<JobRecord>
  readonly #clock: Clock
  readonly #leaseMs: number
  readonly #random: () => number
  readonly #dueListeners = new Set<() => void>()
  /** Announcements of jobs queued here to run a little later, by the time they become due. */
  readonly #dueTimers = new Map<number, NodeJS.Timeout>()

  constructor (db: Db, clock: Clock, options: QueueOptions = {}) {
    this.#rows = db.collection<JobRecord>('jobs')
    this.#clock = clock
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS
    this.#random = options.random ?? Math.random
  }

  async ensureIndexes (): Promise<void> {
    await this.#rows.createIndex({ coalescingKey: 1 }, { unique: true, name: 'coalescing_key' })
    await this.#rows.createIndex({ status: 1, runAt: 1 }, { name: 'status_run_at' })
    await this.#rows.createIndex({ status: 1, leaseUntil: 1 }, { name: 'status_lease_until' })
    // A connection's running write (one at a time), its held jobs and their release.
    await this.#rows.createIndex({ connectionId: 1, status: 1 }, { name: 'connection_status' })
  }

  /**
   * `listener` is called whenever this process queued a job that is due now, so that a running
   * worker claims it at once rather than at its next poll. Answers the function that unsubscribes.
   */
  onDue (listener: () => void): () => void {
    this.#dueListeners.add(listener)
    return () => { this.#dueListeners.delete(listener) }
  }

  /** Tells the listeners a job is due: a transaction that queued one calls it once committed. */
  announceDue (): void {
    for (const listener of this.#dueListeners) listener()
  }

  /**
   * Queues a job unless a live job holds its key; then that job is returned and `coalesced` is true.
   * With `session` the job is queued in the caller's transaction and commits with it; the caller
   * announces it (`announceDue`) after the commit, when no worker could have seen it before.
   */
  async enqueue (request: JobRequest, options: InTransaction = {}): Promise<{ job: JobRecord, coalesced: boolean }> {
    const queued = await this.#enqueue(request, options)
    if (options.session === undefined && queued.job.status === 'queued') this.#announceWhenDue(queued.job.runAt)
    return queued
  }

  /**
   * Announces the job now if it is due, or when it becomes due if that is soon (a pull a provider's
   * notification asked for waits half a second for the rest of its burst): a worker claims it then,
   * not at its next poll up to a poll interval later.
   */
  #announceWhenDue (runAt: Date, early = false): void {
    const inMs = runAt.getTime() - this.#clock.now().getTime()
    if (inMs <= 0) {
      this.announceDue()
      return
    }
    // A timer may fire a moment before the clock reaches its time: it waits once more for that
    // moment, and a clock that stands still (or a job further off) is left to the workers' poll.
    const limit = early ? EARLY_TIMER_SLACK_MS : ANNOUNCE_AHEAD_MS
    if (inMs > limit || this.#dueTimers.has(runAt.getTime())) return
    const timer = setTimeout(() => {
      this.#dueTimers.delete(runAt.getTime())
      this.#announceWhenDue(runAt, true)
    }, inMs + 1)
    timer.unref()
    this.#dueTimers.set(runAt.getTime(), timer)
  }

  async #enqueue (request: JobRequest, options: InTransaction): Promise<{ job: JobRecord, coalesced: boolean }> {
    const { session } = options
    const now = this.#clock.now()
    // The request that asked for the job (lib/request-id.ts); a later request it is coalesced with names it from then on.
    const requestId = currentRequestId()
    const asked = requestId === undefined ? {} : { requestId }
    const job: JobRecord = {
      _id: new ObjectId(),
      type: request.type,
      coalescingKey: request.coalescingKey,
      userId: request.userId ?? null,
      connectionId: request.connectionId ?? null,
      payload: request.payload ?? {},
      status: 'queued',
      attempts: 0,
      requeueCount: 0,
      runAt: request.runAt ?? now,
      ...NO_LEASE,
      rerun: false,
      lastError: null,
      failedAt: null,
      createdAt: now,
      updatedAt: now,
      ...asked
    }
    if (session === undefined) {
      try {
        await databaseCall(async () => await this.#rows.insertOne(job))
        return { job, coalesced: false }
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error
      }
    } else {
      // In a transaction a refused insert would end the transaction, so the key is looked up first,
      // in the transaction's snapshot. A job queued under the key after the snapshot makes the
      // insert fail all the same: the caller runs its transaction again, and this finds that job.
      const holder = await databaseCall(async (signal) => await this.#rows.findOne({ coalescingKey: job.coalescingKey }, { projection: { _id: 1 }, session, signal }))
      if (holder === null) {
        await databaseCall(async () => await this.#rows.insertOne(job, { session }))
        return { job, coalesced: false }
      }
    }
    // The newest request's payload wins (an event created then deleted is written as deleted). A
    // running job may already have read the state this request is about, so it runs once more.
    // Each update holds for the job's status at its moment; a job a worker claimed (or put back)
    // between the two is tried again, else the worker would run it with the older payload.
    for (;;) {
      const running = await databaseCall(async () => await this.#rows.updateOne({ coalescingKey: job.coalescingKey, status: 'running' }, { $set: { rerun: true, payload: job.payload, updatedAt: now, ...asked } }, { session }))
      if (running.matchedCount === 1) break
      const queued = await databaseCall(async () => await this.#rows.updateOne({ coalescingKey: job.coalescingKey, status: 'queued' }, { $set: { payload: job.payload, updatedAt: now, ...asked } }, { session }))
      if (queued.matchedCount === 1) break
      const current = await databaseCall(async (signal) => await this.#rows.findOne({ coalescingKey: job.coalescingKey }, { projection: { status: 1 }, session, signal }))
      // Gone meanwhile: queued anew below. Failed or exhausted: it keeps its payload, as before.
      if (current === null || (current.status !== 'running' && current.status !== 'queued')) break
    }
    // Only a job that has not been tried yet starts earlier for a new request: one waiting for a
    // retry or for its provider keeps its time, so edits made during an outage spend no retries.
    await databaseCall(async () => await this.#rows.updateOne(
      { coalescingKey: job.coalescingKey, status: 'queued', attempts: 0, waitingForProvider: { $ne: true }, runAt: { $gt: job.runAt } },
      { $set: { runAt: job.runAt } },
      { session }
    ))
    const existing = await databaseCall(async (signal) => await this.#rows.findOne({ coalescingKey: job.coalescingKey }, { session, signal }))
    if (!existing) return await this.#enqueue(request, options)
    return { job: existing, coalesced: true }
  }

  /**
   * Makes the queued job under `coalescingKey` due now, also one waiting for its retry: the person
   * asked for it (the refresh button). A job waiting for its provider is left to `release`.
   */
  async dueNow (coalescingKey: string): Promise<void> {
    const now = this.#clock.now()
    const moved = await databaseCall(async () => await this.#rows.updateOne(
      { coalescingKey, status: 'queued', waitingForProvider: { $ne: true }, runAt: { $gt: now } },
      { $set: { runAt: now, updatedAt: now } }
    ))
    if (moved.modifiedCount === 1) this.announceDue()
  }

  /**
   * Moves a queued job's start to `runAt` (never earlier than it was, never later than `latest`):
   * a debounce, for requests that keep arriving while the job waits. A running job is left alone.
   */
  async postpone (job: JobRecord, runAt: Date, latest: Date): Promise<void> {
    if (job.status !== 'queued') return
    const start = new Date(Math.min(latest.getTime(), Math.max(job.runAt.getTime(), runAt.getTime())))
    if (start.getTime() === job.runAt.getTime()) return
    await databaseCall(async () => await this.#rows.updateOne({ _id: job._id, status: 'queued' }, { $set: { runAt: start, updatedAt: this.#clock.now() } }))
  }

  /**
   * The next due job, leased to `owner`; a running job whose lease ran out counts as due. Ties go in
   * the order jobs were first queued. Jobs of `skipUsers` are left for later (their user has their
   * share of the worker's slots).
   *
   * A connection's provider writes run one at a time, in any process, and none overtakes an older
   * one that waits for the provider: a write claimed while another of its connection runs, or while
   * an older one waits for the provider to answer again, is put back and its connection skipped for
   * this claim. After an outage the writes so reach the provider in the order first made, whichever
   * of them happened to be due first, never side by side where a slower first request would land
   * after the second. (An older write in its own retry ladder holds no one up.)
   */
  async claim (owner: string, skipUsers: readonly string[] = []): Promise<JobRecord | null> {
    const waitingConnections: string[] = []
    // The oldest write of a connection, due, that a newer one of it found waiting ahead of it.
    let oldestFirst: ObjectId | undefined
    for (;;) {
      const now = this.#clock.now()
      const isDue: Filter<JobRecord> = { $or: [{ status: 'queued', runAt: { $lte: now } }, { status: 'running', leaseUntil: { $lte: now } }] }
      const due: Filter<JobRecord> = oldestFirst !== undefined
        ? { ...isDue, _id: oldestFirst }
        : {
            $and: [
              isDue,
              ...(waitingConnections.length === 0 ? [] : [{ $or: [{ type: { $ne: 'providerWrite' as const } }, { connectionId: { $nin: [...waitingConnections] } }] }])
            ],
            ...(skipUsers.length === 0 ? {} : { userId: { $nin: [...skipUsers] } })
          }
      const job = await databaseCall(async () => await this.#rows.findOneAndUpdate(due, {
        $set: { status: 'running', ...leaseTo(owner, now, this.#leaseMs), updatedAt: now },
        $inc: { attempts: 1 }
      }, { sort: { runAt: 1, _id: 1 }, returnDocument: 'after' }))
      if (oldestFirst !== undefined && job === null) {
        // Another worker took it meanwhile: its connection is busy.
        oldestFirst = undefined
        continue
      }
      if (!job) return null
      oldestFirst = undefined
      if (job.type === 'providerWrite' && job.connectionId !== null) {
        const ahead = await this.#writeAhead(job, now)
        if (ahead !== null) {
          await this.#putBack(job, owner)
          if (ahead.status === 'queued' && ahead.runAt <= now && !waitingConnections.includes(job.connectionId)) oldestFirst = ahead._id
          waitingConnections.push(job.connectionId)
          continue
        }
      }
      // Workers that died holding the job used up its budget too.
      if (job.attempts <= ATTEMPT_BUDGET) return job
      await this.#markFailed(job, owner, 'lease expired on every attempt', now)
    }
  }

  /**
   * The provider write of `job`'s connection that must go before it: one holding a live lease, else
   * the oldest older one waiting for the provider.
   */
  async #writeAhead (job: JobRecord, now: Date): Promise<Pick<JobRecord, '_id' | 'status' | 'runAt'> | null> {
    const projection = { _id: 1, status: 1, runAt: 1 }
    const sameConnection = { type: 'providerWrite' as const, connectionId: job.connectionId }
    const running = await databaseCall(async (signal) => await this.#rows.findOne(
      { ...sameConnection, status: 'running', leaseUntil: { $gt: now }, _id: { $ne: job._id } }, { projection, signal }))
    if (running !== null) return running
    return await databaseCall(async (signal) => await this.#rows.findOne(
      { ...sameConnection, status: 'queued', waitingForProvider: true, _id: { $lt: job._id } }, { projection, sort: { _id: 1 }, signal }))
  }

  /** Undoes a claim that must wait: queued as it was, the attempt given back. */
  async #putBack (job: JobRecord, owner: string): Promise<void> {
    await databaseCall(async () => await this.#rows.updateOne({ _id: job._id, leaseOwner: owner, status: 'running' }, {
      $set: { status: 'queued', ...NO_LEASE, updatedAt: this.#clock.now() },
      $inc: { attempts: -1 }
    }))
  }

  /** Extends the lease of a job still running; false when the lease was lost. */
  async renewLease (job: JobRecord, owner: string): Promise<boolean> {
    const now = this.#clock.now()
    const result = await databaseCall(async () => await this.#rows.updateOne({ _id: job._id, leaseOwner: owner, status: 'running' }, {
      $set: { ...leaseTo(owner, now, this.#leaseMs), updatedAt: now }
    }))
    return result.modifiedCount === 1
  }

  /** The source of retry jitter, for the other retry timings of the service. */
  get random (): () => number {
    return this.#random
  }

  get leaseMs (): number {
    return this.#leaseMs
  }

  /**
   * Finishes a job: `done` (the row is gone), `again` (a request came while it ran, so it is queued
   * to run once more), or false when the lease was lost (another worker owns the job now).
   */
  async complete (job: JobRecord, owner: string): Promise<'done' | 'again' | false> {
    const deleted = await databaseCall(async () => await this.#rows.deleteOne({ _id: job._id, leaseOwner: owner, status: 'running', rerun: false }))
    if (deleted.deletedCount === 1) return 'done'
    const now = this.#clock.now()
    const again = await databaseCall(async () => await this.#rows.updateOne({ _id: job._id, leaseOwner: owner, status: 'running', rerun: true }, {
      $set: { status: 'queued', rerun: false, attempts: 0, runAt: now, ...NO_LEASE, updatedAt: now }
    }))
    return again.modifiedCount === 1 ? 'again' : false
  }

  /** Records a failed attempt: the next rung of the ladder, or `failed` when the budget is spent. */
  async fail (job: JobRecord, owner: string, reason: string): Promise<boolean> {
    const now = this.#clock.now()
    if (job.attempts >= ATTEMPT_BUDGET) return await this.#markFailed(job, owner, reason, now)
    const runAt = new Date(now.getTime() + retryDelayMs(job.attempts, this.#random))
    const result = await databaseCall(async () => await this.#rows.updateOne({ _id: job._id, leaseOwner: owner, status: 'running' }, {
      $set: { status: 'queued', runAt, waitingForProvider: false, ...NO_LEASE, lastError: reason, updatedAt: now }
    }))
    return result.modifiedCount === 1
  }

  /**
   * The job met its provider unavailable: it waits until `runAt` for the provider, and the attempt
   * it used is given back (the provider's health is not the job's failure).
   */
  async waitForProvider (job: JobRecord, owner: string, reason: string, runAt: Date): Promise<boolean> {
    const now = this.#clock.now()
    const result = await databaseCall(async () => await this.#rows.updateOne({ _id: job._id, leaseOwner: owner, status: 'running' }, {
      // A report that came in meanwhile is in the payload the next try writes: no second run for it.
      $set: { status: 'queued', runAt, waitingForProvider: true, rerun: false, ...NO_LEASE, lastError: reason, updatedAt: now },
      $inc: { attempts: -1 }
    }))
    return result.modifiedCount === 1
  }

  /**
   * The connection's provider is unavailable: its other queued jobs due before `until` wait until
   * then (behind the one job that tries the provider), marked as waiting for it.
   */
  async holdConnection (connectionId: string, except: ObjectId, until: Date): Promise<number> {
    const held = await databaseCall(async () => await this.#rows.updateMany(
      { connectionId, status: 'queued', _id: { $ne: except }, runAt: { $lt: until } },
      { $set: { runAt: until, waitingForProvider: true, updatedAt: this.#clock.now() } }
    ))
    return held.modifiedCount
  }

  /** The connection's provider answers again (or the user asked to try now): its waiting jobs are due now. */
  async release (connectionId: string): Promise<number> {
    const now = this.#clock.now()
    const released = await databaseCall(async () => await this.#rows.updateMany(
      { connectionId, status: 'queued', waitingForProvider: true },
      { $set: { runAt: now, waitingForProvider: false, updatedAt: now } }
    ))
    return released.modifiedCount
  }

  /** Provider writes not yet done, per connection: queued, running, failed or exhausted. */
  async pendingWrites (connectionIds: string[]): Promise<Map<string, number>> {
    const rows = await databaseCall(async (signal) => await this.#rows.aggregate<{ _id: string, count: number }>([
      { $match: { type: 'providerWrite', connectionId: { $in: connectionIds } } },
      { $group: { _id: '$connectionId', count: { $sum: 1 } } }
    ], { signal }).toArray())
    return new Map(rows.map((row) => [row._id, row.count]))
  }

  /** Jobs by type and status, for the operator's gauges. */
  async countsByTypeAndStatus (): Promise<Array<{ type: JobType, status: JobStatus, count: number }>> {
    const groups = await databaseCall(async (signal) => await this.#rows.aggregate<{ _id: { type: JobType, status: JobStatus }, count: number }>([
      { $group: { _id: { type: '$type', status: '$status' }, count: { $sum: 1 } } }
    ], { signal }).toArray())
    return groups.map(({ _id, count }) => ({ ..._id, count }))
  }

  /** Queued jobs due by `now`, and since when the oldest of them waits (on the status_run_at index). */
  async backlog (now: Date): Promise<{ due: number, oldestDueAt: Date | null }> {
    const due = { status: 'queued' as const, runAt: { $lte: now } }
    const [count, oldest] = await Promise.all([
      databaseCall(async () => await this.#rows.countDocuments(due)),
      databaseCall(async (signal) => await this.#rows.find(due, { projection: { runAt: 1 }, signal }).sort({ runAt: 1 }).limit(1).toArray())
    ])
    return { due: count, oldestDueAt: oldest[0]?.runAt ?? null }
  }

  async get (jobId: ObjectId): Promise<JobRecord | null> {
    return await databaseCall(async (signal) => await this.#rows.findOne({ _id: jobId }, { signal }))
  }

  async list (filter: Filter<JobRecord> = {}): Promise<JobRecord[]> {
    return await databaseCall(async (signal) => await this.#rows.find(filter, { signal }).sort({ createdAt: 1 }).toArray())
  }

  /**
   * The self-heal sweep. `lastReadFailureAt` looks up a job's connection marker (null when the job
   * has no connection or the connection is gone).
   */
  async sweep (lastReadFailureAt: (connectionId: string) => Promise<Date | null>, log: FastifyBaseLogger): Promise<SweepReport> {
    const report: SweepReport = { requeued: 0, exhausted: 0, removed: 0 }
    const candidates = await databaseCall(async (signal) => await this.#rows.find({ status: { $in: ['failed', 'exhausted'] } }, { signal }).toArray())
    for (const job of candidates) {
      const now = this.#clock.now()
      const marker = job.connectionId === null ? null : await lastReadFailureAt(job.connectionId)
      const action = sweepAction(job, { lastReadFailureAt: marker }, now)
      const context = { jobId: job._id.toHexString(), type: job.type, coalescingKey: job.coalescingKey, requeueCount: job.requeueCount }
      if (action === 'requeue') {
        const result = await databaseCall(async () => await this.#rows.updateOne({ _id: job._id, status: 'failed' }, {
          $set: { status: 'queued', attempts: 0, runAt: now, failedAt: null, updatedAt: now },
          $inc: { requeueCount: 1 }
        }))
        if (result.modifiedCount === 1) {
          report.requeued++
          log.info({ ...context, requeueCount: job.requeueCount + 1 }, 'failed job requeued by the self-heal sweep with a fresh attempt budget')
        }
      } else if (action === 'exhaust') {
        const result = await databaseCall(async () => await this.#rows.updateOne({ _id: job._id, status: 'failed' }, { $set: { status: 'exhausted', updatedAt: now } }))
        if (result.modifiedCount === 1) {
          report.exhausted++
          log.error(context, 'job exhausted after the maximum requeues; it needs an operator')
        }
      } else if (action === 'remove') {
        const result = await databaseCall(async () => await this.#rows.deleteOne({ _id: job._id, status: 'exhausted' }))
        if (result.deletedCount === 1) {
          report.removed++
          log.warn(context, 'exhausted job removed because its connection has lastReadFailureAt; its coalescing key is free again')
        }
      }
    }
    return report
  }

  async #markFailed (job: JobRecord, owner: string, reason: string, now: Date): Promise<boolean> {
    const result = await databaseCall(async () => await this.#rows.updateOne({ _id: job._id, leaseOwner: owner, status: 'running' }, {
      $set: { status: 'failed', failedAt: now, ...NO_LEASE, lastError: reason, rerun: false, updatedAt: now }
    }))
    return result.modifiedCount === 1
  }
}
