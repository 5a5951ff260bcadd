import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  BeginConnectionRequestSchema, BeginConnectionResponseSchema, RestartSyncResponseSchema, StopWatchesResponseSchema,
  SyncMetadataSchema, UserParamsSchema
} from '../../../../schemas/sync/index.js'
import { connectionSummary } from '../../../lib/connections/store.js'
import { SyncServiceError } from '../../../lib/errors.js'
import { requireActingUser } from '../../../lib/internal-request.js'
import { newCorrelationId, OAUTH_STATE_LIFETIME_MS, oauthRedirectUri, signOAuthState } from '../../../lib/oauth-state.js'
import { errorResponses } from '../../../lib/route-schemas.js'

const users: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('preHandler', async (request) => {
    requireActingUser(request, (request.params as { userId: string }).userId)
  })

  fastify.get('/:userId/metadata', {
    schema: {
      description: 'The user\'s connections with state, reason and import progress, and the service modes',
      params: UserParamsSchema,
      response: { 200: SyncMetadataSchema, ...errorResponses }
    }
  }, async (request) => {
    const { cloudMutationMode, execution } = fastify.syncConfig.sync
    const connections = await fastify.sync.connections.listByUser(request.params.userId)
    return { userId: request.params.userId, cloudMutationMode, execution, connections: connections.map(connectionSummary) }
  })

  fastify.post('/:userId/connections/begin', {
    schema: {
      description: 'Starts a provider authorization (connect or reconnect) and returns the URL to send the browser to. ' +
        'Refused with EXECUTION_PASSIVE when sync.execution is passive and MAINTENANCE (503) in maintenance mode.',
      params: UserParamsSchema,
      body: BeginConnectionRequestSchema,
      response: { 200: BeginConnectionResponseSchema, ...errorResponses }
    }
  }, async (request) => {
    const { userId } = request.params
    const { provider, intent } = request.body
    const settings = fastify.syncConfig.sync
    if (settings.cloudMutationMode === 'maintenance') {
      throw new SyncServiceError('MAINTENANCE', 'Connecting calendars is paused for maintenance; try again later')
    }
    if (settings.execution !== 'active') {
      throw new SyncServiceError('EXECUTION_PASSIVE', 'This Sync service runs passively (sync.execution) and cannot connect providers')
    }
    const adapter = fastify.sync.providers[provider]
    if (!adapter || !fastify.sync.credentials.available) {
      throw new SyncServiceError('PROVIDER_NOT_CONFIGURED', `Provider ${provider} is not configured on this Sync service`)
    }

    let connectionId = request.body.connectionId ?? null
    if (connectionId !== null) {
      const named = await fastify.sync.connections.get(connectionId)
      if (!named || named.userId !== userId || named.provider !== provider) {
        throw new SyncServiceError('CONNECTION_NOT_FOUND', 'The user has no such connection of this provider')
      }
    } else if (intent === 'reconnect') {
      const newest = (await fastify.sync.connections.listByUser(userId)).filter((connection) => connection.provider === provider).at(-1)
      if (!newest) throw new SyncServiceError('CONNECTION_NOT_FOUND', 'The user has no connection of this provider to reconnect')
      connectionId = newest._id.toHexString()
    }

    const correlationId = request.body.correlationId ?? newCorrelationId()
    const state = signOAuthState({
      userId,
      provider,
      connectionId,
      correlationId,
      expiresAtMs: fastify.syncClock.now().getTime() + OAUTH_STATE_LIFETIME_MS
    }, settings.internalAuthToken)
    return {
      authorizationUrl: adapter.authorizationUrl({ state, redirectUri: oauthRedirectUri(settings.callbackBaseUrl, provider) }),
      correlationId,
      // The callback recovers the intent from whether the signed state names a connection.
      intent: connectionId === null ? 'connect' as const : 'reconnect' as const,
      connectionId
    }
  })

  fastify.post('/:userId/watches/stop', {
    schema: {
      description: 'Stops every provider notification channel of the user (logout); succeeds with no connection',
      params: UserParamsSchema,
      response: { 200: StopWatchesResponseSchema, ...errorResponses }
    }
  }, async (request) => ({ stopped: await fastify.sync.engine.stopWatches(request.params.userId) }))

  fastify.post('/:userId/sync/restart', {
    schema: {
      description: 'Queues a fresh sync of each live connection of the user (after a connect)',
      params: UserParamsSchema,
      response: { 202: RestartSyncResponseSchema, ...errorResponses }
    }
  }, async (request, reply) => reply.code(202).send({ queued: await fastify.sync.engine.restart(request.params.userId) }))
}

export default users
