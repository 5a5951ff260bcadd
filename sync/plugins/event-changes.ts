import fp from 'fastify-plugin'
import { EventChanges } from '../services/event-changes.js'
import { EventChangeReportStore } from '../stores/event-change-reports.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncEventChanges: EventChanges
  }
}

export default fp(async function syncEventChanges (fastify) {
  const reports = new EventChangeReportStore(fastify.syncDb.db)
  await reports.ensureIndexes()
  fastify.decorate('syncEventChanges', new EventChanges({
    reports,
    connections: fastify.syncConnections,
    calendars: fastify.syncCalendars,
    feed: fastify.syncFeed,
    engine: fastify.syncEngine,
    clock: fastify.syncClock,
    modes: fastify.syncConfig.sync,
    announceDue: () => { fastify.syncJobQueue.announceDue() },
    transaction: fastify.syncDb.withTransaction
  }))
}, { name: 'sync-event-changes', dependencies: ['sync-config', 'sync-database', 'sync-change-feed', 'sync-connections', 'sync-calendars', 'sync-engine', 'sync-job-queue'] })
