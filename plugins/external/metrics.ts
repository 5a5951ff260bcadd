import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { Counter, Histogram, LATENCY_BUCKETS, Registry, createMetricsRegistry, startInternalServer } from '../../lib/metrics.js'
import type { ServiceName } from '../../schemas/config.js'

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
  const registry = createMetricsRegistry(options.service, options.image)
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
