import fp from 'fastify-plugin'
import { ageSeconds, observedCounts, observedGauge, sharedRead } from '../../lib/metrics.js'
import { ConnectionStateSchema, ProviderSchema } from '../../schemas/sync/common.js'

const JOB_TYPES = ['import', 'pull', 'providerWrite'] as const
const JOB_STATUSES = ['queued', 'running', 'failed', 'exhausted'] as const
const PROVIDERS = ProviderSchema.anyOf.map((literal) => literal.const)
const CONNECTION_STATES = ConnectionStateSchema.anyOf.map((literal) => literal.const)
/** A watch or subscription that ends within a day and has not been renewed is one maintenance missed. */
const EXPIRING_WITHIN_MS = 24 * 60 * 60_000

// What the Sync database holds, read when Prometheus scrapes: the job queue (by type and status,
// how many are due and how long the oldest due one has waited), connections by provider and
// state, provider notification channels about to expire, and writes held for a provider.
export default fp(async function syncStateMetrics (fastify) {
  const registry = fastify.metrics
  const clock = fastify.syncClock
  const queue = fastify.syncJobQueue
  observedCounts(registry, 'sync_jobs', 'Jobs in the queue, by type and status', { type: JOB_TYPES, status: JOB_STATUSES },
    async () => (await queue.countsByTypeAndStatus()).map(({ type, status, count }) => ({ labels: { type, status }, count })))
  const backlog = sharedRead(async () => { const now = clock.now(); return { now, ...await queue.backlog(now) } })
  observedGauge(registry, 'sync_job_queue_due', 'Queued jobs whose time has come and that no worker has taken yet', async () => (await backlog()).due)
  observedGauge(registry, 'sync_job_queue_oldest_due_age_seconds', 'How long the oldest due job has waited for a worker (0 when none waits)',
    async () => { const { now, oldestDueAt } = await backlog(); return ageSeconds(oldestDueAt, now.getTime()) })
  observedCounts(registry, 'sync_connections', 'Provider connections, by provider and state', { provider: PROVIDERS, state: CONNECTION_STATES },
    async () => (await fastify.syncConnections.countsByProviderAndState()).map(({ provider, state, count }) => ({ labels: { provider, state }, count })))
  observedGauge(registry, 'sync_watches_expiring_soon', 'Google watch channels and Graph subscriptions that expire within 24 hours',
    async () => await fastify.syncWatches.countExpiringBefore(new Date(clock.now().getTime() + EXPIRING_WITHIN_MS)))
  observedGauge(registry, 'sync_held_writes', 'Writes held for connections whose provider cannot take them now', async () => await fastify.syncHeldWrites.count())
}, { name: 'sync-state-metrics', dependencies: ['metrics', 'sync-config', 'sync-job-queue', 'sync-connections', 'sync-watches', 'sync-held-writes'] })
