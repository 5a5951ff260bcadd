import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { BILLING_REQUIRED_MESSAGE, createBillingService, type BillingService } from '../../services/billing.js'
import { BillingStore } from '../../stores/billing.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Present only when the billing block is configured (all four keys). */
    billing: BillingService
  }
  interface FastifyContextConfig {
    /** The billing gate lets this write through for a read-only user (billing routes themselves). */
    billingExempt?: boolean
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

function isGatedRequest (request: FastifyRequest): boolean {
  return request.userId !== '' && !SAFE_METHODS.has(request.method) && request.routeOptions.config.billingExempt !== true
}

// Billing (Stripe) when the block is configured; without it nothing is decorated, no gate runs,
// the billing routes are not registered and Stripe's SDK is never loaded.
export default fp(async function billing (fastify) {
  const block = fastify.config.billing
  if (block?.secretKey === undefined || block.webhookSecret === undefined || block.priceId === undefined) return
  const config = { ...block, secretKey: block.secretKey, webhookSecret: block.webhookSecret, priceId: block.priceId }
  const { createStripeVendor } = await import('../../clients/stripe.js')
  const store = new BillingStore(fastify.mongo.db)
  await store.ensureIndexes()
  const service = createBillingService({
    config,
    webUrl: fastify.config.web.url,
    vendor: createStripeVendor({ secretKey: config.secretKey, webhookSecret: config.webhookSecret, endpointBase: config.endpointBase }),
    store,
    users: fastify.users,
    log: fastify.log.child({ component: 'billing' })
  })
  fastify.decorate('billing', service)
  fastify.users.afterProven(async (proven) => { await service.claimTrial(proven) })

  // The gate: a write of a signed-in user whose trial or subscription ended is refused before its
  // body is read. Runs after every onRequest hook, so after the session was verified.
  fastify.addHook('preParsing', async (request, _reply, payload) => {
    if (isGatedRequest(request) && await service.isReadOnly(request.userId)) {
      throw new TypedHttpError(403, 'BILLING_REQUIRED', BILLING_REQUIRED_MESSAGE)
    }
    return payload
  })
}, { name: 'billing', dependencies: ['config', 'mongo', 'users'] })
