import fp from 'fastify-plugin'
import { LogSender, ResendSender } from '../../clients/resend.js'
import type { EmailSender } from '../../lib/email-vendor.js'
import { PeriodicTask } from '../../lib/periodic-task.js'
import { createEmailBlock, EMAIL_POLL_INTERVAL_MS, type EmailBlock, type EmailOptions } from '../../services/email.js'
import { EmailStore } from '../../stores/email.js'
import { EMAIL_SEND_STATES } from '../../lib/email-sequence.js'
import { observedCounts } from '../../lib/metrics.js'
import { metricsOf } from '../external/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The email block; null when the configuration has none (no routes, no poller). */
    email: EmailBlock | null
  }
}

// The email block (specification, "Optional integrations"): decorates `email` only when the
// configuration has the block; then every new user is enrolled and a poller sends what is due.
export default fp(async function email (fastify, options: { email?: EmailOptions }) {
  const config = fastify.config.email
  if (config === undefined) {
    fastify.decorate('email', null)
    return
  }
  const settings = options.email ?? {}
  const log = fastify.log.child({ component: 'email' })
  const store = new EmailStore(fastify.mongo.db)
  await store.ensureIndexes()

  const vendor: EmailSender = config.provider === 'mailer'
    ? new ResendSender({ apiKey: config.apiKey ?? '', from: config.from ?? '', apiBase: config.apiBase })
    : new LogSender(log)
  const block = createEmailBlock({
    config,
    apiUrl: fastify.config.backend.apiUrl,
    webUrl: fastify.config.web.url,
    serviceToken: fastify.config.backend.serviceToken,
    users: fastify.users,
    store,
    sender: settings.wrapSender ? settings.wrapSender(vendor) : vendor,
    analytics: fastify.analytics,
    log,
    options: settings
  })
  fastify.decorate('email', block)
  observedCounts(metricsOf(fastify), 'email_sends', 'Welcome-sequence sends by state', { state: EMAIL_SEND_STATES },
    async () => [...await store.countsByState()].map(([state, count]) => ({ labels: { state }, count })))

  fastify.users.afterSignUp(async (user) => {
    try {
      await block.enroll(user)
    } catch (error) {
      // The mark stays on the record: the poller's sweep enrolls the user later.
      log.error({ err: error }, 'email: enrollment at sign-up failed; the sweep will retry')
    }
  })

  if (settings.poll === false) return
  const interval = settings.pollIntervalMs ?? EMAIL_POLL_INTERVAL_MS[config.scheduleProfile]
  const poller = new PeriodicTask({
    intervalMs: interval,
    run: async () => await block.tick(),
    onError: (error) => { log.error({ err: error }, 'email: poller tick failed') }
  })
  // The first tick soon after start, so a mail due during a restart is not a whole interval late.
  fastify.addHook('onReady', async () => { poller.start(0) })
  fastify.addHook('onClose', async () => { await poller.stop() })
}, { name: 'email', dependencies: ['config', 'mongo', 'users', 'analytics'] })
