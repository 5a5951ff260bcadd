import fp from 'fastify-plugin'
import { SseBroker, type RealtimePluginOptions } from '../../services/sse-broker.js'
import { observedGauge } from '../../lib/metrics.js'
import { metricsOf } from '../external/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    sse: SseBroker
  }
}

export default fp<RealtimePluginOptions>(async function sseBroker (fastify, opts) {
  const broker = new SseBroker(fastify.log.child({ plugin: 'sse-broker' }), opts.realtime)
  fastify.decorate('sse', broker)
  const registry = metricsOf(fastify)
  observedGauge(registry, 'event_streams_open', 'Event streams open on this process', () => broker.streamCount)
  observedGauge(registry, 'event_stream_users', 'Users with at least one event stream open on this process', () => broker.userCount)
  // Streams must end before the server waits for open connections to finish; onClose runs after
  // that wait, so ending them there would never let shutdown complete.
  fastify.addHook('preClose', async () => { broker.closeAll() })
  fastify.addHook('onClose', async () => { broker.closeAll() })
}, { name: 'sse-broker', fastify: '5.x' })
