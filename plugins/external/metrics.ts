import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { Counter, Histogram, LATENCY_BUCKETS, Registry, createMetricsRegistry } from '../../lib/metrics.js'
import type { ServiceName } from '../../schemas/config.js'

/** The package's version: built code runs from dist/plugins/external, sources from plugins/external. */
function packageVersion (): string {
  for (const relative of ['../../package.json', '../../../package.json']) {
    try {
      const parsed: unknown = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8'))
      if (typeof parsed === 'object' && parsed !== null && 'version' in parsed && typeof parsed.version === 'string') return parsed.version
    } catch {
      // Not at this level: try the next.
    }
  }
  return 'unknown'
}

const VERSION = packageVersion()

interface InternalServerOptions {
  registry: Registry
  port: number
  host: string
  /** Whether the service takes traffic now (started, not closing, its database answering). */
  ready: () => Promise<boolean>
}

/**
 * The internal port: `GET /metrics` (Prometheus' text format), `GET /live` (200 while the event
 * loop answers) and `GET /ready` (200 or 503). It is a bare server of its own, never the public
 * one, so neither a proxy's mistake nor a public route can reach it.
 */
async function startInternalServer (options: InternalServerOptions): Promise<{ server: Server, port: number }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end()
      return
    }
    const answer = async (): Promise<void> => {
      if (path === '/metrics') {
        const text = await options.registry.metrics()
        response.writeHead(200, { 'content-type': options.registry.contentType }).end(text)
      } else if (path === '/live') {
        response.writeHead(200, { 'content-type': 'text/plain' }).end('live\n')
      } else if (path === '/ready') {
        const ready = await options.ready()
        response.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(ready ? 'ready\n' : 'not ready\n')
      } else {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
      }
    }
    answer().catch(() => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' })
      response.end('failed\n')
    })
  })
  // A scraper that holds a connection open must not keep a closing service waiting.
  server.keepAliveTimeout = 5_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  return { server, port: (server.address() as AddressInfo).port }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's figures; every part adds its own to it. */
    metrics: Registry
    /** The internal port it is served on, or null when the configuration names none. */
    metricsPort: number | null
  }
}

export interface MetricsOptions {
  service: ServiceName
  /** The image tag the configuration names (runtime.version). */
  image: string
  /** Absent: the figures are kept but neither served nor taken per request. */
  port?: number | undefined
  host?: string | undefined
  /** Whether the service can do its work now (its database answering). */
  ready: () => Promise<boolean>
}

/** Methods a route may have; any other spelling a client sends is counted as OTHER, so a label stays bounded. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

// Every request counted by its route's pattern (never the path a client typed, which carries ids),
// method and status; latency observed for answers, not for event streams, whose duration is the
// length of a visit.
export default fp<MetricsOptions>(async function metrics (fastify, options) {
  const registry = createMetricsRegistry(options.service, VERSION, options.image)
  fastify.decorate('metrics', registry)
  fastify.decorate('metricsPort', null)
  if (options.port === undefined) return

  const requests = new Counter({
    name: 'http_requests_total',
    help: 'Requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [registry]
  })
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer a request (event streams excepted), by route pattern and method',
    labelNames: ['route', 'method'],
    buckets: LATENCY_BUCKETS,
    registers: [registry]
  })
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched'
    const method = KNOWN_METHODS.has(request.method) ? request.method : 'OTHER'
    requests.inc({ route, method, status: String(reply.statusCode) })
    const type = reply.getHeader('content-type')
    if (typeof type !== 'string' || !type.startsWith('text/event-stream')) latency.observe({ route, method }, reply.elapsedTime / 1000)
    done()
  })

  let started = false
  let closing = false
  fastify.addHook('onReady', async () => { started = true })
  fastify.addHook('preClose', async () => { closing = true })
  // Listening from the start: liveness answers while the service still connects to what it needs.
  const { server, port } = await startInternalServer({
    registry,
    port: options.port,
    host: options.host ?? '127.0.0.1',
    ready: async () => started && !closing && await options.ready()
  })
  fastify.metricsPort = port
  fastify.log.info({ port, host: options.host ?? '127.0.0.1' }, 'metrics, liveness and readiness on the internal port')
  fastify.addHook('onClose', async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => { resolve() }))
  })
}, { name: 'metrics' })

/**
 * The app's registry, or a registry of its own for a part registered without the app around it
 * (a test of that part alone): the part counts all the same, and nobody reads it.
 */
export function metricsOf (fastify: FastifyInstance): Registry {
  return fastify.hasDecorator('metrics') ? fastify.metrics : new Registry()
}
