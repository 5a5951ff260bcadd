import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import UserMetadata from 'supertokens-node/recipe/usermetadata'
import type { SessionContainer } from 'supertokens-node/recipe/session'
import type { SyncClient } from '../../clients/sync.js'
import type { UserMetadataChangedMessage } from '../../schemas/server-message.js'
import { SECURITY, SessionRefusedResponse, sessionResponses } from '../../schemas/responses.js'

// Each half of the replay is optional: a stream that cannot read one of them right now still
// opens, says null for that half, and the next reconnect replays it again.
async function sessionMetadata (userId: string, log: FastifyBaseLogger): Promise<Record<string, unknown> | null> {
  try {
    const { metadata } = await UserMetadata.getUserMetadata(userId)
    return metadata as Record<string, unknown>
  } catch (error) {
    log.warn({ err: error }, 'session metadata unavailable for the stream replay')
    return null
  }
}

async function syncMetadata (syncClient: SyncClient, userId: string, log: FastifyBaseLogger) {
  try {
    return await syncClient.metadata(userId)
  } catch (error) {
    log.warn({ err: error }, 'Sync metadata unavailable for the stream replay')
    return null
  }
}

function sessionOf (request: FastifyRequest): SessionContainer | undefined {
  return (request as FastifyRequest & { session?: SessionContainer }).session
}

const stream: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/stream', {
    config: { liveSession: true },
    schema: {
      description: 'Server-sent events: a `retry: 5000` hint, then `message` events whose data is a JSON ServerMessage, ' +
        '`: keepalive` comments every 15 s, and a planned close when the access token expires, after 20 minutes at most ' +
        '(reconnect with a fresh token); a user\'s 21st stream on one server closes their oldest. ' +
        'The first message replays userMetadataChanged.',
      tags: ['events'],
      security: SECURITY.session,
      response: {
        // Only the stream is text/event-stream; every refusal is JSON.
        200: {
          description: 'The stream: `retry:`, `message` events with a JSON ServerMessage, `: keepalive` comments',
          content: { 'text/event-stream': { schema: Type.String() } }
        },
        ...sessionResponses,
        // The session library answers 401 with its own body (`{ message }`), and so does this route.
        401: SessionRefusedResponse
      }
    }
  }, async (request, reply) => {
    const session = sessionOf(request)
    const userId = request.userId
    if (session === undefined || userId === '') {
      // The folder's session hook guarantees both; never stream for nobody.
      return await reply.code(401).send({ message: 'unauthorised' })
    }
    // The stream lives no longer than the access token it was opened with: the client reconnects
    // with a fresh one, which proves the session is still alive.
    const { exp } = session.getAccessTokenPayload() as { exp?: unknown }
    const lifetimeMs = typeof exp === 'number' ? exp * 1000 - Date.now() : undefined
    reply.hijack()
    // Headers set by earlier hooks (CORS, security headers) would be lost with the reply taken over.
    // What is published to it before the replay waits for it: the replay is the first message.
    const opened = fastify.sse.open(reply.raw, { userId, sessionHandle: session.getHandle(), headers: reply.getHeaders(), lifetimeMs, replayFirst: true })
    if (opened === undefined) return

    let replay: UserMetadataChangedMessage | undefined
    try {
      // Replay after the feed position is known, so nothing between the replay and the next poll is lost.
      const following = await fastify.changeFeed.ready(userId)
      if (!following) request.log.warn({ userId }, 'stream opened before its change feed could be followed')
      if (opened.closed) return
      const [metadata, sync] = await Promise.all([sessionMetadata(userId, request.log), syncMetadata(fastify.syncClient, userId, request.log)])
      replay = { type: 'userMetadataChanged', session: { userId, metadata }, sync }
    } finally {
      fastify.sse.replay(opened, replay)
    }
  })
}

export default stream
