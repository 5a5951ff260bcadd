import fp from 'fastify-plugin'
import { ChangeFeed } from '../stores/change-feed.js'
import { FeedWaits, type FeedWaitOptions } from '../services/feed-waits.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncFeed: ChangeFeed
    syncFeedWaits: FeedWaits
  }
}

export interface SyncChangeFeedOptions {
  waits?: Partial<FeedWaitOptions>
}

export default fp<SyncChangeFeedOptions>(async function syncChangeFeed (fastify, options) {
  const feed = new ChangeFeed(fastify.syncDb.db, fastify.syncClock, fastify.syncDb.withTransaction)
  await feed.ensureIndexes()
  const waits = new FeedWaits(feed, fastify.log.child({ plugin: 'change-feed' }), options.waits)
  feed.onAppended((userId) => { waits.appended(userId) })
  fastify.decorate('syncFeed', feed)
  fastify.decorate('syncFeedWaits', waits)
  // start() never rejects: it falls back to reading the heads.
  fastify.addHook('onReady', async () => { waits.start().catch(() => {}) })
  // Before the server waits for its requests to finish: held reads answer now, not at their deadline.
  fastify.addHook('preClose', async () => { await waits.close() })
}, { name: 'sync-change-feed', dependencies: ['sync-config', 'sync-database'] })
