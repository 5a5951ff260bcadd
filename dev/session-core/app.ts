import type { FastifyError, FastifyInstance } from 'fastify'
import type { CoreContext } from './context.js'
import { CDI_VERSION } from './cdi.js'
import { BadRequest, safeEqual } from './input.js'
import { registerAccountRoutes } from './routes-accounts.js'
import { registerDataRoutes } from './routes-data.js'
import { registerSessionRoutes } from './routes-session.js'

export interface SessionCoreAppOptions {
  ctx: CoreContext
  /** When set, every call except the public ones must carry it in the `api-key` header. */
  apiKey?: string | undefined
}

// The SDK fetches the JWKS with jose and no api-key; hello is the health check. Everything else,
// the version handshake included, needs the key, as on the real core.
const PUBLIC_PATHS = new Set(['/.well-known/jwks.json', '/hello', '/'])
const JWKS_MAX_AGE_SEC = 60

/** The core's HTTP surface. Never listens: index.ts owns the server. */
export async function sessionCoreApp (app: FastifyInstance, options: SessionCoreAppOptions): Promise<void> {
  const { ctx, apiKey } = options

  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?', 1)[0] ?? ''
    if (apiKey !== undefined && !PUBLIC_PATHS.has(path)) {
      const given = request.headers['api-key']
      if (typeof given !== 'string' || !safeEqual(given, apiKey)) {
        return reply.code(401).type('text/plain').send('Invalid API key')
      }
    }
    const version = request.headers['cdi-version']
    if (version !== undefined && version !== CDI_VERSION) {
      return reply.code(400).type('text/plain').send(`cdi-version ${String(version)} not supported`)
    }
  })

  app.setErrorHandler((error: FastifyError | BadRequest, request, reply) => {
    const status = error.statusCode ?? 500
    if (status >= 500) {
      request.log.error({ err: error }, 'session core request failed')
      return reply.code(500).type('text/plain').send('Internal Error')
    }
    return reply.code(status).type('text/plain').send(error.message)
  })

  app.setNotFoundHandler((request, reply) => {
    request.log.warn({ method: request.method, path: request.url.split('?', 1)[0] }, 'call outside the supported CDI subset')
    return reply.code(404).type('text/plain').send('Not found')
  })

  app.get('/', async (_request, reply) => reply.type('text/plain').send('Hello'))
  app.get('/hello', async (_request, reply) => reply.type('text/plain').send('Hello'))
  app.get('/apiversion', async () => ({ versions: [CDI_VERSION] }))

  app.get('/.well-known/jwks.json', async (_request, reply) =>
    reply.header('cache-control', `max-age=${JWKS_MAX_AGE_SEC}, must-revalidate`).send(ctx.keys.jwks))
  app.get('/recipe/jwt/jwks', async () => ({ status: 'OK', keys: ctx.keys.jwks.keys }))

  registerSessionRoutes(app, ctx)
  registerAccountRoutes(app, ctx)
  registerDataRoutes(app, ctx)
}
