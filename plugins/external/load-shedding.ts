import fp from 'fastify-plugin'
import underPressure from '@fastify/under-pressure'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { Counter } from '../../lib/metrics.js'
import { metricsOf } from './metrics.js'

export interface LoadSheddingOptions {
  /** Mean event-loop delay over one sample, in milliseconds, past which requests are shed. */
  maxEventLoopDelayMs: number
  sampleIntervalMs: number
}

// A mean delay of 100 ms over a second means the loop has been saturated for most of it: no
// single request may hold it that long (range reads give it back every few milliseconds), so
// only an overload gets there, and it then sheds instead of queueing until every client times out.
export const LOAD_SHEDDING: LoadSheddingOptions = { maxEventLoopDelayMs: 100, sampleIntervalMs: 1000 }
export const OVERLOAD_RETRY_AFTER_SECONDS = 5

/** The uptime probe keeps answering under load: it is how an operator sees the process is alive. */
const NEVER_SHED = new Set(['/api/health'])

export default fp<Partial<LoadSheddingOptions>>(async function loadShedding (fastify, options) {
  const { maxEventLoopDelayMs, sampleIntervalMs } = { ...LOAD_SHEDDING, ...options }
  const shed = new Counter({ name: 'http_requests_shed_total', help: 'Requests refused with 503 OVERLOADED because the event loop was saturated', registers: [metricsOf(fastify)] })
  await fastify.register(underPressure, {
    maxEventLoopDelay: maxEventLoopDelayMs,
    sampleInterval: sampleIntervalMs,
    retryAfter: OVERLOAD_RETRY_AFTER_SECONDS,
    pressureHandler: (request, _reply, type, value) => {
      if (NEVER_SHED.has(request.routeOptions.url ?? '')) return
      request.log.warn({ pressure: type, value }, 'request shed: the service is overloaded')
      shed.inc()
      // Thrown from the onRequest hook, it ends the request in the app's error handler, which
      // answers typed errors with their status, code and Retry-After, before any later hook runs.
      throw new TypedHttpError(503, 'OVERLOADED', 'The service is overloaded; try again shortly', {}, OVERLOAD_RETRY_AFTER_SECONDS)
    }
  })
}, { name: 'load-shedding' })
