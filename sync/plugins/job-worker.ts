import fp from 'fastify-plugin'
import { JobWorker, type JobWorkerOptions } from '../services/job-worker.js'
import type { SweepReport } from '../stores/job-queue.js'
import { Counter, Histogram, WORK_BUCKETS, type Registry } from '../../lib/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncJobWorker: JobWorker
  }
}

export interface WorkerOptions {
  /** Run the job loop while the server runs (default true); tests drive `syncJobWorker.tick()`. */
  autoStart?: boolean
  pollIntervalMs?: number
  sweepIntervalMs?: number
  /** How long a claimed job stays leased to its worker (given to the job queue). */
  leaseMs?: number
}

export const DEFAULT_MAX_CONCURRENCY = 4
/** How often the worker looks for jobs queued by other processes or due later; one queued here is claimed at once. */
export const DEFAULT_JOB_POLL_INTERVAL_MS = 1000

/** Each run counted by type and outcome (retries and exhausted jobs among them), and timed. */
function jobRunMetrics (registry: Registry): NonNullable<JobWorkerOptions['onRunEnded']> {
  const runs = new Counter({ name: 'sync_job_runs_total', help: 'Job runs, by type and outcome (done, rerun, retry, failed: its attempts spent, waiting, lease_lost, unrecorded)', labelNames: ['type', 'outcome'], registers: [registry] })
  const duration = new Histogram({ name: 'sync_job_duration_seconds', help: 'Time a job run took, by type (an import\'s is the import\'s)', labelNames: ['type'], buckets: WORK_BUCKETS, registers: [registry] })
  return (job, outcome, seconds) => {
    runs.inc({ type: job.type, outcome })
    duration.observe({ type: job.type }, seconds)
  }
}

/** The self-heal sweep's work counted: failed jobs requeued with a fresh budget, jobs exhausted for an operator, jobs removed. */
function sweepMetrics (registry: Registry): (report: SweepReport) => SweepReport {
  const swept = new Counter({ name: 'sync_sweep_jobs_total', help: 'Jobs the self-heal sweep requeued (a fresh attempt budget), marked exhausted (every requeue spent: an operator\'s) or removed', labelNames: ['action'], registers: [registry] })
  for (const action of ['requeued', 'exhausted', 'removed']) swept.inc({ action }, 0)
  return (report) => {
    swept.inc({ action: 'requeued' }, report.requeued)
    swept.inc({ action: 'exhausted' }, report.exhausted)
    swept.inc({ action: 'removed' }, report.removed)
    return report
  }
}

export default fp<WorkerOptions>(async function syncJobWorker (fastify, options) {
  const settings = fastify.syncConfig.sync
  const queue = fastify.syncJobQueue
  const connections = fastify.syncConnections
  const log = fastify.log.child({ component: 'sync' })
  const countSweep = sweepMetrics(fastify.metrics)
  const worker = new JobWorker({
    queue,
    handlers: fastify.syncEngine.handlers(),
    log,
    maxConcurrency: settings.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
    isActive: () => settings.execution === 'active',
    sweep: async () => countSweep(await queue.sweep(async (connectionId) => (await connections.get(connectionId))?.lastReadFailureAt ?? null, log)),
    onRunEnded: jobRunMetrics(fastify.metrics)
  })
  fastify.decorate('syncJobWorker', worker)

  if (options.autoStart !== false && settings.execution === 'active') {
    fastify.addHook('onReady', async () => {
      worker.start(options.pollIntervalMs ?? DEFAULT_JOB_POLL_INTERVAL_MS, options.sweepIntervalMs ?? 60_000)
    })
  }
  fastify.addHook('onClose', async () => { await worker.stop() })
}, { name: 'sync-job-worker', dependencies: ['metrics', 'sync-config', 'sync-job-queue', 'sync-connections', 'sync-engine'] })
