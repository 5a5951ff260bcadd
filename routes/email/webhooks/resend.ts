import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SECURITY, anyRouteResponses, errorResponse } from '../../../schemas/responses.js'
import { ResendWebhookHeaders, WebhookAck } from '../../../schemas/email.js'
import { TypedHttpError } from '../../../lib/error-bodies.js'

/** Resend's events are a few kilobytes. */
const WEBHOOK_BODY_LIMIT = 256 * 1024

// Resend's webhook (delivered, bounced, complained): no session; the Svix signature over the raw
// body is the proof, so the body is read as bytes here, before any JSON parser touches it.
const resendWebhook: FastifyPluginAsyncTypebox = async (fastify) => {
  const email = fastify.email
  if (email === null || !email.acceptsWebhooks) return
  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) => { done(null, body) })

  fastify.post('/resend', {
    schema: {
      description: 'Resend\'s webhook: a bounce or complaint stops the user\'s mails; replays are answered and not applied again',
      tags: ['email'],
      headers: ResendWebhookHeaders,
      security: SECURITY.none,
      response: { 200: WebhookAck, 401: errorResponse('The signature, its timestamp (5 minutes) or the event is not valid: nothing is applied'), 415: errorResponse('Not a JSON body'), ...anyRouteResponses }
    }
  }, async (request) => {
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
    const outcome = await email.receiveWebhook(raw, request.headers)
    if (outcome.status === 'refused') {
      request.log.warn({ reason: outcome.reason }, 'email webhook refused')
      throw new TypedHttpError(401, 'WEBHOOK_SIGNATURE_INVALID', `The webhook is not signed by the mail vendor: ${outcome.reason}`)
    }
    return outcome.status === 'duplicate' ? { received: true as const, duplicate: true } : { received: true as const }
  })
}

export default resendWebhook
