import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { LogController, type FastifyError, type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import autoload from '@fastify/autoload'
import type { Config } from './schemas/config.js'
import { loggerOptions } from './lib/logging.js'
import { EVENT_REQUEST_DEADLINE_MS, STARTUP_PLUGIN_DEADLINE_MS } from './lib/deadline.js'
import {
  DATABASE_RETRY_AFTER_SECONDS, TypedHttpError, errorBody, notFoundBody, sendDatabaseUnavailable, sendUntypedError, serverErrorBody, type UntypedErrorBodies
} from './lib/error-bodies.js'
import type { ErrorResponse } from './schemas/errors.js'
import { isDatabaseUnavailableError } from './stores/database.js'
import { requestBodies, validationOptions } from './plugins/external/request-bodies.js'
import configPlugin from './plugins/external/config.js'
import requestIdPlugin from './plugins/external/request-id.js'
import metricsPlugin from './plugins/external/metrics.js'
import drainingPlugin from './plugins/external/draining.js'
import { requestIdOf } from './lib/request-id.js'
import mongoPlugin from './plugins/external/mongo.js'
import corsPlugin from './plugins/external/cors.js'
import loadSheddingPlugin, { type LoadSheddingOptions } from './plugins/external/load-shedding.js'
import authRateLimitPlugin from './plugins/external/auth-rate-limit.js'
import sessionPlugin, { isSessionLibraryError, sessionCoreUnavailable, sessionErrorHandler } from './plugins/external/session.js'
import { isSessionCoreUnavailableError } from './clients/session-core.js'
import securityHeadersPlugin from './plugins/external/security-headers.js'
import requestLoggingPlugin from './plugins/external/request-logging.js'
import openapiPlugin from './plugins/external/openapi.js'
import syncProxyPlugin from './plugins/external/sync-proxy.js'
import type { ChangeFeedOptions } from './services/change-feed-bridge.js'
import type { SseBrokerOptions } from './services/sse-broker.js'
import type { SessionRevocationOptions } from './services/session-revocations.js'
import type { EmailOptions } from './services/email.js'

const here = dirname(fileURLToPath(import.meta.url))

// Running from TypeScript sources means a TypeScript loader (tsx) is active, so autoload may
// import .ts files; built output is plain .js and needs nothing.
if (import.meta.url.endsWith('.ts')) process.env.FASTIFY_AUTOLOAD_TYPESCRIPT ??= '1'

/** The process's session library, configured by whatever program builds the app, before it does. */
export { initSessionLibrary } from './services/session-library/index.js'

/** Every realtime setting; one object of this type goes to the stream broker, the change-feed bridge and the revocation poller. */
export type RealtimeOptions = Partial<SseBrokerOptions & ChangeFeedOptions & SessionRevocationOptions>

export interface AppOptions {
  config: Config
  // Stream timings (heartbeat, lifetime, poll cadence); tests shorten them.
  realtime?: RealtimeOptions
  // When the process sheds load (plugins/external/load-shedding.ts); tests sample faster.
  loadShedding?: Partial<LoadSheddingOptions>
  // The email poller's clock, pacing and timer; tests drive it themselves.
  email?: EmailOptions
  /** How long an event read or write may take before its 503 (EVENT_REQUEST_DEADLINE_MS); tests on a loaded machine lengthen it. */
  eventRequestDeadlineMs?: number
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The deadline of each /api/event route (routes/event/autohooks.ts). */
    eventRequestDeadlineMs: number
  }
}

// Fastify's own options for this app, shared by server.ts and the tests so both run the same thing.
export function serverOptions (config: Config): FastifyServerOptions {
  return {
    logger: loggerOptions(config.runtime.logLevel),
    // request-logging writes one line per request itself (and hides health probes).
    logController: new LogController({ disableRequestLogging: true }),
    // The backend sits behind the self-host proxy, which sets X-Forwarded-*. Only proxies on this
    // host or a private network are believed: a client that reaches the backend directly cannot
    // name another address (the credential routes' rate limits are per address).
    trustProxy: 'loopback, linklocal, uniquelocal',
    bodyLimit: 1024 * 1024,
    // Time to receive a whole request (headers and body), not to answer it: an event stream is a
    // long answer to a short request, so a finite limit only cuts off clients that send too slowly.
    requestTimeout: REQUEST_RECEIVE_DEADLINE_MS,
    return503OnClosing: true,
    pluginTimeout: STARTUP_PLUGIN_DEADLINE_MS,
    // A request's id is the one its caller sent (when well formed) or a fresh one (lib/request-id.ts).
    genReqId: requestIdOf,
    ...validationOptions()
  }
}

export const REQUEST_RECEIVE_DEADLINE_MS = 30_000
/** A readiness probe waits about a second by default (Kubernetes' timeoutSeconds: 1). */
const READINESS_DEADLINE_MS = 900
/** Headers come first and are small: a client that has not sent them by then is not going to. */
export const HEADERS_RECEIVE_DEADLINE_MS = 10_000
export { DATABASE_RETRY_AFTER_SECONDS }

function sendError (request: FastifyRequest, reply: FastifyReply, error: FastifyError | TypedHttpError): FastifyReply {
  if (isSessionCoreUnavailableError(error)) {
    request.log.error({ err: error }, 'session core unavailable')
    return sendError(request, reply, sessionCoreUnavailable())
  }
  if (error instanceof TypedHttpError) {
    if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds))
    return reply.code(error.statusCode).send(errorBody(error.statusCode, error.message, error.code, error.details))
  }
  if (error.code === 'FST_ERR_HANDLER_TIMEOUT') {
    // A route's deadline passed (routes/event): what it waited on ends on its own deadline behind.
    request.log.error('request deadline exceeded')
    return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
      .send(errorBody(503, 'The service is briefly unavailable; try again shortly', 'DEADLINE_EXCEEDED'))
  }
  if (isDatabaseUnavailableError(error)) return sendDatabaseUnavailable(request, reply, error)
  return sendUntypedError(request, reply, error, BACKEND_UNTYPED_ERROR_BODIES)
}

const BACKEND_UNTYPED_ERROR_BODIES: UntypedErrorBodies<ErrorResponse> = {
  invalid: (message) => errorBody(400, message, 'FST_ERR_VALIDATION'),
  // Fastify's own codes (FST_*) name its internals, not a refusal clients are told about.
  refused: (statusCode, message, code) => errorBody(statusCode, message, code && !code.startsWith('FST_') ? code : undefined),
  failed: serverErrorBody
}

const app: FastifyPluginAsync<AppOptions> = async (fastify: FastifyInstance, options) => {
  // Node's own limit for headers (60 s) is longer than the whole request's, which would leave it unused.
  fastify.server.headersTimeout = HEADERS_RECEIVE_DEADLINE_MS
  await fastify.register(configPlugin, { config: options.config })
  await fastify.register(requestIdPlugin)
  await fastify.register(drainingPlugin)
  const { backend, runtime } = options.config
  await fastify.register(metricsPlugin, {
    service: 'backend',
    image: runtime.version,
    port: backend.metricsPort,
    host: backend.metricsHost,
    // Ready while the database answers: what /api/health checks, within a probe's patience.
    ready: async () => await fastify.mongo.ping(READINESS_DEADLINE_MS)
  })
  fastify.decorate('eventRequestDeadlineMs', options.eventRequestDeadlineMs ?? EVENT_REQUEST_DEADLINE_MS)
  // Apple's form post to the session library's callback is the one form body the backend takes.
  await fastify.register(requestBodies)
  await fastify.register(mongoPlugin)
  // The app's own decorators (plugins/app): they add no request hooks, so their order is only
  // that of their declared dependencies.
  await fastify.register(autoload, { dir: join(here, 'plugins', 'app'), options: { realtime: options.realtime, email: options.email } })

  // The request order (specification, "What the service does", item 5), in one place: CORS and
  // session handling (the credential routes' rate limits sit with it), then security headers,
  // request logging and JSON body parsing (Fastify parses bodies after every onRequest hook
  // above), then the routes, then the error handler with the session library's handler.
  await fastify.register(corsPlugin)
  // An overloaded process sheds a request before it costs anything (session, body, handler),
  // but after CORS, so that a browser can read the 503 and its Retry-After.
  await fastify.register(loadSheddingPlugin, options.loadShedding ?? {})
  await fastify.register(authRateLimitPlugin)
  await fastify.register(sessionPlugin)
  await fastify.register(securityHeadersPlugin)
  await fastify.register(requestLoggingPlugin)
  await fastify.register(openapiPlugin)
  // The Sync service's public callbacks (OAuth, provider webhooks), under /sync.
  await fastify.register(syncProxyPlugin)

  fastify.setNotFoundHandler((request, reply) => { reply.code(404).send(notFoundBody(request.method, request.url)) })
  // The session library's error handler comes after the routes: its errors (unauthorised,
  // try refresh token, token theft) keep the library's own answers, which its clients expect.
  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (isSessionLibraryError(error)) {
      await sessionErrorHandler(error, request, reply)
      return reply
    }
    return sendError(request, reply, error)
  })

  // Registered after the handlers above so every route context inherits them.
  await fastify.register(autoload, {
    dir: join(here, 'routes'),
    autoHooks: true,
    cascadeHooks: true,
    options: { prefix: '/api' }
  })
}

export default app
