// Provider notification channels: set up after an import, renewed or stopped by maintenance,
// stopped at logout; a notification queues a pull of its calendar, and the timer pulls the
// calendars no notification reached for a while.
import { randomBytes, randomUUID } from 'node:crypto'
import { isDatabaseUnavailableError } from '../../stores/database.js'
import type { Provider } from '../../schemas/sync/index.js'
import { isLive } from '../lib/connections/state-machine.js'
import {
  channelUserInactive, DEFAULT_INACTIVE_USER_DAYS, FALLBACK_PULL_AFTER_MS, fallbackPullDue, NOTIFICATION_PULL_DELAY_MS, NOTIFICATION_PULL_MAX_WAIT_MS,
  WATCH_LIFETIME_MS, watchAction
} from '../lib/provider-sync.js'
import { ProviderAuthorizationRevokedError, ProviderNotFoundError } from '../lib/providers/port.js'
import type { ProviderCalendar, ProviderContext, ProviderPort } from '../lib/providers/port.js'
import type { JobRecord } from '../stores/job-queue.js'
import { WatchStore } from '../stores/watches.js'
import type { WatchRecord } from '../stores/watches.js'
import { jobKeys, type ConnectionJobs, type SyncEngineParts } from './connection-jobs.js'

/** Channels renewed or stopped by one maintenance pass at most; the next pass takes the rest. */
const MAINTENANCE_BATCH = 500

/** A pull job's payload key: after the pull, its calendars get a channel where they have none. */
export const ENSURE_WATCH = 'ensureWatch'

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

/** The notification channels of every connection, and the pulls they and the timer queue. */
export class ConnectionWatches {
  readonly #parts: SyncEngineParts
  readonly #jobs: ConnectionJobs

  constructor (parts: SyncEngineParts, jobs: ConnectionJobs) {
    this.#parts = parts
    this.#jobs = jobs
  }

  /** Stops every notification channel of a user (logout); succeeds with no connection at all. */
  async stopWatches (userId: string): Promise<number> {
    let stopped = 0
    for (const watch of await this.#parts.watches.listByUser(userId)) {
      await this.stopWatch(watch)
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
      await this.stopWatch(watch)
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
      // A calendar of a provider that notifies, and still overdue: no notification came, so its
      // pull also makes sure a channel exists (the one tried when it was imported may have failed).
      await this.#queueCalendarPull(calendar, undefined, interval === undefined)
      queued++
    }
    return queued
  }

  /** One pull of one calendar; a pull already waiting for it absorbs this one (its coalescing key). */
  async #queueCalendarPull (target: { connectionId: string, calendarId: string, userId: string }, runAt?: Date, ensureWatch = false): Promise<{ job: JobRecord, coalesced: boolean }> {
    return await this.#parts.queue.enqueue({
      type: 'pull',
      coalescingKey: jobKeys.calendarPull(target.connectionId, target.calendarId),
      userId: target.userId,
      connectionId: target.connectionId,
      payload: { calendarId: target.calendarId, ...(ensureWatch ? { [ENSURE_WATCH]: 'yes' } : {}) },
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
          await this.stopWatch(watch)
          report.stopped++
          continue
        }
        const connection = await connections.get(watch.connectionId)
        const context = connection && isLive(connection.state) ? await this.#jobs.context(connection) : null
        if (connection === null || context === null) {
          await this.stopWatch(watch)
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
    const acting = connection && isLive(connection.state) ? await this.#jobs.context(connection) : null
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
        await this.#jobs.tellBackendOfRevocation(connection)
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
      await this.stopWatch(watch)
    }
    await this.#watchCalendar(provider, context, watch.calendarId)
  }

  async #stopUnknownChannel (provider: Provider, channelId: string, resourceId: string): Promise<void> {
    const { watches, connections, log } = this.#parts
    // Resource ids are stable per calendar, so another channel of ours on the same resource names
    // the connection whose credential can stop this one.
    const sibling = resourceId === '' ? null : await watches.findByResource(resourceId)
    const connection = sibling === null ? null : await connections.get(sibling.connectionId)
    const acting = connection !== null && connection.provider === provider && isLive(connection.state) ? await this.#jobs.context(connection) : null
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

  async stopWatch (watch: WatchRecord): Promise<void> {
    const { watches, connections, log } = this.#parts
    try {
      const connection = await connections.get(watch.connectionId)
      const acting = connection ? await this.#jobs.context(connection) : null
      if (acting) await acting.provider.unwatch(acting.context, { channelId: watch._id, resourceId: watch.resourceId })
    } catch (error) {
      // The channel expires at the provider on its own; a failed stop must not keep a logout or a
      // maintenance pass from finishing. A database that does not answer fails the whole request.
      if (isDatabaseUnavailableError(error)) throw error
      log.warn({ channelId: watch._id, err: error }, 'stopping a provider watch failed; the channel will lapse at its expiration')
    }
    await watches.remove(watch._id)
  }

  /**
   * One channel per calendar. A calendar whose watch fails is pulled on the timer, and that pull
   * tries the watch again (ENSURE_WATCH).
   */
  async ensureWatches (provider: ProviderPort, context: ProviderContext, found: ProviderCalendar[]): Promise<void> {
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
        this.#parts.log.warn({ connectionId: context.connectionId, err: error }, 'watching a calendar failed; it is pulled on the timer, which tries again')
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
}
