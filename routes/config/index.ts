import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppConfigResponseSchema } from '../../schemas/app-config.js'
import { appConfigFor } from '../../lib/app-config.js'
import { SECURITY, sessionResponses } from '../../schemas/responses.js'

// What the web client needs at run time; it changes only with the configuration, so it is built once.
const appConfig: FastifyPluginAsyncTypebox = async (fastify) => {
  const answer = appConfigFor(fastify.config)
  fastify.get('/', {
    onRequest: fastify.requireSession,
    schema: {
      description: 'Run-time configuration for the web client: sign-in providers offered, places lookup, analytics, and billing\'s publishable key, trial length and price when billing is configured',
      tags: ['config'],
      security: SECURITY.session,
      response: { 200: AppConfigResponseSchema, ...sessionResponses }
    }
  }, async () => {
    // The price shown lives with Stripe (billing.priceId); the rest of the answer never changes.
    if (answer.billing === undefined || !fastify.hasDecorator('billing')) return answer
    const price = await fastify.billing.price()
    return price === undefined ? answer : { ...answer, billing: { ...answer.billing, price } }
  })
}

export default appConfig
