// Runs due jobs in at most `maxConcurrency` slots, and the self-heal sweep. Claims nothing while
// execution is passive.
import { randomUUID } from 'node:crypto'
import { CountsByKey } from '../../lib/counts-by-key.js'
import type { FastifyBaseLogger } from 'fastify'
import type { JobQueue, JobRecord, JobType, SweepReport } from '../stores/job-queue.js'
import { ATTEMPT_BUDGET, WaitForProviderError } from '../lib/jobs/rules.js'
import { inBackground } from '../stores/database-calls.js'
import { PeriodicTask } from '../../lib/periodic-task.js'
import { keepLease } from '../../lib/lease-keeper.js'
import { withRequestId } from '../../lib/request-id.js'

export type JobHandler = (job: JobRecord) => Promise<void>

/**
 * How a run ended: done; done and asked for again while it ran (`rerun`); failed and queued for
 * another attempt (`retry`); failed with its attempts spent (`failed`: the self-heal sweep gives it
 * a fresh budget later or, after the last requeue, marks it exhausted); met its provider
 * unavailable (`waiting`); finished after another worker took its lease (`lease_lost`); or its
 * outcome could not be recorded (`unrecorded`).
 */
type JobOutcome = 'done' | 'rerun' | 'retry' | 'failed' | 'waiting' | 'lease_lost' | 'unrecorded'

export interface JobWorkerOptions {
  queue: JobQueue
  handlers: Record<JobType, JobHandler>
  log: FastifyBaseLogger
  maxConcurrency: number
  /**
   * The slots one user's jobs may hold at once (default: half of maxConcurrency, at least one), so
   * a user whose servers answer slowly waits on their own jobs and never takes every slot.
   */
  maxPerUser?: number
  /** Read on every claim, so a configuration of `passive` claims nothing. */
  isActive: () => boolean
  /** One pass of the self-heal sweep; the background loop runs it every sweep interval. */
  sweep: () => Promise<SweepReport>
  /** Told of every run's end; must not throw. */
  onRunEnded?: (job: JobRecord, outcome: JobOutcome, seconds: number) => void
}

export class JobWorker {
  readonly id = `worker-${randomUUID()}`
  readonly #options: JobWorkerOptions
  readonly #running = new Set<Promise<void>>()
  /** Jobs running here per user. */
  readonly #runningByUser = new CountsByKey()
  #claiming = false
  /** Settles when the claim under way ends; stop() waits for it, so the database never closes under a claim. */
  #claimEnded: Promise<void> = Promise.resolve()
  /** A job became due while a claim was running: claim once more when it ends. */
  #claimAgain = false
  #stopListening: (() => void) | undefined
  #loops: PeriodicTask[] = []
  #stopped = false

  constructor (options: JobWorkerOptions) {
    this.#options = options
  }

  get running (): number {
    return this.#running.size
  }

  /** Starts due jobs in the free slots and waits until those have finished; returns how many ran. */
  async tick (): Promise<number> {
    const started = await this.#fill()
    await Promise.all(started)
    return started.length
  }

  /** One pass of the failed-job self-heal sweep (background work: BACKGROUND_DATABASE_CALL_DEADLINE_MS per call). */
  async sweep (): Promise<SweepReport> {
    return await inBackground(async () => await this.#options.sweep())
  }

  /** Background loop for the running service; tests drive tick() instead. */
  start (pollIntervalMs: number, sweepIntervalMs: number): void {
    this.#stopped = false
    const poll = new PeriodicTask({
      intervalMs: pollIntervalMs,
      run: async () => await this.#fill(),
      onError: (error) => this.#options.log.error({ err: error }, 'job claim failed')
    })
    const sweep = new PeriodicTask({
      intervalMs: sweepIntervalMs,
      run: async () => { if (this.#options.isActive()) await this.sweep() },
      onError: (error) => this.#options.log.error({ err: error }, 'self-heal sweep failed')
    })
    this.#loops = [poll, sweep]
    for (const loop of this.#loops) loop.start()
    // The poll is for jobs queued by other processes or due later; one queued here is claimed at once.
    this.#stopListening = this.#options.queue.onDue(() => {
      this.#fill().catch((error: unknown) => this.#options.log.error({ err: error }, 'job claim failed'))
    })
  }

  /** Stops claiming and waits for the jobs in flight. */
  async stop (): Promise<void> {
    this.#stopped = true
    await Promise.all(this.#loops.map(async (loop) => { await loop.stop() }))
    this.#loops = []
    this.#stopListening?.()
    this.#stopListening = undefined
    // A job claimed by the claim under way is running once it ends.
    await this.#claimEnded
    await Promise.allSettled([...this.#running])
  }

  /**
   * Claims and starts due jobs. Everything the jobs do runs as background work (database calls with
   * BACKGROUND_DATABASE_CALL_DEADLINE_MS each), whoever asked for the claim.
   */
  async #fill (): Promise<Array<Promise<void>>> {
    return await inBackground(async () => await this.#claimAndStart())
  }

  async #claimAndStart (): Promise<Array<Promise<void>>> {
    // One claimer at a time, so two ticks never overfill the slots.
    if (this.#stopped) return []
    if (this.#claiming) {
      this.#claimAgain = true
      return []
    }
    this.#claiming = true
    this.#claimAgain = false
    let ended = () => {}
    this.#claimEnded = new Promise((resolve) => { ended = resolve })
    const started: Array<Promise<void>> = []
    try {
      while (!this.#stopped && this.#running.size < this.#options.maxConcurrency && this.#options.isActive()) {
        const job = await this.#options.queue.claim(this.id, this.#usersAtShare())
        if (!job) break
        const user = job.userId
        // The claim left out the users at their share.
        if (user !== null) this.#runningByUser.take(user)
        const run = this.#run(job).finally(() => {
          this.#running.delete(run)
          if (user !== null) this.#runningByUser.release(user)
          // A finished job frees a slot: keep draining while the loop runs.
          if (this.#loops.length > 0) this.#fill().catch(() => {})
        })
        this.#running.add(run)
        started.push(run)
      }
    } finally {
      this.#claiming = false
      ended()
      if (this.#claimAgain && this.#loops.length > 0) this.#fill().catch((error: unknown) => this.#options.log.error({ err: error }, 'job claim failed'))
    }
    return started
  }

  /** The users whose jobs hold their share of the slots already. */
  #usersAtShare (): string[] {
    return this.#runningByUser.atLeast(this.#options.maxPerUser ?? Math.max(1, Math.floor(this.#options.maxConcurrency / 2)))
  }

  /** Never rejects: a job's outcome, and any failure to record it, ends up in the queue or the log. */
  async #run (job: JobRecord): Promise<void> {
    const { queue, handlers, log } = this.#options
    const context = { jobId: job._id.toHexString(), type: job.type, attempt: job.attempts, ...(job.requestId === undefined ? {} : { requestId: job.requestId }) }
    // Long jobs keep their lease; a worker that dies stops renewing and the lease runs out.
    const lease = keepLease({
      leaseMs: queue.leaseMs,
      renew: async () => await queue.renewLease(job, this.id),
      onRenewalError: (error) => log.warn({ ...context, err: error }, 'job lease renewal failed')
    })
    const started = performance.now()
    let outcome: JobOutcome = 'unrecorded'
    try {
      let failure: string | null = null
      let waitUntil: Date | null = null
      try {
        // Its calls (to the backend, the change feed) carry the id of the request that asked for it.
        await withRequestId(job.requestId, async () => { await handlers[job.type](job) })
      } catch (error) {
        failure = error instanceof Error ? `${error.name}: ${error.message}` : 'job failed'
        if (error instanceof WaitForProviderError) waitUntil = error.retryAt
      }
      await lease.end()
      if (waitUntil !== null && failure !== null) {
        log.info({ ...context, reason: failure, retryAt: waitUntil.toISOString() }, 'job waits for its provider to answer again')
        outcome = await queue.waitForProvider(job, this.id, failure, waitUntil) ? 'waiting' : 'lease_lost'
      } else if (failure !== null) {
        log.warn({ ...context, reason: failure }, 'job attempt failed')
        const recorded = await queue.fail(job, this.id, failure)
        outcome = !recorded ? 'lease_lost' : job.attempts >= ATTEMPT_BUDGET ? 'failed' : 'retry'
      } else {
        const completed = await queue.complete(job, this.id)
        // Which worker ran which job: with several Sync processes, each job must be done once.
        if (completed === 'done') log.debug({ ...context, worker: this.id, coalescingKey: job.coalescingKey }, 'job done')
        else if (completed === 'again') log.debug({ ...context, worker: this.id, coalescingKey: job.coalescingKey }, 'job runs again: it was asked for while it ran')
        else log.warn(context, 'job finished after its lease was taken over; result kept by the new owner')
        outcome = completed === 'done' ? 'done' : completed === 'again' ? 'rerun' : 'lease_lost'
      }
    } catch (error) {
      // The queue itself failed; the lease runs out and the job is claimed again.
      log.error({ ...context, err: error }, 'job outcome could not be recorded')
    } finally {
      await lease.end()
      this.#options.onRunEnded?.(job, outcome, (performance.now() - started) / 1000)
    }
  }
}
