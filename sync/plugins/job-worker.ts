import fp from 'fastify-plugin'
import { JobWorker, type JobWorkerOptions } from '../services/job-worker.js'
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
  const runs = new Counter({ name: 'sync_job_runs_total', help: 'Job runs, by type and outcome (done, rerun, retry, exhausted, waiting, lease_lost, unrecorded)', labelNames: ['type', 'outcome'], registers: [registry] })
  const duration = new Histogram({ name: 'sync_job_duration_seconds', help: 'Time a job run took, by type (an import\'s is the import\'s)', labelNames: ['type'], buckets: WORK_BUCKETS, registers: [registry] })
  return (job, outcome, seconds) => {
    runs.inc({ type: job.type, outcome })
    duration.observe({ type: job.type }, seconds)
  }
}

export default fp<WorkerOptions>(async function syncJobWorker (fastify, options) {
  const settings = fastify.syncConfig.sync
  const queue = fastify.syncJobQueue
  const connections = fastify.syncConnections
  const log = fastify.log.child({ component: 'sync' })
  const worker = new JobWorker({
    queue,
    handlers: fastify.syncEngine.handlers(),
    log,
    maxConcurrency: settings.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
    isActive: () => settings.execution === 'active',
    sweep: async () => await queue.sweep(async (connectionId) => (await connections.get(connectionId))?.lastReadFailureAt ?? null, log),
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
