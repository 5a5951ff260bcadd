// The use cases of provider connections: connect (begin, then authorize from the OAuth callback),
// restart, provider writes, stopping watches at logout, and the jobs that import a connection,
// pull its calendars and write an own-data change to the provider. Each drives the connection
// state machine and appends the invalidations the backend turns into stream messages.
import type { FastifyBaseLogger } from 'fastify'
import type { SyncConfig } from '../../schemas/config.js'
import type {
  BeginConnectionRequest, BeginConnectionResponse, EventOperation, ImportOperation, Provider
} from '../../schemas/sync/index.js'
import type { Clock } from '../lib/clock.js'
import type { ConnectionRecord } from '../lib/connections/record.js'
import { isLive } from '../lib/connections/state-machine.js'
import type { ProviderCredential } from '../lib/credentials.js'
import { SyncServiceError } from '../lib/errors.js'
import { newCorrelationId, OAUTH_STATE_LIFETIME_MS, oauthRedirectUri, signOAuthState } from '../lib/oauth-state.js'
import { appendsCalendarInvalidation } from '../lib/pull-rule.js'
import type { PullOutcome } from '../lib/pull-rule.js'
import { ProviderAuthorizationRevokedError, ProviderCursorExpiredError } from '../lib/providers/port.js'
import type { ProviderContext, ProviderPort, ProviderRegistry } from '../lib/providers/port.js'
import type { CalendarStore } from '../stores/calendars.js'
import type { ChangeFeed } from '../stores/change-feed.js'
import type { ConnectionStore } from '../stores/connections.js'
import type { CredentialStore } from '../stores/credentials.js'
import type { JobQueue, JobRecord, JobType } from '../stores/job-queue.js'
import type { WatchStore } from '../stores/watches.js'
import type { JobHandler } from './job-worker.js'

export interface SyncEngineParts {
  connections: ConnectionStore
  calendars: CalendarStore
  credentials: CredentialStore
  feed: ChangeFeed
  queue: JobQueue
  watches: WatchStore
  providers: ProviderRegistry
  /** Read on every call, as the configuration holds them. */
  settings: Pick<SyncConfig['sync'], 'cloudMutationMode' | 'execution' | 'internalAuthToken' | 'callbackBaseUrl'>
  clock: Clock
  log: FastifyBaseLogger
}

/** The connection cannot be acted on: it is gone, or its credential is. The job has nothing to do. */
class NothingToDo extends Error {}

export const jobKeys = {
  import: (connectionId: string) => `import:${connectionId}`,
  pull: (connectionId: string) => `pull:${connectionId}`,
  providerWrite: (connectionId: string, eventId: string) => `write:${connectionId}:${eventId}`
}

export class SyncEngine {
  readonly #parts: SyncEngineParts

  constructor (parts: SyncEngineParts) {
    this.#parts = parts
  }

  handlers (): Record<JobType, JobHandler> {
    return {
      import: (job) => this.#guard(job, (connection, context, provider) => this.#import(job, connection, context, provider)),
      pull: (job) => this.#guard(job, (connection, context, provider) => this.#pull(connection, context, provider)),
      providerWrite: (job) => this.#guard(job, (connection, context, provider) => this.#write(job, connection, context, provider))
    }
  }

  /**
   * Starts a provider authorization and returns the URL to send the browser to. A reconnect names
   * its connection, or repairs the user's newest connection of the provider.
   */
  async begin (userId: string, request: BeginConnectionRequest): Promise<BeginConnectionResponse> {
    const { settings, providers, credentials, connections, clock } = this.#parts
    const { provider, intent } = request
    if (settings.cloudMutationMode === 'maintenance') {
      throw new SyncServiceError('MAINTENANCE', 'Connecting calendars is paused for maintenance; try again later')
    }
    if (settings.execution !== 'active') {
      throw new SyncServiceError('EXECUTION_PASSIVE', 'This Sync service runs passively (sync.execution) and cannot connect providers')
    }
    const adapter = providers[provider]
    if (!adapter || !credentials.available) {
      throw new SyncServiceError('PROVIDER_NOT_CONFIGURED', `Provider ${provider} is not configured on this Sync service`)
    }

    let connectionId = request.connectionId ?? null
    if (connectionId !== null) {
      const named = await connections.get(connectionId)
      if (!named || named.userId !== userId || named.provider !== provider) {
        throw new SyncServiceError('CONNECTION_NOT_FOUND', 'The user has no such connection of this provider')
      }
    } else if (intent === 'reconnect') {
      const newest = (await connections.listByUser(userId)).filter((connection) => connection.provider === provider).at(-1)
      if (!newest) throw new SyncServiceError('CONNECTION_NOT_FOUND', 'The user has no connection of this provider to reconnect')
      connectionId = newest._id.toHexString()
    }

    const correlationId = request.correlationId ?? newCorrelationId()
    const state = signOAuthState({
      userId,
      provider,
      connectionId,
      correlationId,
      expiresAtMs: clock.now().getTime() + OAUTH_STATE_LIFETIME_MS
    }, settings.internalAuthToken)
    return {
      authorizationUrl: adapter.authorizationUrl({ state, redirectUri: oauthRedirectUri(settings.callbackBaseUrl, provider) }),
      correlationId,
      // The callback recovers the intent from whether the signed state names a connection.
      intent: connectionId === null ? 'connect' : 'reconnect',
      connectionId
    }
  }

  /**
   * Stores a granted credential and starts the import: a new connection for `connect`, the named
   * one (repair) for a reconnect. The OAuth callback calls this.
   */
  async authorize (userId: string, provider: Provider, credential: ProviderCredential, connectionId: string | null): Promise<ConnectionRecord> {
    const { connections, credentials, queue } = this.#parts
    const existing = connectionId === null ? null : await connections.get(connectionId)
    if (connectionId !== null && (!existing || existing.userId !== userId || existing.provider !== provider)) {
      throw new Error('the connection to reconnect is not this user\'s connection of this provider')
    }
    const record = existing ?? await connections.create(userId, provider)
    const id = record._id.toHexString()
    await credentials.save(id, userId, credential)
    const authorized = await connections.apply(id, { type: 'authorized' })
    const operation: ImportOperation = existing ? 'repair' : 'full'
    await queue.enqueue({ type: 'import', coalescingKey: jobKeys.import(id), userId, connectionId: id, payload: { operation } })
    return authorized ?? record
  }

  /** Queues the next step for each live connection of a user; returns how many are queued. */
  async restart (userId: string): Promise<number> {
    const { connections, queue } = this.#parts
    let queued = 0
    for (const connection of await connections.listByUser(userId)) {
      if (!isLive(connection.state)) continue
      const id = connection._id.toHexString()
      const type = connection.state === 'importing' ? 'import' : 'pull'
      await queue.enqueue({ type, coalescingKey: type === 'import' ? jobKeys.import(id) : jobKeys.pull(id), userId, connectionId: id, payload: type === 'import' ? { operation: 'full' } : {} })
      queued++
    }
    return queued
  }

  async queueProviderWrite (connection: ConnectionRecord, change: { eventId: string, operation: EventOperation, calendarId: string | null }): Promise<void> {
    const id = connection._id.toHexString()
    await this.#parts.queue.enqueue({
      type: 'providerWrite',
      coalescingKey: jobKeys.providerWrite(id, change.eventId),
      userId: connection.userId,
      connectionId: id,
      payload: { eventId: change.eventId, operation: change.operation, ...(change.calendarId === null ? {} : { calendarId: change.calendarId }) }
    })
  }

  /** Stops every notification channel of a user (logout); succeeds with no connection at all. */
  async stopWatches (userId: string): Promise<number> {
    const { watches, connections, credentials, providers, log } = this.#parts
    let stopped = 0
    for (const watch of await watches.listByUser(userId)) {
      try {
        const connection = await connections.get(watch.connectionId)
        const credential = connection ? await credentials.load(watch.connectionId) : null
        const provider = connection ? providers[connection.provider] : undefined
        if (connection && credential && provider) {
          await provider.unwatch({ connectionId: watch.connectionId, userId, credential }, { channelId: watch._id, resourceId: watch.resourceId })
        }
      } catch (error) {
        // The channel expires at the provider on its own; a failed stop must not keep the user's logout from finishing.
        log.warn({ channelId: watch._id, err: error }, 'stopping a provider watch failed; the channel will lapse at its expiration')
      }
      await watches.remove(watch._id)
      stopped++
    }
    return stopped
  }

  async #guard (
    job: JobRecord,
    work: (connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort) => Promise<void>
  ): Promise<void> {
    const { connections, credentials, providers, log } = this.#parts
    const connectionId = job.connectionId
    const connection = connectionId === null ? null : await connections.get(connectionId)
    if (!connection || connectionId === null || !isLive(connection.state)) return
    const provider = providers[connection.provider]
    if (!provider) throw new Error(`no adapter is configured for provider ${connection.provider}`)
    const credential = await credentials.load(connectionId)
    if (!credential) {
      // A live connection without a credential cannot act for the user: it needs a reconnect.
      await connections.apply(connectionId, { type: 'grantRevoked' })
      return
    }
    try {
      await work(connection, { connectionId, userId: connection.userId, credential }, provider)
    } catch (error) {
      if (error instanceof NothingToDo) return
      if (error instanceof ProviderAuthorizationRevokedError) {
        log.warn({ connectionId, jobId: job._id.toHexString() }, 'provider grant revoked; connection needs the user')
        await connections.apply(connectionId, { type: 'grantRevoked' })
        return
      }
      if (job.type !== 'providerWrite') await connections.apply(connectionId, { type: 'readFailed' })
      throw error
    }
  }

  async #import (job: JobRecord, connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort): Promise<void> {
    if (connection.state !== 'importing') throw new NothingToDo()
    const { calendars, connections, feed, queue, clock } = this.#parts
    const operation: ImportOperation = job.payload.operation === 'repair' ? 'repair' : 'full'
    const found = await provider.listCalendars(context)
    const counts = { calendarsDone: 0, calendarsTotal: found.length, eventsImported: 0 }
    await connections.recordImport(connection, { phase: 'progress', operation, counts: { ...counts } })
    for (const calendar of found) {
      const imported = await provider.importCalendar(context, calendar.calendarId)
      await calendars.promoteImport({
        connectionId: context.connectionId,
        userId: context.userId,
        calendarId: calendar.calendarId,
        name: calendar.name,
        cursor: imported.cursor,
        expiryStreak: 0
      }, clock.now())
      counts.calendarsDone++
      counts.eventsImported += imported.eventCount
      // An initial import always tells the user's tabs (pull rule).
      await feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
      await connections.recordImport(connection, { phase: 'progress', operation, counts: { ...counts } })
    }
    await connections.recordImport(connection, { phase: 'completed', operation, counts: { ...counts } })
    await connections.apply(context.connectionId, { type: 'importFinished' })
    await queue.enqueue({ type: 'pull', coalescingKey: jobKeys.pull(context.connectionId), userId: context.userId, connectionId: context.connectionId })
  }

  async #pull (connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort): Promise<void> {
    if (connection.state === 'importing') throw new NothingToDo()
    const { calendars, connections, feed, clock } = this.#parts
    const bootstrap = connection.state === 'catchingUp'
    for (const calendar of await calendars.listByConnection(context.connectionId)) {
      let outcome: PullOutcome
      try {
        const pulled = await provider.pullChanges(context, calendar.calendarId, calendar.cursor)
        await calendars.recordPull(calendar, pulled.cursor, clock.now())
        outcome = {
          operation: bootstrap ? 'bootstrapCatchUp' : 'incremental',
          changed: pulled.changed,
          deleted: pulled.deleted,
          expiryStreakCleared: calendar.expiryStreak > 0,
          generationPromoted: false
        }
      } catch (error) {
        if (!(error instanceof ProviderCursorExpiredError)) throw error
        // The provider forgot our cursor: read the calendar again and promote the new generation.
        const imported = await provider.importCalendar(context, calendar.calendarId)
        await calendars.promoteImport({ ...calendar, cursor: imported.cursor, expiryStreak: calendar.expiryStreak + 1 }, clock.now())
        outcome = { operation: 'repair', changed: imported.eventCount, deleted: 0, expiryStreakCleared: false, generationPromoted: true }
      }
      if (appendsCalendarInvalidation(outcome)) {
        await feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
      }
    }
    await connections.apply(context.connectionId, { type: 'pullSucceeded' })
  }

  async #write (job: JobRecord, _connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort): Promise<void> {
    const { eventId, operation, calendarId } = job.payload
    if (eventId === undefined || (operation !== 'create' && operation !== 'update' && operation !== 'delete')) {
      throw new NothingToDo()
    }
    await provider.writeEvent(context, { eventId, operation, calendarId: calendarId ?? null })
  }
}
