import fp from 'fastify-plugin'
import { createCredentialCipher, outboxCredentialBinding } from '../../lib/credential-cipher.js'
import { deliverThrough, Outbox, type OpenOutboxCredential } from '../../services/outbox.js'
import { outboxCollections, OutboxStore } from '../../stores/outbox.js'
import { ageSeconds, observedGauge } from '../../lib/metrics.js'
import { metricsOf } from '../external/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    outbox: Outbox
  }
}

function openerOf (key: string | undefined): OpenOutboxCredential | undefined {
  if (key === undefined) return undefined
  const cipher = createCredentialCipher(key)
  return (sealed, userId) => cipher.open(sealed, outboxCredentialBinding(userId))
}

export default fp(async function outbox (fastify) {
  const store = new OutboxStore(outboxCollections(fastify.mongo.db))
  await store.ensureIndexes()
  const outbox = new Outbox({
    store,
    // Without a configuration (the outbox alone, in tests) there are no credentials to carry.
    deliver: deliverThrough(fastify.syncClient, openerOf(fastify.hasDecorator('config') ? fastify.config.sync.credentialEncryptionKey : undefined)),
    log: fastify.log.child({ component: 'sync-outbox' }),
    pollIntervalMs: 2000,
    backoff: { baseMs: 500, capMs: 60_000 }
  })
  fastify.decorate('outbox', outbox)
  const registry = metricsOf(fastify)
  observedGauge(registry, 'outbox_depth', 'Reports of writes waiting to be handed to Sync', async () => await store.depth())
  observedGauge(registry, 'outbox_oldest_age_seconds', 'Age of the oldest report waiting to be handed to Sync (0 when none waits)', async () => ageSeconds(await store.oldestWrittenAt()))
  fastify.addHook('onReady', async () => { outbox.start() })
  fastify.addHook('onClose', async () => { await outbox.stop() })
}, { name: 'outbox', dependencies: ['mongo', 'sync-client'] })
