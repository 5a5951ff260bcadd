import fp from 'fastify-plugin'
import { isRealValue } from '../../lib/config-rules.js'
import type { SyncConfig } from '../../schemas/config.js'
import { SyncStartupError } from '../lib/isolation.js'
import type { ProviderRegistry } from '../lib/providers/port.js'
import { GoogleCalendarAdapter } from '../providers/google/adapter.js'
import type { GoogleAdapterOptions } from '../providers/google/adapter.js'

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
}

/** The adapters the configuration sets up: Google when extprovider holds real credentials. */
export function configuredProviders (config: SyncConfig, google: SyncProvidersOptions['google'] = {}): ProviderRegistry {
  const registry: ProviderRegistry = {}
  const { clientId, clientSecret, endpointBase } = config.extprovider ?? {}
  if (isRealValue(clientId) && isRealValue(clientSecret)) {
    registry.google = new GoogleCalendarAdapter({ clientId, clientSecret, endpointBase, ...google })
  }
  return registry
}

export default fp<SyncProvidersOptions>(async function syncProviders (fastify, options) {
  const config = fastify.syncConfig
  const fromConfig = configuredProviders(config, options.google)
  // Imported events reach the user only through the backend, so a provider without it is refused
  // at start rather than failing every import later.
  if (Object.keys(fromConfig).length > 0 && config.backend === undefined) {
    throw new SyncStartupError('extprovider is configured but the backend block is missing: the Sync service needs backend.apiUrl (or sync.backendUrl) and backend.serviceToken to hand imported events to the backend')
  }
  fastify.decorate('syncProviders', { ...fromConfig, ...options.providers })
}, { name: 'sync-providers', dependencies: ['sync-config'] })
