// Provider change notifications. Public: each is verified by its channel's token, compared in
// constant time with the digest kept for the channel; one that fails changes nothing.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { GoogleWebhookHeadersSchema, SyncErrorBodySchema } from '../../../schemas/sync/index.js'
import { errorBody } from '../../lib/errors.js'

// Google numbers a channel's messages in increasing order (not consecutively); a redelivery keeps
// its number. A value that is not a plain number is ignored rather than refused: it only de-duplicates.
function messageNumber (header: string | undefined): { messageNumber?: number } {
  if (header === undefined || !/^\d{1,15}$/.test(header)) return {}
  return { messageNumber: Number(header) }
}

const webhooks: FastifyPluginAsyncTypebox = async (fastify) => {
  // Google posts an empty body; whatever body comes is not read.
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('*', { bodyLimit: 64 * 1024 }, (_request, _payload, done) => { done(null, undefined) })

  fastify.post('/google', {
    schema: {
      description: 'Google Calendar push notification: `sync` is acknowledged, `exists`/`not_exists` queue one pull of the calendar ' +
        '(a burst coalesces, and a message number already handled queues nothing); a wrong channel token or resource answers 401 and changes nothing; an unknown channel is stopped; ' +
        'a user inactive for longer than sync.inactiveUserDays has the channel stopped and nothing pulled',
      headers: GoogleWebhookHeadersSchema,
      response: { 204: Type.Null(), 401: SyncErrorBodySchema }
    }
  }, async (request, reply) => {
    const headers = request.headers
    const outcome = await fastify.syncEngine.notify('google', {
      channelId: headers['x-goog-channel-id'],
      token: headers['x-goog-channel-token'] ?? '',
      resourceId: headers['x-goog-resource-id'],
      state: headers['x-goog-resource-state'],
      ...messageNumber(headers['x-goog-message-number'])
    })
    if (outcome.result === 'refused') return reply.code(401).send(errorBody('UNAUTHORIZED', 'The notification does not match its channel'))
    return reply.code(204).send(null)
  })
}

export default webhooks
