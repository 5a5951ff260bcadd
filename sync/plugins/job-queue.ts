import fp from 'fastify-plugin'
import { JobQueue } from '../stores/job-queue.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncJobQueue: JobQueue
  }
}

export interface SyncJobQueueOptions {
  /** Source of retry jitter, in [0, 1). */
  random: () => number
  leaseMs?: number | undefined
}

export default fp<SyncJobQueueOptions>(async function syncJobQueue (fastify, options) {
  const queue = new JobQueue(fastify.syncDb.db, fastify.syncClock, {
    random: options.random,
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs })
  })
  await queue.ensureIndexes()
  fastify.decorate('syncJobQueue', queue)
}, { name: 'sync-job-queue', dependencies: ['sync-config', 'sync-database'] })
