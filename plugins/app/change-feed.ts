import fp from 'fastify-plugin'
import { ChangeFeedBridge, type ChangeFeedPluginOptions } from '../../services/change-feed-bridge.js'

declare module 'fastify' {
  interface FastifyInstance {
    changeFeed: ChangeFeedBridge
  }
}

export default fp<ChangeFeedPluginOptions>(async function changeFeed (fastify, opts) {
  const bridge = new ChangeFeedBridge(fastify.sse, fastify.syncClient, fastify.log.child({ plugin: 'change-feed' }), opts.realtime)
  fastify.decorate('changeFeed', bridge)
  fastify.addHook('onClose', async () => { await bridge.stop() })
}, { name: 'change-feed', dependencies: ['sse-broker', 'sync-client'] })
