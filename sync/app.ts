import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify'
import autoload from '@fastify/autoload'
import type { SyncConfig } from '../schemas/config.js'
import { loggerOptions } from '../lib/logging.js'
import { STARTUP_PLUGIN_DEADLINE_MS } from '../lib/deadline.js'
import { requestBodies, validationOptions } from '../plugins/external/request-bodies.js'
import requestIdPlugin from '../plugins/external/request-id.js'
import metricsPlugin from '../plugins/external/metrics.js'
import drainingPlugin from '../plugins/external/draining.js'
import { requestIdOf } from '../lib/request-id.js'
import { systemClock } from './lib/clock.js'
import type { Clock } from './lib/clock.js'
import { errorBody, SyncServiceError } from './lib/errors.js'
import { DATABASE_RETRY_AFTER_SECONDS, sendUntypedError, type UntypedErrorBodies } from '../lib/error-bodies.js'
import { DatabaseDeadlineError, isDatabaseUnavailableError } from '../stores/database.js'
import type { SyncErrorBody } from '../schemas/sync/index.js'
import type { ProviderRegistry } from './lib/providers/port.js'
import configPlugin from './plugins/config.js'
import databasePlugin from './plugins/database.js'
import providersPlugin from './plugins/providers.js'
import type { SyncProvidersOptions } from './plugins/providers.js'
import backendPlugin from './plugins/backend.js'
import activityPlugin from './plugins/activity.js'
import analyticsPlugin from './plugins/analytics.js'
import heldWritesPlugin from './plugins/held-writes.js'
import writtenVersionsPlugin from './plugins/written-versions.js'
import writeIssuesPlugin from './plugins/write-issues.js'
import connectPlugin from './plugins/connect.js'
import maintenancePlugin from './plugins/maintenance.js'
import type { SyncMaintenanceOptions } from './plugins/maintenance.js'
import type { BackendPort } from './clients/backend.js'
import type { Analytics } from '../lib/analytics.js'
import changeFeedPlugin from './plugins/change-feed.js'
import credentialsPlugin from './plugins/credentials.js'
import connectionsPlugin from './plugins/connections.js'
import calendarsPlugin from './plugins/calendars.js'
import watchesPlugin from './plugins/watches.js'
import credentialHandOversPlugin from './plugins/credential-hand-overs.js'
import jobQueuePlugin from './plugins/job-queue.js'
import syncEnginePlugin from './plugins/sync-engine.js'
import eventChangesPlugin from './plugins/event-changes.js'
import jobWorkerPlugin from './plugins/job-worker.js'
import stateMetricsPlugin from './plugins/state-metrics.js'
import type { WorkerOptions } from './plugins/job-worker.js'

const here = dirname(fileURLToPath(import.meta.url))

// Running from TypeScript sources means a TypeScript loader (tsx) is active, so autoload may
// import .ts files; built output is plain .js and needs nothing.
if (import.meta.url.endsWith('.ts')) process.env.FASTIFY_AUTOLOAD_TYPESCRIPT ??= '1'

export interface SyncAppOptions {
  config: SyncConfig
  clock?: Clock
  /** Provider adapters by provider, over those the configuration sets up; a provider without one cannot be connected. */
  providers?: ProviderRegistry
  /** Settings of the Google adapter the configuration sets up that the file does not hold. */
  google?: SyncProvidersOptions['google']
  /** Settings of the CalDAV adapter the service sets up. */
  caldav?: SyncProvidersOptions['caldav']
  /** The backend's provider-events endpoints, instead of the client the configuration sets up. */
  backend?: BackendPort
  /** Instead of the analytics the configuration chooses. */
  analytics?: Analytics
  worker?: WorkerOptions
  maintenance?: SyncMaintenanceOptions
  /** Source of retry jitter, in [0, 1). */
  random?: () => number
  /** Events an import gathers from its pages before handing them to the backend (CalendarReads); default IMPORT_BATCH_EVENTS. */
  importBatchEvents?: number
}

export function syncServerOptions (config: SyncConfig): FastifyServerOptions {
  return {
    logger: loggerOptions(config.runtime.logLevel),
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    pluginTimeout: STARTUP_PLUGIN_DEADLINE_MS,
    // The backend's request id, sent on each call, names the request here too (lib/request-id.ts).
    genReqId: requestIdOf,
    ...validationOptions()
  }
}

// The codes of the Sync contract name no server failure or generic refusal, so these bodies keep
// the contract's closest code and carry the real status beside it.
const SYNC_UNTYPED_ERROR_BODIES: UntypedErrorBodies<SyncErrorBody> = {
  invalid: (message) => errorBody('VALIDATION', message),
  refused: (statusCode, message) => ({ ...errorBody('VALIDATION', message), statusCode, error: STATUS_CODES[statusCode] ?? 'Error' }),
  failed: (statusCode) => ({ ...errorBody('INTERNAL', 'The Sync service failed to answer; try again later'), statusCode, error: STATUS_CODES[statusCode] ?? 'Error' })
}

/**
 * The Sync database did not answer, or not within a call's deadline (sync/stores/database-calls.ts):
 * 503 DATABASE_UNAVAILABLE with Retry-After, as the backend answers its own (lib/error-bodies.ts),
 * never a 500 with the driver's words and never a 401. The log says why: the error's class, the
 * first line of its message (a deadline, or the driver's "connection ... timed out"; neither carries
 * credentials) and the deadline that passed, without the driver's topology and options.
 */
function sendDatabaseUnavailable (request: FastifyRequest, reply: FastifyReply, error: Error): FastifyReply {
  request.log.error({
    cause: error.name,
    reason: error.message.split('\n')[0]?.slice(0, 300),
    ...(error instanceof DatabaseDeadlineError ? { deadlineMs: error.deadlineMs } : {})
  }, 'database unavailable')
  return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
    .send(errorBody('DATABASE_UNAVAILABLE', 'The Sync service is briefly unavailable; try again shortly'))
}

const app: FastifyPluginAsync<SyncAppOptions> = async (fastify: FastifyInstance, options) => {
  // Each part declares the parts it needs; they are registered here in that order, each with
  // the options it takes.
  await fastify.register(configPlugin, { config: options.config, clock: options.clock ?? systemClock })
  // Sync's bodies are JSON (the internal API, Microsoft's notifications); no route takes a form.
  await fastify.register(requestBodies)
  await fastify.register(requestIdPlugin)
  await fastify.register(drainingPlugin)
  const { sync, runtime } = options.config
  await fastify.register(metricsPlugin, {
    service: 'sync',
    image: runtime.version,
    port: sync.metricsPort,
    host: sync.metricsHost,
    ready: async () => await fastify.syncDb.ping().then(() => true, () => false)
  })
  // Before the database: a provider configured without a backend refuses the start at once.
  await fastify.register(backendPlugin, { backend: options.backend })
  await fastify.register(providersPlugin, { providers: options.providers ?? {}, ...(options.google ? { google: options.google } : {}), ...(options.caldav ? { caldav: options.caldav } : {}) })
  await fastify.register(databasePlugin)
  await fastify.register(changeFeedPlugin)
  await fastify.register(credentialsPlugin)
  await fastify.register(connectionsPlugin)
  await fastify.register(calendarsPlugin)
  await fastify.register(watchesPlugin)
  await fastify.register(credentialHandOversPlugin)
  await fastify.register(heldWritesPlugin)
  await fastify.register(writtenVersionsPlugin)
  await fastify.register(writeIssuesPlugin)
  await fastify.register(activityPlugin)
  await fastify.register(jobQueuePlugin, { random: options.random ?? Math.random, leaseMs: options.worker?.leaseMs })
  await fastify.register(syncEnginePlugin, { importBatchEvents: options.importBatchEvents })
  await fastify.register(analyticsPlugin, { analytics: options.analytics })
  await fastify.register(connectPlugin)
  await fastify.register(eventChangesPlugin)
  await fastify.register(jobWorkerPlugin, { ...options.worker })
  await fastify.register(stateMetricsPlugin)
  await fastify.register(maintenancePlugin, { ...options.maintenance })

  // Set before the routes are registered: a plugin context keeps the handlers it was created with.
  fastify.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody('NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`))
  })

  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof SyncServiceError) {
      if (error.statusCode >= 500) request.log.warn({ code: error.code }, 'request refused')
      return reply.code(error.statusCode).send(error.toBody())
    }
    if (isDatabaseUnavailableError(error)) return sendDatabaseUnavailable(request, reply, error)
    return sendUntypedError(request, reply, error, SYNC_UNTYPED_ERROR_BODIES)
  })

  await fastify.register(autoload, {
    dir: join(here, 'routes'),
    autoHooks: true,
    cascadeHooks: true
  })
}

export default app
