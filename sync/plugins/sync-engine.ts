import fp from 'fastify-plugin'
import { SyncEngine } from '../services/sync-engine.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncEngine: SyncEngine
  }
}

export default fp<{ importBatchEvents?: number | undefined }>(async function syncEngine (fastify, options) {
  fastify.decorate('syncEngine', new SyncEngine({
    connections: fastify.syncConnections,
    calendars: fastify.syncCalendars,
    credentials: fastify.syncCredentials,
    feed: fastify.syncFeed,
    queue: fastify.syncJobQueue,
    watches: fastify.syncWatches,
    activity: fastify.syncActivity,
    handOvers: fastify.syncCredentialHandOvers,
    held: fastify.syncHeldWrites,
    written: fastify.syncWrittenVersions,
    writeIssues: fastify.syncWriteIssues,
    providers: fastify.syncProviders,
    backend: fastify.syncBackend,
    settings: fastify.syncConfig.sync,
    clock: fastify.syncClock,
    log: fastify.log.child({ component: 'sync' }),
    random: fastify.syncJobQueue.random,
    ...(options.importBatchEvents === undefined ? {} : { importBatchEvents: options.importBatchEvents })
  }))
}, {
  name: 'sync-engine',
  dependencies: [
    'sync-config', 'sync-providers', 'sync-backend', 'sync-change-feed', 'sync-credentials', 'sync-connections', 'sync-calendars',
    'sync-watches', 'sync-activity', 'sync-job-queue', 'sync-credential-hand-overs', 'sync-held-writes', 'sync-written-versions', 'sync-write-issues'
  ]
})
