import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  BeginConnectionRequestSchema, SyncBeginConnectionResponseSchema, CalDavConnectRequestSchema, CalDavConnectResponseSchema, CredentialHandOverResultSchema, CredentialHandOverSchema,
  RestartSyncResponseSchema, StopWatchesResponseSchema, SyncCalendarListSchema, SyncErrorBodySchema, SyncMetadataSchema, UserParamsSchema
} from '../../../../schemas/sync/index.js'
import { requireActingUser } from '../../../lib/acting-user.js'
import { connectionSummary } from '../../../lib/connections/record.js'
import { errorResponses } from '../../../lib/route-schemas.js'

const users: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('preHandler', async (request) => {
    requireActingUser(request.syncActingUser, (request.params as { userId: string }).userId)
  })

  fastify.get('/:userId/metadata', {
    schema: {
      description: 'The user\'s connections with state, reason, import progress, writes waiting for the provider and changes it does not have, and the service modes',
      params: UserParamsSchema,
      response: { 200: SyncMetadataSchema, ...errorResponses }
    }
  }, async (request) => {
    const { cloudMutationMode, execution } = fastify.syncConfig.sync
    const connections = await fastify.syncConnections.listByUser(request.params.userId)
    const ids = connections.map((connection) => connection._id.toHexString())
    const [pending, unsynced] = await Promise.all([fastify.syncJobQueue.pendingWrites(ids), fastify.syncWriteIssues.countByConnection(ids)])
    return {
      userId: request.params.userId,
      cloudMutationMode,
      execution,
      connections: connections.map((connection) => {
        const id = connection._id.toHexString()
        return connectionSummary(connection, pending.get(id), unsynced.get(id))
      })
    }
  })

  fastify.get('/:userId/calendars', {
    schema: {
      description: 'The provider calendars of the user\'s connections (not the disconnected ones): name, colour, primary',
      params: UserParamsSchema,
      response: { 200: SyncCalendarListSchema, ...errorResponses }
    }
  }, async (request) => {
    const connections = (await fastify.syncConnections.listByUser(request.params.userId)).filter((connection) => connection.state !== 'disconnected')
    const calendars = await Promise.all(connections.map(async (connection) => {
      const rows = await fastify.syncCalendars.listByConnection(connection._id.toHexString())
      return rows.map((row) => ({ connectionId: row.connectionId, provider: connection.provider, calendarId: row.calendarId, name: row.name, color: row.color ?? null, primary: row.primary, ...(row.defaultReminders === undefined ? {} : { defaultReminders: row.defaultReminders }) }))
    }))
    return { calendars: calendars.flat() }
  })

  fastify.post('/:userId/connections/begin', {
    schema: {
      description: 'Starts a provider authorization (connect or reconnect) and returns the URL to send the browser to. ' +
        'Refused with EXECUTION_PASSIVE when sync.execution is passive and MAINTENANCE (503) in maintenance mode.',
      params: UserParamsSchema,
      body: BeginConnectionRequestSchema,
      response: { 200: SyncBeginConnectionResponseSchema, ...errorResponses }
    }
  }, async (request) => await fastify.syncConnect.begin(request.params.userId, request.body))

  fastify.post('/:userId/connections/caldav', {
    schema: {
      description: 'Connects (or repairs) a CalDAV account with a server URL, user name and app password: checked at the server ' +
        'before anything is stored (422 CALDAV_CONNECT_FAILED, one answer whatever failed), stored encrypted, the import queued; ' +
        'RATE_LIMITED (429) while two connects of the user are under way',
      params: UserParamsSchema,
      body: CalDavConnectRequestSchema,
      response: { 200: CalDavConnectResponseSchema, 422: SyncErrorBodySchema, 429: SyncErrorBodySchema, ...errorResponses }
    }
  }, async (request) => await fastify.syncConnect.connectCalDav(request.params.userId, request.body))

  fastify.post('/:userId/credentials', {
    schema: {
      description: 'A provider credential the backend obtained (provider sign-in, or connect from a signed-in session): stored ' +
        'encrypted; the connection is created, repaired or kept as the mode says, and its import, repair or pull queued',
      params: UserParamsSchema,
      body: CredentialHandOverSchema,
      response: { 200: CredentialHandOverResultSchema, ...errorResponses }
    }
  }, async (request) => await fastify.syncEngine.handOverCredential(request.params.userId, request.body))

  fastify.post('/:userId/watches/stop', {
    schema: {
      description: 'Stops every provider notification channel of the user (logout); succeeds with no connection',
      params: UserParamsSchema,
      response: { 200: StopWatchesResponseSchema, ...errorResponses }
    }
  }, async (request) => ({ stopped: await fastify.syncEngine.stopWatches(request.params.userId) }))

  fastify.post('/:userId/sync/restart', {
    schema: {
      description: 'Queues a fresh sync of each live connection of the user (after a connect)',
      params: UserParamsSchema,
      response: { 202: RestartSyncResponseSchema, ...errorResponses }
    }
  }, async (request, reply) => reply.code(202).send({ queued: await fastify.syncEngine.restart(request.params.userId) }))
}

export default users
