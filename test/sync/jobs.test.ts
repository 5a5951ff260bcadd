import { test } from 'tap'
import { metricValue, parseMetrics } from '../metrics-text.js'
import { JobWorker } from '../../sync/services/job-worker.js'
import type { JobHandler } from '../../sync/services/job-worker.js'
import type { JobRecord, JobType } from '../../sync/stores/job-queue.js'
import { DEFAULT_LEASE_MS, JobQueue } from '../../sync/stores/job-queue.js'
import { ATTEMPT_BUDGET, FAILED_JOB_COOLDOWN_MS, MAX_REQUEUES, RETRY_LADDER_MS } from '../../sync/lib/jobs/rules.js'
import type { Collection, Db, Filter } from 'mongodb'
import { systemClock } from '../../sync/lib/clock.js'
import { BACKGROUND_DATABASE_CALL_DEADLINE_MS, databaseCallDeadlineMs } from '../../sync/stores/database-calls.js'
import { DATABASE_CALL_DEADLINE_MS, requestDatabaseDeadlineMs } from '../../stores/database.js'
import { buildSyncApp, newUserId, startDatabase } from './helper.js'
import type { BuiltSyncApp } from './helper.js'

function workerFor (built: BuiltSyncApp, handler: JobHandler, options: { maxConcurrency?: number, active?: () => boolean } = {}): JobWorker {
  const handlers: Record<JobType, JobHandler> = { import: handler, pull: handler, providerWrite: handler }
  return new JobWorker({
    queue: built.app.syncJobQueue,
    handlers,
    log: built.app.log,
    maxConcurrency: options.maxConcurrency ?? 4,
    isActive: options.active ?? (() => true),
    sweep: async () => await built.app.syncJobWorker.sweep()
  })
}

test('a report coalesced into a job a worker claims at that moment is not lost: the job runs once more with it', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const db: Db = built.app.syncDb.db
  const jobs = db.collection<JobRecord>('jobs')
  const worker = new JobQueue(db, systemClock)
  // The worker claims the job just after the coalescing request looked for it running, and before
  // it looks for it queued: the interleaving a busy Sync meets (an event created and deleted at once).
  let claimBetween = false
  const interleaved = new Proxy(jobs, {
    get (target, property, receiver) {
      if (property !== 'updateOne') {
        const value = Reflect.get(target, property, receiver) as unknown
        return typeof value === 'function' ? value.bind(target) : value
      }
      return async (filter: Filter<JobRecord>, ...rest: Parameters<Collection<JobRecord>['updateOne']> extends [unknown, ...infer R] ? R : never) => {
        const result = await target.updateOne(filter, ...rest)
        if (claimBetween && filter.status === 'running' && result.matchedCount === 0) {
          claimBetween = false
          await worker.claim('worker-a')
        }
        return result
      }
    }
  })
  const queue = new JobQueue({ collection: () => interleaved } as unknown as Db, systemClock)
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:e', payload: { eventId: 'e', operation: 'create' } })
  claimBetween = true
  const coalesced = await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:e', payload: { eventId: 'e', operation: 'delete' } })
  t.equal(coalesced.coalesced, true)
  t.match(await jobs.findOne({ coalescingKey: 'write:c:e' }), { status: 'running', rerun: true, payload: { operation: 'delete' } },
    'the claimed job runs once more, with the newest payload')
})

test('one live job per coalescing key; a key is free again once its job is done', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  const first = await queue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })
  const second = await queue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })
  const other = await queue.enqueue({ type: 'pull', coalescingKey: 'pull:b' })
  t.equal(first.coalesced, false)
  t.equal(second.coalesced, true)
  t.same(second.job._id, first.job._id, 'the live job is returned')
  t.equal(other.coalesced, false)
  t.equal((await queue.list()).length, 2)

  const ran: string[] = []
  await workerFor(built, async (job) => { ran.push(job.coalescingKey) }).tick()
  t.same(ran.sort(), ['pull:a', 'pull:b'])
  t.same(await queue.list(), [], 'finished jobs leave no row')
  t.equal((await queue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })).coalesced, false)
})

test('a job enqueued again while it runs runs once more afterwards', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })
  let runs = 0
  const worker = workerFor(built, async () => {
    runs++
    if (runs === 1) t.equal((await queue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })).coalesced, true)
  })
  await worker.tick()
  t.match(await queue.list(), [{ status: 'queued', attempts: 0, rerun: false }])
  await worker.tick()
  t.equal(runs, 2)
  t.same(await queue.list(), [])
})

test('passive execution claims nothing', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t), { sync: { execution: 'passive' } })
  await built.app.syncJobQueue.enqueue({ type: 'import', coalescingKey: 'import:a' })
  let ran = 0
  t.equal(await built.app.syncJobWorker.tick(), 0, 'the service worker claims nothing')
  t.equal(await workerFor(built, async () => { ran++ }, { active: () => false }).tick(), 0)
  t.equal(ran, 0)
  t.match(await built.app.syncJobQueue.list(), [{ status: 'queued', attempts: 0, leaseOwner: null }])

  // A running worker claims a job queued in its process at once, but not in passive execution.
  // Polls an hour apart: only the announcement of the queued job could start a claim.
  built.app.syncJobWorker.start(3_600_000, 3_600_000)
  t.teardown(async () => { await built.app.syncJobWorker.stop() })
  await built.app.syncJobQueue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(built.app.syncJobWorker.running, 0, 'nothing started')
  t.match(await built.app.syncJobQueue.list(), [{ type: 'import', status: 'queued', attempts: 0 }, { type: 'pull', status: 'queued', attempts: 0 }], 'both jobs still wait, unclaimed')
})

test('stopping waits for the claim under way and the job it claimed, so the database never closes under them', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  let claimBegun = () => {}
  const begun = new Promise<void>((resolve) => { claimBegun = resolve })
  // A claim that takes a while, as one does against a busy database.
  class SlowQueue extends JobQueue {
    override async claim (workerId: string): Promise<JobRecord | null> {
      claimBegun()
      await new Promise((resolve) => setTimeout(resolve, 200))
      return await super.claim(workerId)
    }
  }
  const queue = new SlowQueue(built.app.syncDb.db, systemClock)
  let ran = 0
  const worker = new JobWorker({ queue, handlers: { import: async () => { ran++ }, pull: async () => { ran++ }, providerWrite: async () => { ran++ } }, log: built.app.log, maxConcurrency: 4, isActive: () => true, sweep: async () => ({ requeued: 0, exhausted: 0, removed: 0 }) })
  worker.start(3_600_000, 3_600_000)
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })
  await begun
  await worker.stop()
  t.equal(ran, 1, 'the job claimed while stopping ran before stop() returned')
  t.same(await queue.list(), [], 'and finished: nothing is left leased to a stopped worker')
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:b' })
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(ran, 1, 'a stopped worker claims nothing more')
})

test('a job queued to run a moment later is claimed when it becomes due, not at the next poll', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = new JobQueue(built.app.syncDb.db, systemClock)
  const ranAt: number[] = []
  const worker = new JobWorker({ queue, handlers: { import: async () => {}, pull: async () => { ranAt.push(Date.now()) }, providerWrite: async () => {} }, log: built.app.log, maxConcurrency: 4, isActive: () => true, sweep: async () => ({ requeued: 0, exhausted: 0, removed: 0 }) })
  // Polls an hour apart: only the announcement when the job becomes due could start a claim.
  worker.start(3_600_000, 3_600_000)
  t.teardown(async () => { await worker.stop() })
  await new Promise((resolve) => setTimeout(resolve, 100))
  const runAt = Date.now() + 400
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:soon', runAt: new Date(runAt) })
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:later', runAt: new Date(Date.now() + 60_000) })
  for (let i = 0; i < 300 && ranAt.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(ranAt.length, 1, 'the job due in 400 ms ran, with no poll in between')
  t.ok((ranAt[0] ?? 0) >= runAt, 'and not before its time')
  // The job's record goes once the worker has recorded its outcome, a moment after it ran.
  for (let i = 0; i < 300 && (await queue.list()).some((job) => job.coalescingKey === 'pull:soon'); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.match(await queue.list(), [{ coalescingKey: 'pull:later', status: 'queued' }], 'a job due in a minute waits for a poll')
})

test('a crashed worker\'s job is picked up again when its lease expires', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })
  const taken = await queue.claim('worker-that-dies')
  t.match(taken, { status: 'running', attempts: 1, leaseOwner: 'worker-that-dies' })
  t.equal(await queue.claim('worker-b'), null, 'leased jobs are not handed out twice')

  built.clock.advance(DEFAULT_LEASE_MS + 1)
  const retaken = await queue.claim('worker-b')
  t.match(retaken, { status: 'running', attempts: 2, leaseOwner: 'worker-b' })
  t.equal(await queue.complete(taken as JobRecord, 'worker-that-dies'), false, 'the old owner cannot finish it any more')
  t.equal((await queue.list()).length, 1)
  t.equal(await queue.complete(retaken as JobRecord, 'worker-b'), 'done')
  t.same(await queue.list(), [])
})

test('at most maxConcurrency jobs run at once', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  for (const key of ['a', 'b', 'c', 'd', 'e']) await built.app.syncJobQueue.enqueue({ type: 'pull', coalescingKey: key })
  let active = 0
  let peak = 0
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => { release = resolve })
  const worker = workerFor(built, async () => {
    active++
    peak = Math.max(peak, active)
    await gate
    active--
  }, { maxConcurrency: 2 })
  const first = worker.tick()
  await new Promise((resolve) => setImmediate(resolve))
  while (worker.running < 2) await new Promise((resolve) => setImmediate(resolve))
  release()
  t.equal(await first, 2, 'one tick fills the two slots')
  t.equal(await worker.tick(), 2)
  t.equal(await worker.tick(), 1)
  t.equal(peak, 2)
})

test('one user\'s jobs hold at most half the slots: a user whose servers answer slowly leaves room for the others', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const slow = newUserId()
  const other = newUserId()
  // The slow user's jobs were queued first, so by order alone they would take every slot.
  for (const key of ['s1', 's2', 's3', 's4', 's5']) await built.app.syncJobQueue.enqueue({ type: 'pull', coalescingKey: key, userId: slow })
  await built.app.syncJobQueue.enqueue({ type: 'pull', coalescingKey: 'o1', userId: other })
  await built.app.syncJobQueue.enqueue({ type: 'pull', coalescingKey: 'no-user' })
  const started: string[] = []
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => { release = resolve })
  const worker = workerFor(built, async (job) => {
    started.push(job.coalescingKey)
    if (job.userId === slow) await gate
  }, { maxConcurrency: 4 })
  const first = worker.tick()
  while (started.length < 4) await new Promise((resolve) => setImmediate(resolve))
  t.same(started.filter((key) => key.startsWith('s')), ['s1', 's2'], 'the slow user holds two of the four slots')
  t.ok(started.includes('o1'), 'another user\'s job runs meanwhile')
  t.ok(started.includes('no-user'), 'and a job of no user')
  release()
  await first
  let ran = await worker.tick()
  while (ran > 0) ran = await worker.tick()
  t.same(started.filter((key) => key.startsWith('s')).sort(), ['s1', 's2', 's3', 's4', 's5'], 'the slow user\'s jobs all run in the end')
})

test('failed attempts climb the retry ladder, then the job is failed', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })
  const worker = workerFor(built, async () => { throw new Error('provider timed out') })
  for (let attempt = 1; attempt < ATTEMPT_BUDGET; attempt++) {
    t.equal(await worker.tick(), 1)
    const delay = RETRY_LADDER_MS[attempt - 1] ?? 0
    t.match(await queue.list(), [{ status: 'queued', attempts: attempt, lastError: 'Error: provider timed out', runAt: new Date(built.clock.now().getTime() + delay) }], `attempt ${attempt}`)
    built.clock.advance(delay - 1)
    t.equal(await worker.tick(), 0, 'not before its time')
    built.clock.advance(1)
  }
  t.equal(await worker.tick(), 1)
  t.match(await queue.list(), [{ status: 'failed', attempts: ATTEMPT_BUDGET, failedAt: built.clock.now(), requeueCount: 0 }])
  t.equal(await worker.tick(), 0, 'a failed job is not claimed')
})

const LONGEST_DELAY_MS = Math.max(...RETRY_LADDER_MS)

test('the self-heal sweep: requeue after the cooldown, exhaust after three requeues, remove when the connection has lastReadFailureAt', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  const connections = built.app.syncConnections
  const connection = await connections.create(newUserId(), 'google')
  const connectionId = connection._id.toHexString()
  await queue.enqueue({ type: 'pull', coalescingKey: `pull:${connectionId}`, connectionId })
  const worker = workerFor(built, async () => { throw new Error('still failing') })

  async function failWholeBudget (): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPT_BUDGET; attempt++) {
      await worker.tick()
      built.clock.advance(LONGEST_DELAY_MS * 2)
    }
  }

  for (let requeue = 1; requeue <= MAX_REQUEUES; requeue++) {
    await failWholeBudget()
    const [failed] = await queue.list()
    t.equal(failed?.status, 'failed')
    built.clock.advance(-LONGEST_DELAY_MS * 2)
    t.same(await built.app.syncJobWorker.sweep(), { requeued: 0, exhausted: 0, removed: 0 }, 'nothing while cooling down')
    built.clock.advance(FAILED_JOB_COOLDOWN_MS)
    t.same(await built.app.syncJobWorker.sweep(), { requeued: 1, exhausted: 0, removed: 0 })
    t.match(await queue.list(), [{ status: 'queued', attempts: 0, requeueCount: requeue }], 'fresh attempt budget')
  }
  t.equal(built.logs.filter((line) => line.msg === 'failed job requeued by the self-heal sweep with a fresh attempt budget').length, MAX_REQUEUES)

  await failWholeBudget()
  t.same(await built.app.syncJobWorker.sweep(), { requeued: 0, exhausted: 1, removed: 0 })
  t.match(await queue.list(), [{ status: 'exhausted', requeueCount: MAX_REQUEUES }])
  t.match(built.logs.find((line) => line.msg === 'job exhausted after the maximum requeues; it needs an operator'), { level: 50, coalescingKey: `pull:${connectionId}` })
  t.equal((await queue.enqueue({ type: 'pull', coalescingKey: `pull:${connectionId}`, connectionId })).coalesced, true, 'the exhausted job blocks its key')

  t.same(await built.app.syncJobWorker.sweep(), { requeued: 0, exhausted: 0, removed: 0 }, 'kept for an operator while the connection has no read failure')
  await built.app.syncDb.db.collection('connections').updateOne({ _id: connection._id }, { $set: { lastReadFailureAt: built.clock.now() } })
  t.same(await built.app.syncJobWorker.sweep(), { requeued: 0, exhausted: 0, removed: 1 })
  // What the operator's figures say of it (docs/operations.md): each requeue, the exhaustion, the removal.
  const swept = parseMetrics(await built.app.metrics.metrics())
  t.equal(metricValue(swept, 'sync_sweep_jobs_total', { action: 'requeued' }), MAX_REQUEUES)
  t.equal(metricValue(swept, 'sync_sweep_jobs_total', { action: 'exhausted' }), 1)
  t.equal(metricValue(swept, 'sync_sweep_jobs_total', { action: 'removed' }), 1)
  t.same(await queue.list(), [])
  t.ok(built.logs.some((line) => line.msg === 'exhausted job removed because its connection has lastReadFailureAt; its coalescing key is free again'))
  t.equal((await queue.enqueue({ type: 'pull', coalescingKey: `pull:${connectionId}`, connectionId })).coalesced, false, 'the key no longer blocks')
})

test('coalescing keeps the newest payload: a write queued as create and then delete is written as delete', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:e1', payload: { eventId: 'e1', operation: 'create' } })
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:e1', payload: { eventId: 'e1', operation: 'delete' } })
  t.match(await queue.list(), [{ payload: { eventId: 'e1', operation: 'delete' } }])
})

test('a worker that is alive renews its lease; a renewal after a takeover is refused', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  await queue.enqueue({ type: 'import', coalescingKey: 'import:a' })
  const job = await queue.claim('worker-a') as JobRecord
  built.clock.advance(DEFAULT_LEASE_MS - 1)
  t.equal(await queue.renewLease(job, 'worker-a'), true)
  built.clock.advance(2)
  t.equal(await queue.claim('worker-b'), null, 'the renewed lease still holds')
  built.clock.advance(DEFAULT_LEASE_MS)
  t.ok(await queue.claim('worker-b'))
  t.equal(await queue.renewLease(job, 'worker-a'), false)
})

test('a worker whose queue fails to record an outcome logs it and keeps running', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:a' })
  class BrokenQueue extends JobQueue {
    override async complete (): Promise<'done' | 'again' | false> { throw new Error('database went away') }
  }
  const broken = new BrokenQueue(built.app.syncDb.db, built.clock)
  const worker = new JobWorker({
    queue: broken,
    handlers: { import: async () => {}, pull: async () => {}, providerWrite: async () => {} },
    log: built.app.log,
    maxConcurrency: 1,
    isActive: () => true,
    sweep: async () => await built.app.syncJobWorker.sweep()
  })
  t.equal(await worker.tick(), 1, 'the tick resolves')
  t.match(built.logs.find((line) => line.msg === 'job outcome could not be recorded'), { level: 50, type: 'pull' })
  t.match(await queue.list(), [{ status: 'running' }], 'the lease will run out and the job runs again')
})

test('a new request for a job waiting for its retry changes what it writes, not when: no retry is spent on it', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:e', payload: { title: 'v1' } })
  const worker = workerFor(built, async () => { throw new Error('backend refused') })
  t.equal(await worker.tick(), 1)
  const [waiting] = await queue.list()
  const retryAt = new Date(built.clock.now().getTime() + (RETRY_LADDER_MS[0] ?? 0))
  t.match(waiting, { attempts: 1, runAt: retryAt })

  for (const title of ['v2', 'v3', 'v4']) {
    built.clock.advance(1_000)
    t.equal((await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:e', payload: { title } })).coalesced, true)
    t.equal(await worker.tick(), 0, `the report of ${title} does not make it due`)
  }
  t.match(await queue.list(), [{ attempts: 1, runAt: retryAt, payload: { title: 'v4' } }], 'the newest content, the same time, the same attempt')

  // A job not tried yet still starts earlier when a request asks for earlier.
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:later', runAt: new Date(built.clock.now().getTime() + 60_000) })
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:later' })
  t.match(await queue.list({ coalescingKey: 'pull:later' }), [{ runAt: built.clock.now() }])
})

test('waiting for the provider: the attempt is given back, the other jobs of the connection wait behind it, a release makes them due in the order they were queued', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  const first = (await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:a', connectionId: 'c' })).job
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:b', connectionId: 'c' })
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:other:a', connectionId: 'other' })
  const now = built.clock.now().getTime()

  const claimed = await queue.claim('w')
  t.same(claimed?._id, first._id, 'the first queued goes first')
  // A report while it runs: the next try writes it, no extra run is kept for it.
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:a', connectionId: 'c', payload: { title: 'during the try' } })
  t.equal(await queue.waitForProvider(claimed as JobRecord, 'w', 'ProviderUnavailableError: 503', new Date(now + 10_000)), true)
  t.equal(await queue.holdConnection('c', first._id, new Date(now + 70_000)), 1, 'only the other job of the same connection')
  t.match(await queue.list(), [
    { coalescingKey: 'write:c:a', status: 'queued', attempts: 0, waitingForProvider: true, rerun: false, runAt: new Date(now + 10_000), lastError: 'ProviderUnavailableError: 503', payload: { title: 'during the try' } },
    { coalescingKey: 'write:c:b', status: 'queued', attempts: 0, waitingForProvider: true, runAt: new Date(now + 70_000) },
    { coalescingKey: 'write:other:a', status: 'queued', runAt: new Date(now) }
  ])
  t.same(await queue.pendingWrites(['c', 'other', 'none']), new Map([['c', 2], ['other', 1]]))
  t.same(await queue.pendingWrites([]), new Map())

  // A new report during the wait does not make it due.
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:a', connectionId: 'c', payload: { title: 'newer' } })
  t.match(await queue.get(first._id), { runAt: new Date(now + 10_000), payload: { title: 'newer' } })

  built.clock.advance(5_000)
  t.equal(await queue.release('c'), 2)
  const order: string[] = []
  for (let job = await queue.claim('w'); job !== null; job = await queue.claim('w')) {
    order.push(job.coalescingKey)
    t.equal(job.attempts, 1, `${job.coalescingKey}: its first counted attempt`)
    t.notOk(job.waitingForProvider, `${job.coalescingKey}: no longer waiting`)
    t.equal(await queue.complete(job, 'w'), 'done')
  }
  t.same(order, ['write:other:a', 'write:c:a', 'write:c:b'], 'due by time, then in the order first queued')
})

test('a connection\'s provider writes run one at a time, in the order queued, whichever worker claims them', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  const other = new JobQueue(built.app.syncDb.db, built.clock)
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:1', connectionId: 'c' })
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:2', connectionId: 'c' })
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:c', connectionId: 'c' })
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:d:1', connectionId: 'd' })

  const first = await queue.claim('worker-a')
  t.match(first, { coalescingKey: 'write:c:1' })
  const meanwhile = [await other.claim('worker-b'), await other.claim('worker-b'), await other.claim('worker-b')]
  t.same(meanwhile.map((job) => job?.coalescingKey ?? null), ['pull:c', 'write:d:1', null],
    'another worker skips the second write of the connection, and takes the rest')
  t.match((await queue.list({ connectionId: 'c' })).find((job) => job.coalescingKey === 'write:c:2'),
    { status: 'queued', attempts: 0, leaseOwner: null, leaseUntil: null }, 'the write that must wait is queued as it was, its attempt given back')

  t.equal(await queue.complete(first as JobRecord, 'worker-a'), 'done')
  t.match(await other.claim('worker-b'), { coalescingKey: 'write:c:2', attempts: 1 }, 'the next write of the connection runs once the first is done')
})

test('a write whose worker died holds its connection only until its lease runs out', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:1', connectionId: 'c' })
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:2', connectionId: 'c' })
  t.match(await queue.claim('worker-that-dies'), { coalescingKey: 'write:c:1' })
  t.equal(await queue.claim('worker-b'), null, 'the second write waits for the first')
  built.clock.advance(DEFAULT_LEASE_MS + 1)
  t.match(await queue.claim('worker-b'), { coalescingKey: 'write:c:1', attempts: 2 }, 'the expired write is taken over first')
  t.equal(await queue.claim('worker-b'), null, 'and the second still waits for it')
})

test('a write does not overtake an older one of its connection that waits for the provider', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  const now = built.clock.now().getTime()
  const older = (await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:older', connectionId: 'c' })).job
  const claimedOlder = await queue.claim('w')
  t.equal(await queue.waitForProvider(claimedOlder as JobRecord, 'w', 'ProviderUnavailableError: 503', new Date(now + 60_000)), true)
  // Made while the older one waits, and due at once.
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:newer', connectionId: 'c' })
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:d', connectionId: 'd' })

  t.match(await queue.claim('w'), { coalescingKey: 'pull:d' }, 'the newer write waits behind the older one; other jobs go')
  t.equal(await queue.claim('w'), null)
  t.match((await queue.list({ coalescingKey: 'write:c:newer' }))[0], { status: 'queued', attempts: 0, leaseOwner: null })

  built.clock.advance(60_000)
  const first = await queue.claim('w')
  t.same(first?._id, older._id, 'the older write tries the provider first')
  t.equal(await queue.claim('w'), null, 'alone')
  t.equal(await queue.complete(first as JobRecord, 'w'), 'done')
  t.match(await queue.claim('w'), { coalescingKey: 'write:c:newer', attempts: 1 }, 'then the newer one')
})

test('an older write in its own retry ladder holds no newer write up', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:refused', connectionId: 'c' })
  const refused = await queue.claim('w')
  t.equal(await queue.fail(refused as JobRecord, 'w', 'ProviderRejectedError: 400'), true)
  await queue.enqueue({ type: 'providerWrite', coalescingKey: 'write:c:next', connectionId: 'c' })
  t.match(await queue.claim('w'), { coalescingKey: 'write:c:next' }, 'the next write goes while the refused one waits for its retry')
})

test('a worker runs a connection\'s writes one after another, other jobs beside them', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  for (const key of ['write:c:1', 'write:c:2', 'write:c:3']) await built.app.syncJobQueue.enqueue({ type: 'providerWrite', coalescingKey: key, connectionId: 'c' })
  await built.app.syncJobQueue.enqueue({ type: 'pull', coalescingKey: 'pull:d', connectionId: 'd' })
  const events: string[] = []
  let writing = 0
  let peakWriting = 0
  let pullStarted = () => {}
  const pullRunning = new Promise<void>((resolve) => { pullStarted = resolve })
  const worker = workerFor(built, async (job) => {
    events.push(`start ${job.coalescingKey}`)
    if (job.type === 'pull') pullStarted()
    else {
      peakWriting = Math.max(peakWriting, ++writing)
      // The first write is still under way when the pull starts, or this never settles.
      await pullRunning
      await new Promise((resolve) => setTimeout(resolve, 5))
      writing--
    }
    events.push(`end ${job.coalescingKey}`)
  }, { maxConcurrency: 4 })
  let ran = await worker.tick()
  while (ran > 0) ran = await worker.tick()
  t.equal(peakWriting, 1, 'never two writes of the connection at once')
  t.same(events.filter((entry) => entry.startsWith('start write')), ['start write:c:1', 'start write:c:2', 'start write:c:3'], 'in the order queued')
  t.ok(events.indexOf('start pull:d') < events.indexOf('end write:c:1'), 'the other connection\'s pull ran beside the first write')
  t.equal((await built.app.syncJobQueue.list()).length, 0, 'all four done')
})

test('a job\'s database calls, its bookkeeping and the sweep have the background deadline; a request\'s calls have the request deadline', async (t) => {
  const built = await buildSyncApp(t, await startDatabase(t))
  const queue = built.app.syncJobQueue
  const seen: Record<string, number[]> = { handler: [], complete: [], sweep: [], request: [] }
  const complete = queue.complete.bind(queue)
  queue.complete = async (job, owner) => {
    seen['complete']?.push(databaseCallDeadlineMs())
    return await complete(job, owner)
  }
  const worker = new JobWorker({
    queue,
    handlers: { import: async () => {}, pull: async () => { seen['handler']?.push(databaseCallDeadlineMs()) }, providerWrite: async () => {} },
    log: built.app.log,
    maxConcurrency: 1,
    isActive: () => true,
    sweep: async () => {
      seen['sweep']?.push(databaseCallDeadlineMs())
      return { requeued: 0, exhausted: 0, removed: 0 }
    }
  })
  await queue.enqueue({ type: 'pull', coalescingKey: 'pull:deadlines' })
  t.equal(await worker.tick(), 1)
  await worker.sweep()
  const feed = built.app.syncFeed
  const page = feed.page.bind(feed)
  feed.page = async (...args) => {
    seen['request']?.push(databaseCallDeadlineMs())
    return await page(...args)
  }
  const userId = newUserId()
  t.equal((await built.signed({ method: 'GET', url: `/internal/changes?userId=${userId}`, userId })).statusCode, 200)
  t.same(seen, {
    handler: [BACKGROUND_DATABASE_CALL_DEADLINE_MS],
    complete: [BACKGROUND_DATABASE_CALL_DEADLINE_MS],
    sweep: [BACKGROUND_DATABASE_CALL_DEADLINE_MS],
    // The process's request deadline: production's, or the longer one test/helper.ts sets for the
    // files that share this process.
    request: [requestDatabaseDeadlineMs()]
  })
  t.ok(BACKGROUND_DATABASE_CALL_DEADLINE_MS > DATABASE_CALL_DEADLINE_MS && BACKGROUND_DATABASE_CALL_DEADLINE_MS < DEFAULT_LEASE_MS / 3,
    'longer than a request\'s, shorter than a lease renewal period')
})
