// What every job of a connection shares: the provider and credential to act with, the guard that
// drives the connection's state from how the provider answered, and the backend that takes what a
// provider holds.
import type { FastifyBaseLogger } from 'fastify'
import type { SyncConfig } from '../../schemas/config.js'
import { grantIsRefreshToken } from '../../lib/identity-providers.js'
import { isDatabaseUnavailableError } from '../../stores/database.js'
import type { Provider, ProviderEvent, ProviderEventBatch, ProviderEventBatchResult } from '../../schemas/sync/index.js'
import type { Clock } from '../lib/clock.js'
import type { ConnectionRecord } from '../lib/connections/record.js'
import { isLive } from '../lib/connections/state-machine.js'
import type { ProviderCredential } from '../lib/credentials.js'
import { ProviderAuthorizationRevokedError, ProviderUnavailableError } from '../lib/providers/port.js'
import { PROVIDER_BACKOFF, WaitForProviderError } from '../lib/jobs/rules.js'
import type { ProviderCalendar, ProviderContext, ProviderPort, ProviderRegistry } from '../lib/providers/port.js'
import type { BackendPort } from '../clients/backend.js'
import type { HeldWriteStore } from '../stores/held-writes.js'
import type { WrittenVersionStore } from '../stores/written-versions.js'
import type { WriteIssueStore } from '../stores/write-issues.js'
import type { CredentialHandOverStore } from '../stores/credential-hand-overs.js'
import type { CalendarRecord, CalendarStore } from '../stores/calendars.js'
import type { ChangeFeed } from '../stores/change-feed.js'
import type { ConnectionStore } from '../stores/connections.js'
import type { CredentialStore } from '../stores/credentials.js'
import type { JobQueue, JobRecord } from '../stores/job-queue.js'
import type { UserActivityStore } from '../stores/user-activity.js'
import { WatchStore } from '../stores/watches.js'
import { markOwnWrites } from '../lib/own-writes.js'

/** What the use cases of connections are built from. */
export interface SyncEngineParts {
  connections: ConnectionStore
  calendars: CalendarStore
  credentials: CredentialStore
  feed: ChangeFeed
  queue: JobQueue
  watches: WatchStore
  activity: UserActivityStore
  handOvers: CredentialHandOverStore
  held: HeldWriteStore
  /** The provider's version of each event as our own last write left it. */
  written: WrittenVersionStore
  /** Events whose change the provider does not have. */
  writeIssues: WriteIssueStore
  providers: ProviderRegistry
  /** The backend's provider-events endpoints; null when the configuration names no backend. */
  backend: BackendPort | null
  /** Read on every call, as the configuration holds them. */
  settings: Pick<SyncConfig['sync'], 'cloudMutationMode' | 'execution' | 'internalAuthToken' | 'callbackBaseUrl' | 'inactiveUserDays'>
  clock: Clock
  log: FastifyBaseLogger
  /** Source of the jitter of the provider's next try, in [0, 1). */
  random?: () => number
  /** Events an import gathers from its pages before handing them over; default IMPORT_BATCH_EVENTS (calendar-reads.ts). */
  importBatchEvents?: number
}

/** The connection cannot be acted on: it is gone, or its credential is. The job has nothing to do. */
export class NothingToDo extends Error {}

/** The coalescing keys of a connection's jobs: one waiting job per key. */
export const jobKeys = {
  import: (connectionId: string) => `import:${connectionId}`,
  pull: (connectionId: string) => `pull:${connectionId}`,
  /** One calendar's pull: a burst of notifications for it coalesces into one job. */
  calendarPull: (connectionId: string, calendarId: string) => `pull:${connectionId}:${calendarId}`,
  providerWrite: (connectionId: string, eventId: string) => `write:${connectionId}:${eventId}`
}

/** A stored calendar as the provider port names it. */
export function calendarOf (record: CalendarRecord): ProviderCalendar {
  return { calendarId: record.calendarId, name: record.name, primary: record.primary, timeZone: record.timeZone, ...(typeof record.color === 'string' ? { color: record.color } : {}), ...(record.defaultReminders === undefined ? {} : { defaultReminders: record.defaultReminders }) }
}

/** The provider and credential to act for a connection, and how a job's outcome moves the connection's state. */
export class ConnectionJobs {
  readonly #parts: SyncEngineParts

  constructor (parts: SyncEngineParts) {
    this.#parts = parts
  }

  /**
   * The backend revokes the user's sessions for a dead grant (specification, States and
   * transitions: session / invalid_grant), also when no stream of the user would read the feed.
   * The connection's state already says it; a backend that cannot be told now learns it from the
   * feed when the user's next stream opens.
   */
  async tellBackendOfRevocation (connection: ConnectionRecord): Promise<void> {
    const backend = this.#parts.backend
    if (backend === null || !grantIsRefreshToken(connection.provider)) return
    try {
      await backend.grantRevoked({ userId: connection.userId, provider: connection.provider, connectionId: connection._id.toHexString() })
    } catch (error) {
      this.#parts.log.warn({ connectionId: connection._id.toHexString(), err: error }, 'the backend was not told of a revoked grant; it learns it from the change feed')
    }
  }

  /** The provider and context to act for a connection; null without an adapter or a credential. */
  async context (connection: ConnectionRecord): Promise<{ provider: ProviderPort, context: ProviderContext } | null> {
    const connectionId = connection._id.toHexString()
    const provider = this.#parts.providers[connection.provider]
    const credential = provider ? await this.#parts.credentials.load(connectionId) : null
    if (!provider || !credential) return null
    return { provider, context: this.providerContext(connectionId, connection.userId, credential) }
  }

  /** A provider that replaces the credential while acting (rotating refresh tokens) stores it here. */
  providerContext (connectionId: string, userId: string, credential: ProviderCredential): ProviderContext {
    const credentials = this.#parts.credentials
    return { connectionId, userId, credential, saveCredential: async (renewed) => { await credentials.save(connectionId, userId, renewed) } }
  }

  /**
   * Runs a job of a live connection with its provider and credential, and moves the connection's
   * state by how the provider answered: a dead grant needs the user, an unavailable provider
   * delays the connection and its other jobs, an answer after an outage releases them.
   */
  async guard (
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
    const retryAt = connection.providerRetryAt ?? null
    if (retryAt !== null && retryAt > this.#parts.clock.now()) {
      // Another job of the connection met the provider unavailable and tries it again at retryAt;
      // this one waits behind it (released at once when it succeeds) instead of asking a provider that is down.
      throw new WaitForProviderError(`waiting for ${connection.provider} to answer again`, new Date(retryAt.getTime() + PROVIDER_BACKOFF.capMs))
    }
    try {
      await work(connection, this.providerContext(connectionId, connection.userId, credential), provider)
    } catch (error) {
      if (error instanceof NothingToDo) return
      // Our own database failing is not the provider's: the connection's state stays as it is,
      // and the job retries on its ladder.
      if (isDatabaseUnavailableError(error)) throw error
      if (error instanceof ProviderAuthorizationRevokedError) {
        log.warn({ connectionId, jobId: job._id.toHexString() }, 'provider grant revoked; connection needs the user')
        await connections.apply(connectionId, { type: 'grantRevoked' })
        await this.tellBackendOfRevocation(connection)
        return
      }
      if (error instanceof ProviderUnavailableError) await this.#waitForProvider(job, connectionId, error)
      if (job.type !== 'providerWrite') await connections.apply(connectionId, { type: 'readFailed' })
      throw error
    }
    await this.#providerAnswered(job, connection)
  }

  /**
   * The provider is unavailable: the connection is delayed (its status tells the user), the job
   * tries again when the provider's health says, and the connection's other jobs wait behind it.
   */
  async #waitForProvider (job: JobRecord, connectionId: string, error: ProviderUnavailableError): Promise<never> {
    const { connections, queue, random } = this.#parts
    await connections.apply(connectionId, { type: 'readFailed' })
    const retryAt = await connections.recordUnavailable(connectionId, error.retryAfterMs, random ?? Math.random)
    await queue.holdConnection(connectionId, job._id, new Date(retryAt.getTime() + PROVIDER_BACKOFF.capMs))
    throw new WaitForProviderError(error.message, retryAt)
  }

  /** A job reached the provider: after an outage, the jobs waiting for it go now, and a pull reads what changed meanwhile. */
  async #providerAnswered (job: JobRecord, connection: ConnectionRecord): Promise<void> {
    const { connections, queue, log } = this.#parts
    const id = connection._id.toHexString()
    if (!await connections.recordAnswered(id)) return
    const released = await queue.release(id)
    log.info({ connectionId: id, released }, 'the provider answers again; the jobs waiting for it are due now')
    if (job.coalescingKey !== jobKeys.pull(id)) {
      await queue.enqueue({ type: 'pull', coalescingKey: jobKeys.pull(id), userId: connection.userId, connectionId: id })
    }
  }

  backend (): BackendPort {
    const backend = this.#parts.backend
    if (backend === null) throw new Error('no backend is configured (backend.apiUrl or sync.backendUrl, and backend.serviceToken), so provider events cannot be handed over')
    return backend
  }

  async send (context: ProviderContext, provider: Provider, calendarId: string, events: ProviderEvent[], generation?: { id: string, complete: boolean }): Promise<ProviderEventBatchResult> {
    // The provider's copy of our own last write tells the backend nothing new: marked, so that it
    // cannot bring back an event deleted here after that write was made (its `updated` is only when
    // the write arrived there).
    const marked = markOwnWrites(events, await this.#parts.written.ownWritesOf(context.connectionId, events))
    const batch: ProviderEventBatch = {
      userId: context.userId,
      connectionId: context.connectionId,
      provider,
      calendarId,
      ...(generation === undefined ? {} : { generation: generation.id, ...(generation.complete ? { complete: true } : {}) }),
      events: marked
    }
    return await this.backend().applyEvents(batch)
  }
}
