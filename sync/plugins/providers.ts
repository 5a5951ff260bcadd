import fp from 'fastify-plugin'
import type { ProviderRegistry } from '../lib/providers/port.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncProviders: ProviderRegistry
  }
}

export interface SyncProvidersOptions {
  /** Provider adapters by provider; a provider without one cannot be connected. */
  providers: ProviderRegistry
}

export default fp<SyncProvidersOptions>(async function syncProviders (fastify, options) {
  fastify.decorate('syncProviders', options.providers)
}, { name: 'sync-providers' })
