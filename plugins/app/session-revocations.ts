import fp from 'fastify-plugin'
import { defaultSessionRevocationOptions, SessionRevocationService, type SessionRevocationOptions, type SessionRevocations } from '../../services/session-revocations.js'
import { SessionRevocationStore } from '../../stores/session-revocations.js'

declare module 'fastify' {
  interface FastifyInstance {
    sessionRevocations: SessionRevocations
  }
}

export default fp<{ realtime?: Partial<SessionRevocationOptions> }>(async function sessionRevocations (fastify, opts) {
  const store = new SessionRevocationStore(fastify.mongo.db)
  await store.ensureIndexes()
  const service = new SessionRevocationService({
    store,
    streams: fastify.sse,
    log: fastify.log.child({ plugin: 'session-revocations' }),
    options: { revocationPollMs: opts.realtime?.revocationPollMs ?? defaultSessionRevocationOptions.revocationPollMs }
  })
  // Before the first request, so a process that just started refuses what was revoked before it.
  await service.start()
  fastify.addHook('onClose', async () => { await service.stop() })
  fastify.decorate('sessionRevocations', service)
}, { name: 'session-revocations', dependencies: ['mongo', 'sse-broker'] })
