import fp from 'fastify-plugin'
import { BackendClient } from '../clients/backend.js'
import type { BackendPort } from '../clients/backend.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The backend's internal provider-events endpoints; null when the configuration names no backend. */
    syncBackend: BackendPort | null
  }
}

export interface SyncBackendOptions {
  /** Used instead of a client built from the configuration. */
  backend?: BackendPort | undefined
}

export default fp<SyncBackendOptions>(async function syncBackend (fastify, options) {
  const config = fastify.syncConfig
  let backend: BackendPort | null = options.backend ?? null
  if (backend === null && config.backend !== undefined) {
    // Inside a container network the public API URL is not the backend, hence sync.backendUrl.
    const baseUrl = config.sync.backendUrl ?? new URL(config.backend.apiUrl).origin
    backend = new BackendClient({ baseUrl, serviceToken: config.backend.serviceToken })
  }
  fastify.decorate('syncBackend', backend)
  fastify.addHook('onClose', async () => { await backend?.close() })
}, { name: 'sync-backend', dependencies: ['sync-config'] })
