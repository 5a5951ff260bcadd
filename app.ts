import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { LogController, type FastifyError, type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import autoload from '@fastify/autoload'
import type { Config } from './schemas/config.js'
import { loggerOptions } from './lib/logging.js'
import { TypedHttpError, errorBody, notFoundBody, serverErrorBody } from './lib/error-bodies.js'
import configPlugin from './plugins/config.js'
import mongoPlugin from './plugins/mongo.js'
import corsPlugin from './plugins/cors.js'
import securityHeadersPlugin from './plugins/security-headers.js'
import requestLoggingPlugin from './plugins/request-logging.js'
import usersPlugin from './plugins/users.js'
import sessionPlugin, { isSessionLibraryError, sessionErrorHandler } from './plugins/session.js'
import type { RealtimeOptions } from './plugins/change-feed.js'

const here = dirname(fileURLToPath(import.meta.url))

// Running from TypeScript sources means a TypeScript loader (tsx) is active, so autoload may
// import .ts files; built output is plain .js and needs nothing.
if (import.meta.url.endsWith('.ts')) process.env.FASTIFY_AUTOLOAD_TYPESCRIPT ??= '1'

export interface AppOptions {
  config: Config
  // Stream timings (heartbeat, lifetime, poll cadence); tests shorten them.
  realtime?: RealtimeOptions
}

// Fastify's own options for this app, shared by server.ts and the tests so both run the same thing.
export function serverOptions (config: Config): FastifyServerOptions {
  return {
    logger: loggerOptions(config.runtime.logLevel),
    // request-logging writes one line per request itself (and hides health probes).
    logController: new LogController({ disableRequestLogging: true }),
    // The backend sits behind the self-host proxy, which sets X-Forwarded-*.
    trustProxy: true,
    bodyLimit: 1024 * 1024,
    requestTimeout: 0,
    return503OnClosing: true,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true } }
  }
}

// Plugins whose place in the request order is fixed by the specification; app() registers them
// itself, in that order. Every other file in plugins/ is a decorator and is autoloaded.
const orderedPlugins = /^(config|mongo|users|cors|session|security-headers|request-logging)\.(ts|js)$/

function sendError (request: FastifyRequest, reply: FastifyReply, error: FastifyError): FastifyReply {
  if (error instanceof TypedHttpError) {
    return reply.code(error.statusCode).send(errorBody(error.statusCode, error.message, error.code, error.details))
  }
  if (error.validation) {
    return reply.code(400).send(errorBody(400, error.message, 'FST_ERR_VALIDATION'))
  }
  const statusCode = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500
  if (statusCode >= 500) {
    request.log.error({ err: error }, 'request failed')
    return reply.code(statusCode).send(serverErrorBody(statusCode))
  }
  return reply.code(statusCode).send(errorBody(statusCode, error.message, error.code && !error.code.startsWith('FST_') ? error.code : undefined))
}

const app: FastifyPluginAsync<AppOptions> = async (fastify: FastifyInstance, options) => {
  await fastify.register(configPlugin, { config: options.config })
  await fastify.register(mongoPlugin)
  await fastify.register(usersPlugin)

  // Request order (specification, "What the service does", item 5): CORS and session handling,
  // then security headers, request logging and JSON body parsing (Fastify parses bodies after
  // every onRequest hook above), then the routes, then the error handler.
  await fastify.register(corsPlugin)
  await fastify.register(sessionPlugin)
  await fastify.register(securityHeadersPlugin)
  await fastify.register(requestLoggingPlugin)

  await fastify.register(autoload, {
    dir: join(here, 'plugins'),
    ignorePattern: orderedPlugins,
    options: { realtime: options.realtime }
  })

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
