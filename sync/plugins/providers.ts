import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import fp from 'fastify-plugin'
import { Counter, Histogram, WORK_BUCKETS, type Registry } from '../../lib/metrics.js'
import { PROVIDER_REQUEST_CHANNEL, type ProviderRequestReport } from '../providers/buffered-fetch.js'
import { isRealValue } from '../../lib/config-rules.js'
import type { SyncConfig } from '../../schemas/config.js'
import { SyncStartupError } from '../lib/isolation.js'
import type { ProviderRegistry } from '../lib/providers/port.js'
import { GoogleCalendarAdapter } from '../providers/google/adapter.js'
import type { GoogleAdapterOptions } from '../providers/google/adapter.js'
import { CalDavAdapter } from '../providers/caldav/adapter.js'
import type { CalDavAdapterOptions } from '../providers/caldav/adapter.js'
import { MicrosoftCalendarAdapter } from '../providers/microsoft/adapter.js'
import type { MicrosoftAdapterOptions } from '../providers/microsoft/adapter.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncProviders: ProviderRegistry
  }
}

export interface SyncProvidersOptions {
  /** Adapters by provider, over those the configuration sets up; a provider without one cannot be connected. */
  providers?: ProviderRegistry
  /** Settings of the Google adapter that the configuration does not hold (page size, deadlines). */
  google?: Pick<GoogleAdapterOptions, 'pageSize' | 'timeoutMs'>
  /** Settings of the CalDAV adapter (page size, deadlines, poll interval). */
  caldav?: Pick<CalDavAdapterOptions, 'pageSize' | 'timeoutMs' | 'pollIntervalMs' | 'fetch'>
  /** Settings of the Microsoft adapter that the configuration does not hold (page size, deadlines, clock). */
  microsoft?: Pick<MicrosoftAdapterOptions, 'pageSize' | 'timeoutMs' | 'now'>
}

/** The adapters the configuration sets up: Google when extprovider holds real credentials, Microsoft when extprovider2 does. */
export function configuredProviders (config: SyncConfig, google: SyncProvidersOptions['google'] = {}, microsoft: SyncProvidersOptions['microsoft'] = {}): ProviderRegistry {
  const registry: ProviderRegistry = {}
  const { clientId, clientSecret, endpointBase } = config.extprovider ?? {}
  if (isRealValue(clientId) && isRealValue(clientSecret)) {
    registry.google = new GoogleCalendarAdapter({ clientId, clientSecret, endpointBase, ...google })
  }
  const provider2 = config.extprovider2
  if (isRealValue(provider2?.clientId) && isRealValue(provider2?.clientSecret)) {
    registry.microsoft = new MicrosoftCalendarAdapter({ clientId: provider2.clientId, clientSecret: provider2.clientSecret, endpointBase: provider2.endpointBase, ...microsoft })
  }
  return registry
}

/**
 * Counts and times the process's provider requests by provider, operation and status (429, 503
 * and 401 each their own), as the adapters' fetch reports them. Returns the unsubscription.
 */
function countProviderRequests (registry: Registry): () => void {
  const requests = new Counter({ name: 'sync_provider_requests_total', help: 'Requests to providers, by provider, operation and status (error: no answer)', labelNames: ['provider', 'operation', 'status'], registers: [registry] })
  const duration = new Histogram({ name: 'sync_provider_request_duration_seconds', help: 'Time a provider took to answer, by provider and operation', labelNames: ['provider', 'operation'], buckets: WORK_BUCKETS, registers: [registry] })
  const onReport = (message: unknown): void => {
    const { provider, operation, status, seconds } = message as ProviderRequestReport
    requests.inc({ provider, operation, status })
    duration.observe({ provider, operation }, seconds)
  }
  subscribe(PROVIDER_REQUEST_CHANNEL, onReport)
  return () => { unsubscribe(PROVIDER_REQUEST_CHANNEL, onReport) }
}

export default fp<SyncProvidersOptions>(async function syncProviders (fastify, options) {
  const config = fastify.syncConfig
  if (fastify.metricsPort !== null) {
    const stopCounting = countProviderRequests(fastify.metrics)
    fastify.addHook('onClose', async () => { stopCounting() })
  }
  const fromConfig = configuredProviders(config, options.google, { now: () => fastify.syncClock.now(), ...options.microsoft })
  // Imported events reach the user only through the backend, so a provider without it is refused
  // at start rather than failing every import later.
  if (Object.keys(fromConfig).length > 0 && config.backend === undefined) {
    throw new SyncStartupError('extprovider is configured but the backend block is missing: the Sync service needs backend.apiUrl (or sync.backendUrl) and backend.serviceToken to hand imported events to the backend')
  }
  // CalDAV needs no configuration of its own (each account names its server); its imports need the backend.
  const caldav: ProviderRegistry = config.backend === undefined ? {} : { caldav: new CalDavAdapter({ now: () => fastify.syncClock.now(), privateAddressAllowlist: config.sync.privateAddressAllowlist ?? [], ...options.caldav }) }
  fastify.decorate('syncProviders', { ...fromConfig, ...caldav, ...options.providers })
}, { name: 'sync-providers', dependencies: ['sync-config', 'metrics'] })
