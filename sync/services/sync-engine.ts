// The use cases of provider connections: authorize (after the OAuth callback), restart, provider
// writes, watches (set up after an import, renewed or stopped by maintenance, stopped at logout),
// and the jobs that import a connection, pull its calendars and write an own-data change to the
// provider. Each drives the connection state machine and appends the invalidations the backend
// turns into stream messages. Provider events reach the user's data only through the backend.
import { randomBytes, randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { SyncConfig } from '../../schemas/config.js'
import { ProviderWriteSubjectSchema } from '../../schemas/sync/index.js'
import { grantIsRefreshToken } from '../../lib/identity-providers.js'
import { isDatabaseUnavailableError } from '../../stores/database.js'
import type {
  CredentialHandOver, CredentialHandOverResult, EventOperation, ImportOperation, Provider, ProviderEvent, ProviderEventBatch, ProviderEventBatchResult,
  ProviderWriteSubject
} from '../../schemas/sync/index.js'
import type { Clock } from '../lib/clock.js'
import type { ConnectionRecord } from '../lib/connections/record.js'
import { isLive } from '../lib/connections/state-machine.js'
import type { ProviderCredential } from '../lib/credentials.js'
import {
  channelUserInactive, DEFAULT_INACTIVE_USER_DAYS, FALLBACK_PULL_AFTER_MS, fallbackPullDue, importWindow, NOTIFICATION_PULL_DELAY_MS, NOTIFICATION_PULL_MAX_WAIT_MS,
  WATCH_LIFETIME_MS, watchAction
} from '../lib/provider-sync.js'
import { appendsCalendarInvalidation } from '../lib/pull-rule.js'
import type { PullOutcome } from '../lib/pull-rule.js'
import {
  ProviderAuthorizationRevokedError, ProviderCursorExpiredError, ProviderNotFoundError, ProviderRejectedError, ProviderUnavailableError
} from '../lib/providers/port.js'
import { PROVIDER_BACKOFF, WaitForProviderError } from '../lib/jobs/rules.js'
import type { ProviderCalendar, ProviderContext, ProviderEventPage, ProviderPort, ProviderRegistry, WriteResult } from '../lib/providers/port.js'
import { writeIssueOf } from '../lib/write-issues.js'
import type { BackendPort } from '../clients/backend.js'
import { SyncServiceError } from '../lib/errors.js'
import type { HeldWriteStore } from '../stores/held-writes.js'
import type { WrittenVersionStore } from '../stores/written-versions.js'
import type { WriteIssueStore } from '../stores/write-issues.js'
import type { CredentialHandOverStore } from '../stores/credential-hand-overs.js'
import type { CalendarRecord, CalendarStore, ImportCheckpoint } from '../stores/calendars.js'
import type { ChangeFeed } from '../stores/change-feed.js'
import type { ConnectionStore } from '../stores/connections.js'
import type { CredentialStore } from '../stores/credentials.js'
import type { JobQueue, JobRecord, JobType } from '../stores/job-queue.js'
import type { InTransaction } from '../stores/database-calls.js'
import type { UserActivityStore } from '../stores/user-activity.js'
import { WatchStore } from '../stores/watches.js'
import type { WatchRecord } from '../stores/watches.js'
import type { JobHandler } from './job-worker.js'
import { markOwnWrites } from '../lib/own-writes.js'

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
}

/** The connection cannot be acted on: it is gone, or its credential is. The job has nothing to do. */
class NothingToDo extends Error {}

/** How long an occurrence's write waits for its series' write before it looks again. */
const SERIES_WAIT_MS = 3_000

export const jobKeys = {
  import: (connectionId: string) => `import:${connectionId}`,
  pull: (connectionId: string) => `pull:${connectionId}`,
  /** One calendar's pull: a burst of notifications for it coalesces into one job. */
  calendarPull: (connectionId: string, calendarId: string) => `pull:${connectionId}:${calendarId}`,
  providerWrite: (connectionId: string, eventId: string) => `write:${connectionId}:${eventId}`
}

const subjectCheck = TypeCompiler.Compile(ProviderWriteSubjectSchema)

/** Channels renewed or stopped by one maintenance pass at most; the next pass takes the rest. */
const MAINTENANCE_BATCH = 500
/**
 * An import's progress after a page is recorded at most this often. The backend's bridge reads the
 * feed every few seconds and keeps only a connection's latest progress of each read, so more would
 * be three database writes a page that no tab ever sees. The start, each calendar's end and the
 * completion are always recorded.
 */
export const PAGE_PROGRESS_INTERVAL_MS = 1000

export interface MaintenanceReport {
  renewed: number
  stopped: number
  failed: number
}

export interface NotificationOutcome {
  /**
   * `queued`: a pull of the calendar is queued (or one waiting took it); `acknowledged`: nothing to
   * do; `stopped`: the channel's user has been away longer than sync.inactiveUserDays, so the
   * channel was stopped at the provider and nothing is pulled; `duplicate`: a message of the channel
   * already handled (a provider's redelivery, or a copy that reached another Sync process first).
   */
  result: 'queued' | 'acknowledged' | 'stopped' | 'refused' | 'unknownChannel' | 'duplicate'
}

function calendarOf (record: CalendarRecord): ProviderCalendar {
  return { calendarId: record.calendarId, name: record.name, primary: record.primary, timeZone: record.timeZone, ...(typeof record.color === 'string' ? { color: record.color } : {}) }
}

export class SyncEngine {
  readonly #parts: SyncEngineParts

  constructor (parts: SyncEngineParts) {
    this.#parts = parts
  }

  handlers (): Record<JobType, JobHandler> {
    return {
      import: (job) => this.#guard(job, (connection, context, provider) => this.#import(job, connection, context, provider)),
      pull: (job) => this.#guard(job, (connection, context, provider) => this.#pull(job, connection, context, provider)),
      providerWrite: (job) => this.#guard(job, (connection, context, provider) => this.#write(job, connection, context, provider))
    }
  }

  /**
   * Stores a granted credential and starts the import: a new connection for `connect`, the named
   * one (repair) for a reconnect. The OAuth callback calls this.
   */
  async authorize (userId: string, provider: Provider, credential: ProviderCredential, connectionId: string | null, account?: string): Promise<ConnectionRecord> {
    const { connections, credentials, queue } = this.#parts
    const existing = connectionId === null ? null : await connections.get(connectionId)
    if (connectionId !== null && (!existing || existing.userId !== userId || existing.provider !== provider)) {
      throw new Error('the connection to reconnect is not this user\'s connection of this provider')
    }
    const record = existing ?? await connections.create(userId, provider, account)
    const id = record._id.toHexString()
    if (existing !== null && account !== undefined && existing.account !== account) await connections.recordAccount(id, account)
    await credentials.save(id, userId, credential)
    const authorized = await connections.apply(id, { type: 'authorized' })
    const operation: ImportOperation = existing ? 'repair' : 'full'
    // Each authorization is a new import run: its calendars are read again from the start.
    await queue.enqueue({ type: 'import', coalescingKey: jobKeys.import(id), userId, connectionId: id, payload: { operation, run: randomUUID() } })
    const connection = authorized ?? record
    // What the user wrote while the grant was revoked goes out now, the latest version of each event.
    for (const write of await this.#parts.held.list(id)) {
      await this.queueProviderWrite(connection, write)
      await this.#parts.held.release(write)
    }
    return connection
  }

  /**
   * A change reported while its connection's grant is revoked: kept until the user reconnects
   * (authorize), so the backend's own write is never kept from the provider calendar. With
   * `session`, in the caller's transaction.
   */
  async holdProviderWrite (connectionId: string, userId: string, change: { eventId: string, operation: EventOperation, calendarId: string | null, subject?: ProviderWriteSubject | undefined }, options: InTransaction = {}): Promise<void> {
    await this.#parts.held.hold({
      connectionId,
      userId,
      eventId: change.eventId,
      operation: change.operation,
      calendarId: change.calendarId,
      ...(change.subject === undefined ? {} : { subject: change.subject }),
      heldAt: this.#parts.clock.now()
    }, options)
  }

  /**
   * A credential the backend obtained at a provider sign-in or a connect from a signed-in session
   * (specification, "Provider sign-in and sign-up": the modes). SIGNUP (or no connection yet)
   * creates the connection and imports; RECONNECT_REPAIR (or a connection that needs the user)
   * repairs it with this credential; SIGNIN_INCREMENTAL keeps the connection, checks its channels
   * (starts the missing ones, replaces the expired ones) and pulls. A repeated hand-over is answered as the first one was.
   */
  async handOverCredential (userId: string, handOver: CredentialHandOver): Promise<CredentialHandOverResult> {
    const { connections, credentials, handOvers, queue, clock, providers } = this.#parts
    const previous = await handOvers.find(userId, handOver.idempotencyKey)
    if (previous !== null) return previous
    if (providers[handOver.provider] === undefined || !credentials.available) {
      throw new SyncServiceError('PROVIDER_NOT_CONFIGURED', `Provider ${handOver.provider} is not configured on this Sync service`)
    }
    const credential: ProviderCredential = { refreshToken: handOver.refreshToken, scope: handOver.scopes.join(' '), subject: handOver.providerAccountId }
    const existing = (await connections.listByUser(userId)).filter((connection) => connection.provider === handOver.provider).at(-1)
    let result: CredentialHandOverResult
    if (existing === undefined) {
      const created = await this.authorize(userId, handOver.provider, credential, null)
      result = { connectionId: created._id.toHexString(), created: true, queued: 'import' }
    } else if (handOver.mode === 'RECONNECT_REPAIR' || !isLive(existing.state) || handOver.mode === 'SIGNUP') {
      const repaired = await this.authorize(userId, handOver.provider, credential, existing._id.toHexString())
      result = { connectionId: repaired._id.toHexString(), created: false, queued: 'repair' }
    } else {
      const id = existing._id.toHexString()
      await credentials.save(id, userId, credential)
      const acting = await this.#context(existing)
      if (acting !== null) {
        const known = await this.#parts.calendars.listByConnection(id)
        await this.#ensureWatches(acting.provider, acting.context, known.map(calendarOf))
      }
      const queued = await queue.enqueue({ type: 'pull', coalescingKey: jobKeys.pull(id), userId, connectionId: id })
      result = { connectionId: id, created: false, queued: queued.coalesced ? 'none' : 'incremental' }
    }
    await handOvers.record(userId, handOver.idempotencyKey, result, clock.now())
    return result
  }

  /**
   * Queues the next step for each live connection of a user (the refresh button), due now even
   * when one was waiting for its retry, and tries the provider again now for the jobs waiting for
   * it; returns how many connections are queued.
   */
  async restart (userId: string): Promise<number> {
    const { connections, queue } = this.#parts
    let queued = 0
    for (const connection of await connections.listByUser(userId)) {
      if (!isLive(connection.state)) continue
      const id = connection._id.toHexString()
      await connections.tryProviderNow(id)
      await queue.release(id)
      const coalescingKey = connection.state === 'importing' ? jobKeys.import(id) : jobKeys.pull(id)
      if (connection.state === 'importing') {
        await queue.enqueue({ type: 'import', coalescingKey, userId, connectionId: id, payload: { operation: 'full', run: randomUUID() } })
      } else {
        await queue.enqueue({ type: 'pull', coalescingKey, userId, connectionId: id })
      }
      // One already waiting for its retry runs now too: the person asked for it.
      await queue.dueNow(coalescingKey)
      queued++
    }
    return queued
  }

  /** Queues the provider write of a reported change (the newest report of an event wins); with `session`, in the caller's transaction. */
  async queueProviderWrite (connection: ConnectionRecord, change: { eventId: string, operation: EventOperation, calendarId: string | null, subject?: ProviderWriteSubject | undefined }, options: InTransaction = {}): Promise<void> {
    const id = connection._id.toHexString()
    await this.#parts.queue.enqueue({
      type: 'providerWrite',
      coalescingKey: jobKeys.providerWrite(id, change.eventId),
      userId: connection.userId,
      connectionId: id,
      payload: {
        eventId: change.eventId,
        operation: change.operation,
        ...(change.calendarId === null ? {} : { calendarId: change.calendarId }),
        ...(change.subject === undefined ? {} : { subject: JSON.stringify(change.subject) })
      }
    }, options)
  }

  /** Stops every notification channel of a user (logout); succeeds with no connection at all. */
  async stopWatches (userId: string): Promise<number> {
    let stopped = 0
    for (const watch of await this.#parts.watches.listByUser(userId)) {
      await this.#stopWatch(watch)
      stopped++
    }
    return stopped
  }

  /**
   * A provider change notification (Google: `X-Goog-*` headers). The channel token is compared in
   * constant time with the stored digest; a notification that fails changes nothing. A channel we
   * do not know is stopped at the provider when its resource tells whose it is. The channel is the
   * key and its resource must match (sync/README.md, "Provider data": why not the resource alone).
   */
  async notify (provider: Provider, notification: { channelId: string, token: string, resourceId?: string, state: string, messageNumber?: number }): Promise<NotificationOutcome> {
    const { watches, activity, settings, clock, log } = this.#parts
    const watch = await watches.get(notification.channelId)
    if (watch === null) {
      await this.#stopUnknownChannel(provider, notification.channelId, notification.resourceId ?? '')
      return { result: 'unknownChannel' }
    }
    // A provider whose notifications name no channel resource (Microsoft: the changed event) leaves it out.
    if (!WatchStore.tokenMatches(watch, notification.token) || (notification.resourceId !== undefined && watch.resourceId !== notification.resourceId)) {
      log.warn({ channelId: notification.channelId }, 'provider notification refused: its channel token or resource does not match')
      return { result: 'refused' }
    }
    // Specification, "Inbound provider change notifications": the sync of a user away for longer
    // than the configured days is cancelled, and the channel is stopped so the provider stops calling.
    if (channelUserInactive(watch, await activity.lastSeen(watch.userId), clock.now(), settings.inactiveUserDays ?? DEFAULT_INACTIVE_USER_DAYS)) {
      await this.#stopWatch(watch)
      log.info({ channelId: watch._id }, 'notification for a user inactive longer than sync.inactiveUserDays: channel stopped, nothing pulled')
      return { result: 'stopped' }
    }
    // The first message of a channel only says that it works.
    if (notification.state === 'sync') return { result: 'acknowledged' }
    // A message seen before queues nothing: a pull it queued may have run already, and a second
    // would read the provider again for nothing.
    if (WatchStore.alreadyHandled(watch, notification.messageNumber)) return { result: 'duplicate' }
    // Microsoft's lifecycle events: the subscription needs a renewal (which reauthorizes it), or it
    // ended and needs a new one. Either way a pull follows, for changes it may not have told.
    if (notification.state === 'reauthorizationRequired' || notification.state === 'subscriptionRemoved') {
      await this.#replaceWatch(watch, notification.state === 'reauthorizationRequired' ? 'renew' : 'recreate')
    }
    // Each notification of a burst moves the waiting pull back a little, so the burst is one pull.
    const now = clock.now().getTime()
    const queued = await this.#queueCalendarPull(watch, new Date(now + NOTIFICATION_PULL_DELAY_MS))
    if (queued.coalesced) {
      await this.#parts.queue.postpone(queued.job, new Date(now + NOTIFICATION_PULL_DELAY_MS), new Date(queued.job.createdAt.getTime() + NOTIFICATION_PULL_MAX_WAIT_MS))
    }
    // Recorded once the pull is queued: a message that failed before that is taken again when redelivered.
    if (notification.messageNumber !== undefined) await watches.recordMessage(watch._id, notification.messageNumber)
    return { result: 'queued' }
  }

  /**
   * The timer's pass: calendars of live connections that no pull reached for a while (a lost
   * notification, a lapsed channel) are pulled now. Answers how many pulls were queued.
   */
  async pullOverdueCalendars (): Promise<number> {
    const { calendars, connections, activity, settings, clock } = this.#parts
    const now = clock.now()
    const inactiveDays = settings.inactiveUserDays ?? DEFAULT_INACTIVE_USER_DAYS
    let queued = 0
    // A provider without notifications (pollIntervalMs) is always overdue after its own interval.
    const polled = Object.values(this.#parts.providers).flatMap((provider) => provider?.pollIntervalMs === undefined ? [] : [provider.pollIntervalMs])
    for (const calendar of await calendars.listPulledBefore(new Date(now.getTime() - Math.min(FALLBACK_PULL_AFTER_MS, ...polled)), MAINTENANCE_BATCH)) {
      const connection = await connections.get(calendar.connectionId)
      if (connection === null || !isLive(connection.state) || connection.state === 'importing') continue
      const interval = this.#parts.providers[connection.provider]?.pollIntervalMs
      if (!fallbackPullDue(calendar, await activity.lastSeen(calendar.userId), now, inactiveDays, interval ?? FALLBACK_PULL_AFTER_MS)) continue
      // Backoff: a polled connection whose reads fail waits for the job ladder's next attempt.
      if (interval !== undefined && connection.state === 'delayed') continue
      await this.#queueCalendarPull(calendar)
      queued++
    }
    return queued
  }

  /** One pull of one calendar; a pull already waiting for it absorbs this one (its coalescing key). */
  async #queueCalendarPull (target: { connectionId: string, calendarId: string, userId: string }, runAt?: Date): Promise<{ job: JobRecord, coalesced: boolean }> {
    return await this.#parts.queue.enqueue({
      type: 'pull',
      coalescingKey: jobKeys.calendarPull(target.connectionId, target.calendarId),
      userId: target.userId,
      connectionId: target.connectionId,
      payload: { calendarId: target.calendarId },
      ...(runAt === undefined ? {} : { runAt })
    })
  }

  /**
   * Watch maintenance: channels expiring soon are renewed for active users (a pull runs too, in case
   * a change fell between two channels) and stopped for users inactive for sync.inactiveUserDays.
   */
  async maintainWatches (): Promise<MaintenanceReport> {
    const { watches, activity, connections, settings, clock, log } = this.#parts
    const inactiveDays = settings.inactiveUserDays ?? DEFAULT_INACTIVE_USER_DAYS
    const now = clock.now()
    const report: MaintenanceReport = { renewed: 0, stopped: 0, failed: 0 }
    const horizon = new Date(now.getTime() + WATCH_LIFETIME_MS)
    for (const watch of await watches.listExpiringBefore(horizon, MAINTENANCE_BATCH)) {
      const action = watchAction(watch, await activity.lastSeen(watch.userId), now, inactiveDays)
      if (action === 'keep') continue
      try {
        if (action === 'stop') {
          await this.#stopWatch(watch)
          report.stopped++
          continue
        }
        const connection = await connections.get(watch.connectionId)
        const context = connection && isLive(connection.state) ? await this.#context(connection) : null
        if (connection === null || context === null) {
          await this.#stopWatch(watch)
          report.stopped++
          continue
        }
        await this.#renewWatch(context.provider, context.context, watch)
        await this.#queueCalendarPull(watch)
        report.renewed++
      } catch (error) {
        // A database that does not answer fails every channel alike: the pass ends here (503 to a
        // scheduler) instead of waiting out a deadline per channel.
        if (isDatabaseUnavailableError(error)) throw error
        report.failed++
        if (error instanceof ProviderAuthorizationRevokedError) await connections.apply(watch.connectionId, { type: 'grantRevoked' })
        log.warn({ channelId: watch._id, err: error }, 'watch maintenance failed for a channel; the next pass tries again')
      }
    }
    return report
  }

  /** A channel the provider asked to renew, or told us it ended; a dead grant makes the connection need the user. */
  async #replaceWatch (watch: WatchRecord, how: 'renew' | 'recreate'): Promise<void> {
    const { connections, watches, log } = this.#parts
    const connection = await connections.get(watch.connectionId)
    const acting = connection && isLive(connection.state) ? await this.#context(connection) : null
    if (connection === null || acting === null) return
    try {
      if (how === 'renew') {
        await this.#renewWatch(acting.provider, acting.context, watch, true)
      } else {
        await watches.remove(watch._id)
        await this.#watchCalendar(acting.provider, acting.context, watch.calendarId)
      }
    } catch (error) {
      if (isDatabaseUnavailableError(error)) throw error
      if (error instanceof ProviderAuthorizationRevokedError) {
        await connections.apply(watch.connectionId, { type: 'grantRevoked' })
        await this.#tellBackendOfRevocation(connection)
        return
      }
      // Watch maintenance and the timer's pulls cover a calendar whose channel could not be replaced.
      log.warn({ channelId: watch._id, err: error }, 'replacing a provider channel failed; the calendar is pulled on the timer meanwhile')
    }
  }

  /** Extends a channel: in place where the provider can, else a new channel replaces it. */
  async #renewWatch (provider: ProviderPort, context: ProviderContext, watch: WatchRecord, reauthorize = false): Promise<void> {
    const { watches, clock } = this.#parts
    if (provider.renewWatch !== undefined) {
      try {
        const renewed = await provider.renewWatch(context, { channelId: watch._id, resourceId: watch.resourceId }, new Date(clock.now().getTime() + WATCH_LIFETIME_MS), { reauthorize })
        await watches.renew(watch._id, renewed.expiresAt)
        return
      } catch (error) {
        // The channel is gone at the provider: a new one replaces it below.
        if (!(error instanceof ProviderNotFoundError)) throw error
      }
      await watches.remove(watch._id)
    } else {
      await this.#stopWatch(watch)
    }
    await this.#watchCalendar(provider, context, watch.calendarId)
  }

  async #stopUnknownChannel (provider: Provider, channelId: string, resourceId: string): Promise<void> {
    const { watches, connections, log } = this.#parts
    // Resource ids are stable per calendar, so another channel of ours on the same resource names
    // the connection whose credential can stop this one.
    const sibling = resourceId === '' ? null : await watches.findByResource(resourceId)
    const connection = sibling === null ? null : await connections.get(sibling.connectionId)
    const acting = connection !== null && connection.provider === provider && isLive(connection.state) ? await this.#context(connection) : null
    if (acting === null) {
      log.info({ channelId }, 'notification for an unknown channel; no connection can stop it, it lapses at its expiration')
      return
    }
    try {
      await acting.provider.unwatch(acting.context, { channelId, resourceId })
      log.info({ channelId }, 'unknown notification channel stopped at the provider')
    } catch (error) {
      log.warn({ channelId, err: error }, 'stopping an unknown notification channel failed')
    }
  }

  async #stopWatch (watch: WatchRecord): Promise<void> {
    const { watches, connections, log } = this.#parts
    try {
      const connection = await connections.get(watch.connectionId)
      const acting = connection ? await this.#context(connection) : null
      if (acting) await acting.provider.unwatch(acting.context, { channelId: watch._id, resourceId: watch.resourceId })
    } catch (error) {
      // The channel expires at the provider on its own; a failed stop must not keep a logout or a
      // maintenance pass from finishing. A database that does not answer fails the whole request.
      if (isDatabaseUnavailableError(error)) throw error
      log.warn({ channelId: watch._id, err: error }, 'stopping a provider watch failed; the channel will lapse at its expiration')
    }
    await watches.remove(watch._id)
  }

  /** The provider and context to act for a connection; null without an adapter or a credential. */
  /**
   * The backend revokes the user's sessions for a dead grant (specification, States and
   * transitions: session / invalid_grant), also when no stream of the user would read the feed.
   * The connection's state already says it; a backend that cannot be told now learns it from the
   * feed when the user's next stream opens.
   */
  async #tellBackendOfRevocation (connection: ConnectionRecord): Promise<void> {
    const backend = this.#parts.backend
    if (backend === null || !grantIsRefreshToken(connection.provider)) return
    try {
      await backend.grantRevoked({ userId: connection.userId, provider: connection.provider, connectionId: connection._id.toHexString() })
    } catch (error) {
      this.#parts.log.warn({ connectionId: connection._id.toHexString(), err: error }, 'the backend was not told of a revoked grant; it learns it from the change feed')
    }
  }

  async #context (connection: ConnectionRecord): Promise<{ provider: ProviderPort, context: ProviderContext } | null> {
    const connectionId = connection._id.toHexString()
    const provider = this.#parts.providers[connection.provider]
    const credential = provider ? await this.#parts.credentials.load(connectionId) : null
    if (!provider || !credential) return null
    return { provider, context: this.#providerContext(connectionId, connection.userId, credential) }
  }

  /** A provider that replaces the credential while acting (rotating refresh tokens) stores it here. */
  #providerContext (connectionId: string, userId: string, credential: ProviderCredential): ProviderContext {
    const credentials = this.#parts.credentials
    return { connectionId, userId, credential, saveCredential: async (renewed) => { await credentials.save(connectionId, userId, renewed) } }
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
    const retryAt = connection.providerRetryAt ?? null
    if (retryAt !== null && retryAt > this.#parts.clock.now()) {
      // Another job of the connection met the provider unavailable and tries it again at retryAt;
      // this one waits behind it (released at once when it succeeds) instead of asking a provider that is down.
      throw new WaitForProviderError(`waiting for ${connection.provider} to answer again`, new Date(retryAt.getTime() + PROVIDER_BACKOFF.capMs))
    }
    try {
      await work(connection, this.#providerContext(connectionId, connection.userId, credential), provider)
    } catch (error) {
      if (error instanceof NothingToDo) return
      // Our own database failing is not the provider's: the connection's state stays as it is,
      // and the job retries on its ladder.
      if (isDatabaseUnavailableError(error)) throw error
      if (error instanceof ProviderAuthorizationRevokedError) {
        log.warn({ connectionId, jobId: job._id.toHexString() }, 'provider grant revoked; connection needs the user')
        await connections.apply(connectionId, { type: 'grantRevoked' })
        await this.#tellBackendOfRevocation(connection)
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

  #backend (): BackendPort {
    const backend = this.#parts.backend
    if (backend === null) throw new Error('no backend is configured (backend.apiUrl or sync.backendUrl, and backend.serviceToken), so provider events cannot be handed over')
    return backend
  }

  async #send (context: ProviderContext, provider: Provider, calendarId: string, events: ProviderEvent[], generation?: { id: string, complete: boolean }): Promise<ProviderEventBatchResult> {
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
    return await this.#backend().applyEvents(batch)
  }

  async #import (job: JobRecord, connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort): Promise<void> {
    if (connection.state !== 'importing') throw new NothingToDo()
    const { calendars, connections, feed, queue, clock } = this.#parts
    const operation: ImportOperation = job.payload.operation === 'repair' ? 'repair' : 'full'
    // A job from before runs were named is its own run.
    const run = job.payload.run ?? job._id.toHexString()
    const found = await provider.listCalendars(context)
    const stored = new Map((await calendars.listByConnection(context.connectionId)).map((record) => [record.calendarId, record]))
    const counts = { calendarsDone: 0, calendarsTotal: found.length, eventsImported: 0 }
    // A run that crashed goes on after the calendars it finished.
    const pending = found.filter((calendar) => stored.get(calendar.calendarId)?.importedInRun !== run)
    counts.calendarsDone = found.length - pending.length
    let recordedAt = clock.now().getTime()
    const recordProgress = async (): Promise<void> => {
      recordedAt = clock.now().getTime()
      await connections.recordImport(connection, { phase: 'progress', operation, counts: { ...counts } })
    }
    await recordProgress()
    for (const calendar of pending) {
      const before = counts.eventsImported
      await this.#importCalendar(context, provider, calendar, { run, window: true, expiryStreak: 0 }, async (imported) => {
        counts.eventsImported = before + imported
        if (clock.now().getTime() - recordedAt >= PAGE_PROGRESS_INTERVAL_MS) await recordProgress()
      })
      counts.calendarsDone++
      // An initial import always tells the user's tabs (pull rule).
      await feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
      await recordProgress()
    }
    await connections.recordImport(connection, { phase: 'completed', operation, counts: { ...counts } })
    await connections.apply(context.connectionId, { type: 'importFinished' })
    await this.#ensureWatches(provider, context, found)
    await queue.enqueue({ type: 'pull', coalescingKey: jobKeys.pull(context.connectionId), userId: context.userId, connectionId: context.connectionId })
  }

  /**
   * Imports one calendar under a new generation: the weeks around today first (when `window`), then
   * every page of the whole calendar, each page one batch, the last with `complete: true`. A
   * checkpoint after each applied page lets a crashed run go on where it stopped; a replayed page
   * is idempotent at the backend. Returns the events handed over.
   */
  async #importCalendar (
    context: ProviderContext,
    provider: ProviderPort,
    calendar: ProviderCalendar,
    options: { run: string, window: boolean, expiryStreak: number },
    progress: (imported: number) => Promise<void> = async () => {}
  ): Promise<number> {
    const { calendars, clock } = this.#parts
    const facts = { connectionId: context.connectionId, userId: context.userId, ...calendar, color: calendar.color ?? null }
    let checkpoint: ImportCheckpoint = await calendars.beginImport(facts, options.run, clock.now())
    if (!options.window && checkpoint.pass === 'window') checkpoint = { ...checkpoint, pass: 'full' }
    let windowEvents = checkpoint.pass === 'window' ? checkpoint.eventsImported : 0
    const shown = () => Math.max(windowEvents, checkpoint.pass === 'full' ? checkpoint.eventsImported : 0)

    // The full pass reads the window's events again; those unchanged since are not handed over a
    // second time (a resumed run, which has no record of them, sends them again, harmlessly).
    const sentInWindow = new Map<string, string>()
    const versionOf = (event: ProviderEvent) => `${event.etag ?? ''}|${event.updated}`
    const take = (pass: ImportCheckpoint['pass']) => async (page: ProviderEventPage): Promise<void> => {
      const last = pass === 'full' && page.nextPageToken === null
      const fresh = pass === 'window'
        ? page.events
        : page.events.filter((event) => sentInWindow.get(event.providerEventId) !== versionOf(event))
      if (pass === 'window') for (const event of page.events) sentInWindow.set(event.providerEventId, versionOf(event))
      if (fresh.length > 0 || last) await this.#send(context, provider.provider, calendar.calendarId, fresh, { id: checkpoint.generation, complete: last })
      const eventsImported = checkpoint.eventsImported + page.events.length
      if (pass === 'window') windowEvents = eventsImported
      checkpoint = pass === 'window' && page.nextPageToken === null
        ? { ...checkpoint, pass: 'full', pageToken: null, eventsImported: 0 }
        : { ...checkpoint, pass, pageToken: page.nextPageToken, eventsImported }
      // The last page's checkpoint is the promotion below.
      if (!last) await calendars.saveCheckpoint(context.connectionId, calendar.calendarId, checkpoint)
      if (page.events.length > 0) await progress(shown())
    }

    if (checkpoint.pass === 'window') {
      await provider.importCalendar(context, calendar, { window: importWindow(clock.now()), pageToken: checkpoint.pageToken }, take('window'))
    }
    const result = await provider.importCalendar(context, calendar, { pageToken: checkpoint.pageToken }, take('full'))
    if (result.cursor === null) throw new Error(`the provider gave no sync cursor after importing calendar ${calendar.calendarId}`)
    await calendars.promoteImport(context.connectionId, calendar.calendarId, { cursor: result.cursor, run: options.run, expiryStreak: options.expiryStreak }, clock.now())
    return shown()
  }

  async #pull (job: JobRecord, connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort): Promise<void> {
    if (connection.state === 'importing') throw new NothingToDo()
    const { calendars, connections, feed, clock } = this.#parts
    const only = job.payload.calendarId
    const bootstrap = connection.state === 'catchingUp'
    const records = (await calendars.listByConnection(context.connectionId)).filter((record) => only === undefined || record.calendarId === only)
    for (const calendar of records) {
      if (calendar.cursor === null) continue
      let outcome: PullOutcome
      try {
        let changed = 0
        let deleted = 0
        const pulled = await provider.pullChanges(context, calendarOf(calendar), calendar.cursor, async (page) => {
          if (page.events.length === 0) return
          const applied = await this.#send(context, provider.provider, calendar.calendarId, page.events)
          changed += applied.created + applied.updated
          deleted += applied.deleted
        })
        // Saved only now: every page of this pass reached the backend.
        await calendars.recordPull(calendar, pulled.cursor, clock.now())
        outcome = {
          operation: bootstrap ? 'bootstrapCatchUp' : 'incremental',
          changed,
          deleted,
          expiryStreakCleared: calendar.expiryStreak > 0,
          generationPromoted: false
        }
      } catch (error) {
        if (error instanceof ProviderNotFoundError) {
          await this.#dropCalendar(context, calendar)
          continue
        }
        if (!(error instanceof ProviderCursorExpiredError)) throw error
        // The provider forgot our cursor: read the calendar again beside the old data; its last page
        // switches to the new generation at once. A crash resumes the same run.
        const imported = await this.#importCalendar(context, provider, calendarOf(calendar), {
          run: `repair-${calendar.generation}-${calendar.expiryStreak}`,
          window: false,
          expiryStreak: calendar.expiryStreak + 1
        })
        outcome = { operation: 'repair', changed: imported, deleted: 0, expiryStreakCleared: false, generationPromoted: true }
      }
      if (appendsCalendarInvalidation(outcome)) {
        await feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
      }
    }
    // A pull of one calendar does not end the catch-up of the whole connection.
    if (only === undefined || !bootstrap) await connections.apply(context.connectionId, { type: 'pullSucceeded' })
  }

  /** The calendar is gone at the provider: its events leave the user's data, its channel stops. */
  async #dropCalendar (context: ProviderContext, calendar: CalendarRecord): Promise<void> {
    const { calendars, watches, feed, log } = this.#parts
    await this.#backend().removeCalendar({ userId: context.userId, connectionId: context.connectionId, calendarId: calendar.calendarId })
    for (const watch of await watches.listByConnection(context.connectionId)) {
      if (watch.calendarId === calendar.calendarId) await this.#stopWatch(watch)
    }
    await calendars.remove(context.connectionId, calendar.calendarId)
    await feed.append(context.userId, { kind: 'calendar', connectionId: context.connectionId, calendarId: calendar.calendarId })
    log.info({ connectionId: context.connectionId }, 'a calendar is gone at the provider; its events were removed')
  }

  /** One channel per calendar; a calendar whose watch fails is left to watch maintenance and pulls. */
  async #ensureWatches (provider: ProviderPort, context: ProviderContext, found: ProviderCalendar[]): Promise<void> {
    // A provider without notifications is pulled on the timer instead.
    if (provider.pollIntervalMs !== undefined) return
    const now = this.#parts.clock.now()
    const existing = new Map((await this.#parts.watches.listByConnection(context.connectionId)).map((watch) => [watch.calendarId, watch]))
    for (const calendar of found) {
      const watch = existing.get(calendar.calendarId)
      // A channel past its expiration no longer notifies: it is replaced, not counted as watching.
      if (watch !== undefined && watch.expiresAt > now) continue
      try {
        if (watch === undefined) await this.#watchCalendar(provider, context, calendar.calendarId)
        else await this.#renewWatch(provider, context, watch)
      } catch (error) {
        if (error instanceof ProviderAuthorizationRevokedError || isDatabaseUnavailableError(error)) throw error
        this.#parts.log.warn({ connectionId: context.connectionId, err: error }, 'watching a calendar failed; it is pulled on the timer until a channel exists')
      }
    }
  }

  async #watchCalendar (provider: ProviderPort, context: ProviderContext, calendarId: string): Promise<void> {
    const { watches, settings, clock } = this.#parts
    const token = randomBytes(32).toString('base64url')
    const watch = await provider.watch(context, calendarId, {
      channelId: randomUUID(),
      token,
      address: `${settings.callbackBaseUrl.replace(/\/+$/, '')}/webhooks/${provider.provider}`,
      expiresAt: new Date(clock.now().getTime() + WATCH_LIFETIME_MS)
    })
    await watches.add({ channelId: watch.channelId, token, userId: context.userId, connectionId: context.connectionId, calendarId, resourceId: watch.resourceId, expiresAt: watch.expiresAt })
  }

  async #write (job: JobRecord, _connection: ConnectionRecord, context: ProviderContext, provider: ProviderPort): Promise<void> {
    const { calendars, written, clock, log } = this.#parts
    const { eventId, operation, calendarId } = job.payload
    if (eventId === undefined || (operation !== 'create' && operation !== 'update' && operation !== 'delete')) {
      throw new NothingToDo()
    }
    const subject = job.payload.subject === undefined ? undefined : JSON.parse(job.payload.subject) as unknown
    if (!subjectCheck.Check(subject)) {
      // A report without the event's content cannot be written; the backend sends it with every report.
      log.warn({ jobId: job._id.toHexString() }, 'provider write without a subject skipped')
      throw new NothingToDo()
    }
    // A change goes to the calendar its event is in, and only where this connection holds that
    // calendar: an event of no provider calendar is written nowhere, and a calendar id this
    // connection did not find at its provider is never sent there.
    const record = calendarId === undefined ? null : await calendars.get(context.connectionId, calendarId)
    if (record === null) {
      log.warn({ jobId: job._id.toHexString(), connectionId: context.connectionId }, 'provider write skipped: the event is in no calendar of this connection')
      if (calendarId !== undefined) await this.#writeIssue(context, provider.provider, eventId, 'calendarGone')
      throw new NothingToDo()
    }
    const calendar: ProviderCalendar = calendarOf(record)
    const series = await this.#seriesOf(context, subject)
    if (series === undefined) {
      // An occurrence changed before its series reached the provider waits for the series' own
      // write, rather than going there as an event of its own; with no such write on its way
      // there is nothing to change it in.
      const seriesWrite = await this.#parts.queue.list({ coalescingKey: jobKeys.providerWrite(context.connectionId, subject.seriesEventId ?? '') })
      if (seriesWrite.length === 0) {
        log.warn({ jobId: job._id.toHexString(), connectionId: context.connectionId }, 'occurrence write skipped: its series is not at the provider')
        throw new NothingToDo()
      }
      throw new WaitForProviderError(`the series of occurrence ${eventId} is not at the provider yet`, new Date(clock.now().getTime() + SERIES_WAIT_MS))
    }
    if (series !== null) subject.seriesProviderEventId = series
    const own = await written.get(context.connectionId, eventId)
    const seriesOwn = subject.seriesEventId === undefined ? undefined : await written.get(context.connectionId, subject.seriesEventId)
    let result: WriteResult
    try {
      result = await provider.writeEvent(context, calendar, {
        eventId,
        operation,
        subject,
        ...(own === undefined ? {} : { ownVersion: own.version }),
        ...(own?.providerEventId === undefined ? {} : { ownProviderEventId: own.providerEventId }),
        ...(seriesOwn === undefined ? {} : { seriesOwnVersion: seriesOwn.version })
      })
    } catch (error) {
      if (error instanceof ProviderRejectedError) {
        // Asking again gets the same answer: the event is marked, and a new change of it is written anew.
        log.warn({ jobId: job._id.toHexString(), connectionId: context.connectionId, status: error.status, operation }, 'the provider refused the write; it is not asked again')
        // A deleted event has nothing left here to carry a mark: an earlier one goes with it.
        await this.#writeIssue(context, provider.provider, eventId, operation === 'delete' ? null : error)
        throw new NothingToDo()
      }
      // The connection's state already tells of an outage, a revoked grant or our own database.
      const told = error instanceof ProviderUnavailableError || error instanceof ProviderAuthorizationRevokedError || isDatabaseUnavailableError(error)
      if (!told) await this.#writeIssue(context, provider.provider, eventId, error)
      throw error
    }
    await this.#writeIssue(context, provider.provider, eventId, null)
    if (result.event?.etag !== undefined && result.outcome !== 'providerNewer') {
      await written.record(context.connectionId, eventId, { version: result.event.etag, providerEventId: result.event.providerEventId, lastUpdated: subject.lastUpdated }, clock.now())
    }
    // The backend links a new provider event to its own (the item carries eventId); a newer version
    // at the provider replaces the change, and a merge brings it what the provider added. Anything else comes back through the next pull, where
    // the backend finds it unchanged.
    if (result.event !== null && (result.outcome === 'inserted' || result.outcome === 'providerNewer' || result.outcome === 'merged')) {
      await this.#send(context, provider.provider, calendar.calendarId, [{ ...result.event, eventId }])
    }
  }

  /**
   * The provider id of an occurrence's series when the report did not carry it (the series was
   * changed here before the backend learnt it): the one our own write of the series got there.
   * Null when there is nothing to find (not an occurrence, or the report named it); undefined when
   * the series has not been written there yet.
   */
  async #seriesOf (context: ProviderContext, subject: ProviderWriteSubject): Promise<string | null | undefined> {
    if (subject.providerEventId !== undefined || subject.seriesProviderEventId !== undefined || subject.originalStartDate === undefined || subject.seriesEventId === undefined) return null
    return (await this.#parts.written.get(context.connectionId, subject.seriesEventId))?.providerEventId
  }

  /**
   * Records why the event's change is not at the provider (`cause`), or that it now is (null). The
   * backend marks the event and the user's tabs hear the connection's new count, once per change
   * of state; the row is written last, so a failure on the way is told again by the job's retry.
   */
  async #writeIssue (context: ProviderContext, provider: Provider, eventId: string, cause: unknown): Promise<void> {
    const { writeIssues, connections, feed, clock } = this.#parts
    const { connectionId, userId } = context
    const previous = await writeIssues.get(connectionId, eventId)
    const issue = cause === null ? null : writeIssueOf(provider, cause, clock.now())
    if (issue === null ? previous === null : previous?.reason === issue.reason && previous.retrying === issue.retrying) return
    const { updated } = await this.#backend().setWriteState({ userId, connectionId, eventId, issue })
    // An event deleted here meanwhile has nothing left to mark (a refused delete stays in the log).
    const kept = issue !== null && updated
    const count = await writeIssues.count(connectionId) + (kept ? 1 : 0) - (previous === null ? 0 : 1)
    const connection = await connections.get(connectionId)
    if (connection !== null) {
      await feed.append(userId, { kind: 'connection', connectionId, provider, state: connection.state, reason: connection.reason, unsyncedWrites: Math.max(0, count) })
    }
    if (kept) await writeIssues.record({ connectionId, eventId, userId, reason: issue.reason, retrying: issue.retrying, at: new Date(issue.at) })
    else if (previous !== null) await writeIssues.clear(connectionId, eventId)
  }
}
