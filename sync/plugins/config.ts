import fp from 'fastify-plugin'
import type { SyncConfig } from '../../schemas/config.js'
import type { Clock } from '../lib/clock.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncConfig: SyncConfig
    syncClock: Clock
  }
}

export interface SyncConfigPluginOptions {
  config: SyncConfig
  clock: Clock
}

export default fp<SyncConfigPluginOptions>(async function syncConfig (fastify, options) {
  fastify.decorate('syncConfig', options.config)
  fastify.decorate('syncClock', options.clock)
}, { name: 'sync-config' })
