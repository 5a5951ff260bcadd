import fp from 'fastify-plugin'
import { CalendarStore } from '../lib/calendars.js'
import { ChangeFeed } from '../lib/change-feed.js'
import { ConnectionStore } from '../lib/connections/store.js'
import { CredentialStore } from '../lib/credentials.js'
import { EventChangeReports } from '../lib/event-changes.js'
import { JobQueue } from '../lib/jobs/queue.js'
import type { SweepReport } from '../lib/jobs/queue.js'
import { JobWorker } from '../lib/jobs/worker.js'
import type { ProviderRegistry } from '../lib/providers/port.js'
import { SyncEngine } from '../lib/sync-engine.js'
import { WatchStore } from '../lib/watches.js'

export interface SyncServices {
  feed: ChangeFeed
  connections: ConnectionStore
  credentials: CredentialStore
  calendars: CalendarStore
  watches: WatchStore
  queue: JobQueue
  engine: SyncEngine
  eventChanges: EventChangeReports
  worker: JobWorker
  providers: ProviderRegistry
  /** One pass of the failed-job self-heal sweep. */
  sweep: () => Promise<SweepReport>
}

declare module 'fastify' {
  interface FastifyInstance {
    sync: SyncServices
  }
}

export interface WorkerOptions {
  /** Run the job loop while the server runs (default true); tests drive `sync.worker.tick()`. */
  autoStart?: boolean
  pollIntervalMs?: number
  sweepIntervalMs?: number
  leaseMs?: number
}

export interface SyncServicesOptions {
  providers: ProviderRegistry
  worker: WorkerOptions
  random: () => number
}

export const DEFAULT_MAX_CONCURRENCY = 4

export default fp<SyncServicesOptions>(async function syncServices (fastify, options) {
  const { db } = fastify.syncDb
  const config = fastify.syncConfig
  const clock = fastify.syncClock
  const log = fastify.log.child({ component: 'sync' })

  const feed = new ChangeFeed(db, clock)
  const credentials = new CredentialStore(db, clock, config.sync.credentialEncryptionKey)
  const connections = new ConnectionStore(db, feed, credentials, clock)
  const calendars = new CalendarStore(db)
  const watches = new WatchStore(db)
  const queue = new JobQueue(db, clock, { random: options.random, ...(options.worker.leaseMs === undefined ? {} : { leaseMs: options.worker.leaseMs }) })
  const engine = new SyncEngine({ connections, calendars, credentials, feed, queue, watches, providers: options.providers, clock, log })
  const eventChanges = new EventChangeReports(db, { connections, feed, engine, clock })
  const sweep = async () => await queue.sweep(async (connectionId) => (await connections.get(connectionId))?.lastReadFailureAt ?? null, log)
  const worker = new JobWorker({
    queue,
    handlers: engine.handlers(),
    log,
    maxConcurrency: config.sync.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
    isActive: () => config.sync.execution === 'active',
    sweep
  })

  for (const store of [feed, connections, calendars, watches, queue, eventChanges]) await store.ensureIndexes()

  fastify.decorate('sync', { feed, connections, credentials, calendars, watches, queue, engine, eventChanges, worker, providers: options.providers, sweep })

  if (options.worker.autoStart !== false && config.sync.execution === 'active') {
    fastify.addHook('onReady', async () => {
      worker.start(options.worker.pollIntervalMs ?? 1000, options.worker.sweepIntervalMs ?? 60_000)
    })
  }
  fastify.addHook('onClose', async () => { await worker.stop() })
}, { name: 'sync-services', dependencies: ['sync-config', 'sync-database'] })
