import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BillingStatusSchema, RedirectUrlSchema, WebhookReceiptSchema } from '../../schemas/billing.js'
import { SECURITY, anyRouteResponses, errorResponse, sessionResponses } from '../../schemas/responses.js'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { WebhookSignatureError } from '../../lib/billing-vendor.js'
import { Counter } from '../../lib/metrics.js'
import { metricsOf } from '../../plugins/external/metrics.js'

// /api/billing: only when the billing block is configured (the plugin decorates `billing`);
// otherwise nothing is registered and every path here is a 404.
const billingRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  if (!fastify.hasDecorator('billing')) return
  const errors = {
    403: errorResponse('BILLING_REQUIRED or another refusal of this account\'s billing state'),
    404: errorResponse('No such billing object for this account'),
    409: errorResponse('SUBSCRIPTION_EXISTS, NO_SUBSCRIPTION or NOT_TRIALING: the subscription is not in a state this action applies to'),
    503: errorResponse('BILLING_UNAVAILABLE: Stripe cannot be reached; try again after Retry-After')
  }
  const session = { onRequest: fastify.requireSession, config: { billingExempt: true } }

  fastify.get('/status', {
    ...session,
    schema: { description: 'The signed-in user\'s billing state; a first visit starts the card-less trial', tags: ['billing'], security: SECURITY.session, response: { 200: BillingStatusSchema, ...errors, ...sessionResponses } }
  }, async (request) => await fastify.billing.status(request.userId))

  fastify.post('/checkout', {
    ...session,
    schema: { description: 'A Stripe Checkout session (subscription mode, the configured price) to subscribe; 409 when a subscription exists', tags: ['billing'], security: SECURITY.session, response: { 200: RedirectUrlSchema, ...errors, ...sessionResponses } }
  }, async (request) => ({ url: await fastify.billing.startCheckout(request.userId) }))

  fastify.post('/payment-method', {
    ...session,
    schema: { description: 'A Stripe Checkout setup session to replace the subscription\'s card (after a failed payment)', tags: ['billing'], security: SECURITY.session, response: { 200: RedirectUrlSchema, ...errors, ...sessionResponses } }
  }, async (request) => ({ url: await fastify.billing.startPaymentFix(request.userId) }))

  fastify.post('/subscription/cancel', {
    ...session,
    schema: { description: 'Cancel at the end of the current period (access stays until then)', tags: ['billing'], security: SECURITY.session, response: { 200: BillingStatusSchema, ...errors, ...sessionResponses } }
  }, async (request) => await fastify.billing.setCancelAtPeriodEnd(request.userId, true))

  fastify.post('/subscription/resume', {
    ...session,
    schema: { description: 'Undo a cancellation at period end', tags: ['billing'], security: SECURITY.session, response: { 200: BillingStatusSchema, ...errors, ...sessionResponses } }
  }, async (request) => await fastify.billing.setCancelAtPeriodEnd(request.userId, false))

  fastify.post('/trial/end', {
    ...session,
    schema: { description: 'End the subscription\'s trial now: the first paid period starts and is charged; 409 NOT_TRIALING without a subscription in its trial', tags: ['billing'], security: SECURITY.session, response: { 200: BillingStatusSchema, ...errors, ...sessionResponses } }
  }, async (request) => await fastify.billing.endTrial(request.userId))

  // Stripe's deliveries: no session; the signature is checked over the bytes exactly as sent, so
  // this scope reads every body as a Buffer and no JSON parser touches it first.
  const webhooks = new Counter({
    name: 'billing_webhooks_total',
    help: 'Stripe webhook deliveries, by outcome (applied, duplicate, signature_invalid, failed)',
    labelNames: ['outcome'],
    registers: [metricsOf(fastify)]
  })
  await fastify.register(async function stripeWebhook (scope) {
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => { done(null, body) })
    scope.post('/webhook', {
      schema: {
        description: 'Stripe webhook endpoint: Stripe-Signature verified (5-minute tolerance), de-duplicated by event id, state re-fetched from Stripe',
        tags: ['billing'],
        security: SECURITY.none,
        response: { 200: WebhookReceiptSchema, 400: errorResponse('The signature, its timestamp (5 minutes) or the event is not valid: nothing is applied'), ...anyRouteResponses }
      }
    }, async (request) => {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
      const signature = request.headers['stripe-signature']
      try {
        const { duplicate } = await fastify.billing.receiveWebhook(body, typeof signature === 'string' ? signature : undefined, request.log)
        webhooks.inc({ outcome: duplicate ? 'duplicate' : 'applied' })
        return duplicate ? { received: true as const, duplicate } : { received: true as const }
      } catch (error) {
        webhooks.inc({ outcome: error instanceof WebhookSignatureError ? 'signature_invalid' : 'failed' })
        if (error instanceof WebhookSignatureError) {
          request.log.warn({ reason: error.message }, 'billing webhook refused: signature')
          throw new TypedHttpError(400, 'WEBHOOK_SIGNATURE_INVALID', 'The Stripe-Signature header does not verify this body')
        }
        throw error
      }
    })
  })
}

export default billingRoutes
