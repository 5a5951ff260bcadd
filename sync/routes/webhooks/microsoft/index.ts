// Microsoft Graph change and lifecycle notifications (both URLs of a subscription point here).
// Public: every notification is verified by its subscription's clientState, compared in constant
// time with the digest kept for it; one that fails changes nothing.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MicrosoftWebhookQuerySchema, SyncErrorBodySchema } from '../../../../schemas/sync/index.js'
import { errorBody } from '../../../lib/errors.js'

const microsoft: FastifyPluginAsyncTypebox = async (fastify) => {
  // The handshake posts text/plain (its body is not read); notifications are JSON.
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: 1024 * 1024 }, (_request, body, done) => {
    try {
      done(null, JSON.parse(String(body)) as unknown)
    } catch {
      done(null, undefined)
    }
  })
  fastify.addContentTypeParser('*', { bodyLimit: 64 * 1024 }, (_request, _payload, done) => { done(null, undefined) })

  fastify.post('/', {
    schema: {
      description: 'Microsoft Graph notifications: the validation handshake (`validationToken` echoed as text/plain), change ' +
        'notifications (one pull of the calendar queued) and lifecycle notifications (`reauthorizationRequired` renews, ' +
        '`subscriptionRemoved` recreates, `missed` pulls); a wrong clientState changes nothing',
      querystring: MicrosoftWebhookQuerySchema,
      response: { 200: Type.String(), 202: Type.Unsafe<undefined>(Type.Null({ description: 'Accepted; no body' })), 400: SyncErrorBodySchema }
    }
  }, async (request, reply) => {
    const token = request.query.validationToken
    // Graph waits 10 seconds at most for the token back, before the subscription exists.
    if (token !== undefined) return await reply.code(200).type('text/plain; charset=utf-8').send(token)
    const body = request.body as unknown
    const parsed = typeof body === 'object' && body !== null && Array.isArray((body as { value?: unknown }).value)
      ? (body as { value: unknown[] }).value
      : null
    if (parsed === null) return await reply.code(400).send(errorBody('VALIDATION', 'Neither a validation handshake nor a notification list'))
    for (const item of parsed) {
      if (typeof item !== 'object' || item === null) continue
      const notification = item as Record<string, unknown>
      const subscriptionId = notification['subscriptionId']
      if (typeof subscriptionId !== 'string' || subscriptionId === '' || subscriptionId.length > 200) continue
      const clientState = typeof notification['clientState'] === 'string' ? notification['clientState'] : ''
      const lifecycle = typeof notification['lifecycleEvent'] === 'string' ? notification['lifecycleEvent'] : null
      const changeType = typeof notification['changeType'] === 'string' ? notification['changeType'] : 'updated'
      // Each item is checked on its own: one forged item does not spoil the real ones beside it.
      await fastify.syncEngine.notify('microsoft', { channelId: subscriptionId, token: clientState, state: lifecycle ?? changeType })
    }
    // Graph counts anything but a 2xx as a failed delivery and retries; a refused item is not retried.
    return await reply.code(202).send(undefined)
  })
}

export default microsoft
