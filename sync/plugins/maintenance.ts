import fp from 'fastify-plugin'
import { maintenanceAudience, maintenancePublicKey } from '../../lib/maintenance-token.js'
import { Maintenance, type MaintenanceAuthSettings } from '../services/maintenance.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncMaintenance: Maintenance
  }
}

export interface SyncMaintenanceOptions {
  /** Run watch maintenance on a timer while execution is active (default true); tests call run(). */
  autoStart?: boolean
  intervalMs?: number
  /** How often calendars that no pull reached for a while are looked for (default 5 minutes). */
  fallbackPullIntervalMs?: number
}

export default fp<SyncMaintenanceOptions>(async function syncMaintenance (fastify, options) {
  const settings = fastify.syncConfig.sync
  const audience = maintenanceAudience(settings.callbackBaseUrl)
  // The configuration's rules make the key and the issuer exclusive, and the key need the caller.
  const auth: MaintenanceAuthSettings | null = settings.maintenanceCaller === undefined
    ? null
    : settings.maintenanceKey !== undefined
      ? { key: maintenancePublicKey(settings.maintenanceKey), caller: settings.maintenanceCaller, audience }
      : settings.maintenanceIssuer !== undefined
        ? { issuer: settings.maintenanceIssuer, caller: settings.maintenanceCaller, audience }
        : null
  if (settings.maintenanceIssuer !== undefined && settings.maintenanceCaller === undefined) {
    fastify.log.warn('sync.maintenanceIssuer is set without sync.maintenanceCaller; POST /maintenance refuses every token')
  }
  const maintenance = new Maintenance(fastify.syncEngine, fastify.log.child({ component: 'maintenance' }), auth)
  fastify.decorate('syncMaintenance', maintenance)
  if (options.autoStart !== false && settings.execution === 'active') {
    fastify.addHook('onReady', async () => { maintenance.start(options.intervalMs ?? 60 * 60_000, options.fallbackPullIntervalMs ?? 5 * 60_000) })
  }
  fastify.addHook('onClose', async () => { await maintenance.stop() })
}, { name: 'sync-maintenance', dependencies: ['sync-config', 'sync-engine'] })
