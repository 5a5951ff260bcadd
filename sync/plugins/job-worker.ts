import fp from 'fastify-plugin'
import { JobWorker } from '../services/job-worker.js'

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
    sweep: async () => await queue.sweep(async (connectionId) => (await connections.get(connectionId))?.lastReadFailureAt ?? null, log)
  })
  fastify.decorate('syncJobWorker', worker)

  if (options.autoStart !== false && settings.execution === 'active') {
    fastify.addHook('onReady', async () => {
      worker.start(options.pollIntervalMs ?? DEFAULT_JOB_POLL_INTERVAL_MS, options.sweepIntervalMs ?? 60_000)
    })
  }
  fastify.addHook('onClose', async () => { await worker.stop() })
}, { name: 'sync-job-worker', dependencies: ['sync-config', 'sync-job-queue', 'sync-connections', 'sync-engine'] })
