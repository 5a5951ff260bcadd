import fp from 'fastify-plugin'
import { ChangeFeedBridge, type ChangeFeedPluginOptions, type FeedObserver } from '../../services/change-feed-bridge.js'
import { Counter, Histogram, LATENCY_BUCKETS, WORK_BUCKETS, type Registry } from '../../lib/metrics.js'
import { metricsOf } from '../external/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    changeFeed: ChangeFeedBridge
  }
}

function feedMetrics (registry: Registry): FeedObserver {
  const reads = new Counter({ name: 'change_feed_reads_total', help: 'Reads of Sync\'s change feed (one per batch of users), by outcome', labelNames: ['outcome'], registers: [registry] })
  const readDuration = new Histogram({ name: 'change_feed_read_duration_seconds', help: 'Time Sync took to answer a read of the change feed', buckets: LATENCY_BUCKETS, registers: [registry] })
  const lag = new Histogram({ name: 'change_feed_lag_seconds', help: 'Time from Sync appending a change to its message going out on the streams', buckets: WORK_BUCKETS, registers: [registry] })
  return {
    read: (outcome, seconds) => { reads.inc({ outcome }); readDuration.observe(seconds) },
    delivered: (seconds) => { lag.observe(seconds) }
  }
}

export default fp<ChangeFeedPluginOptions>(async function changeFeed (fastify, opts) {
  const bridge = new ChangeFeedBridge(fastify.sse, fastify.syncClient, fastify.log.child({ plugin: 'change-feed' }), opts.realtime, feedMetrics(metricsOf(fastify)))
  fastify.decorate('changeFeed', bridge)
  fastify.addHook('onClose', async () => { await bridge.stop() })
}, { name: 'change-feed', dependencies: ['sse-broker', 'sync-client'] })
