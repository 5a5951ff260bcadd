// The change-feed bridge: while a user has at least one open stream in this process, their Sync
// change feed is read and what it reports is published to their streams. One batched request
// covers every such user, so the cost per process does not grow with the number of users. Each
// read is held by Sync for up to the poll interval (about 2 s) and answered as soon as a change of
// one of its users lands, so a change reaches the streams within milliseconds while an idle
// process still asks once per interval. Cursors live here, per process: several backend processes over one Sync each
// read the feed for the users whose streams they hold, and no sticky sessions are needed.
import type { FastifyBaseLogger } from 'fastify'
import { isObjectIdString } from '../lib/ids.js'
import { backoffDelay } from '../lib/backoff.js'
import { CHANGES_BATCH_MAX_USERS, CHANGES_WAIT_MAX_MS, type ChangesPage, type CursorRequest, type Provider } from '../schemas/sync/index.js'
import { isRevocation, resyncMessages, translatePage } from '../lib/change-translation.js'
import { pickOptions, type SseBroker } from './sse-broker.js'

export interface ChangeFeedOptions {
  /** How long Sync holds a read that finds nothing; the most an idle process waits between two reads. */
  pollIntervalMs: number
  /** Least time between the starts of two reads, so a stream of changes is read in gathered pages. */
  minReadGapMs: number
  /** New users are gathered this long so a burst of connects costs one request. */
  joinDelayMs: number
  /** Ceiling of the first retry delay after a failed read; doubles per consecutive failure (full jitter, lib/backoff.ts). */
  backoffBaseMs: number
  backoffMaxMs: number
  /** Users per batched request; the Sync contract's maximum unless lowered. */
  maxUsersPerRequest: number
  /** How long a new stream waits for its user's feed position before replaying metadata anyway. */
  readyTimeoutMs: number
}

const defaultChangeFeedOptions: ChangeFeedOptions = {
  pollIntervalMs: 2000,
  minReadGapMs: 100,
  joinDelayMs: 20,
  backoffBaseMs: 1000,
  backoffMaxMs: 30_000,
  maxUsersPerRequest: CHANGES_BATCH_MAX_USERS,
  readyTimeoutMs: 3000
}

/** What the bridge needs of the Sync client. */
export interface ChangeSource {
  changesBatch: (cursors: CursorRequest[], options: { waitMs?: number, signal?: AbortSignal }) => Promise<ChangesPage[]>
}

interface ReadResult {
  ok: boolean
  more: boolean
  /** A page reported something: the next read goes out without waiting for the interval. */
  changed: boolean
  /** Given up on by the bridge itself (a user joined, another batch changed, or stopping). */
  abandoned: boolean
  error?: unknown
}

const NOTHING_READ: ReadResult = { ok: true, more: false, changed: false, abandoned: false }

/** Told of a revoked grant (the provider answered invalid_grant); must not throw. */
export type RevocationListener = (userId: string, connectionId: string, provider: Provider) => void

type BrokerPort = Pick<SseBroker, 'publish' | 'onUserActive' | 'onUserIdle' | 'users'>

export interface ChangeFeedStats {
  ticks: number
  requests: number
  failedRequests: number
  consecutiveFailures: number
}

/** Told of each read of the feed and of how long each change took to reach the streams; must not throw. */
export interface FeedObserver {
  read: (outcome: 'ok' | 'failed', seconds: number) => void
  /** Time from Sync appending a change to its message going out here, for each change published. */
  delivered: (lagSeconds: number) => void
}

const UNOBSERVED: FeedObserver = { read: () => {}, delivered: () => {} }

export class ChangeFeedBridge {
  options: ChangeFeedOptions
  readonly stats: ChangeFeedStats = { ticks: 0, requests: 0, failedRequests: 0, consecutiveFailures: 0 }
  readonly #broker: BrokerPort
  readonly #source: ChangeSource
  readonly #log: FastifyBaseLogger
  readonly #observer: FeedObserver
  /** Users with an open stream here; null until Sync has answered with their first watermark. */
  readonly #cursors = new Map<string, string | null>()
  readonly #inFlight = new Set<string>()
  /** Users whose streams replayed their state before the feed position was known. */
  readonly #lateStart = new Set<string>()
  readonly #readyWaiters = new Map<string, Array<() => void>>()
  readonly #revocationListeners: RevocationListener[] = []
  #tickTimer: NodeJS.Timeout | undefined
  #joinTimer: NodeJS.Timeout | undefined
  #ticking: Promise<void> | undefined
  #joining: Promise<void> | undefined
  /** Gives up on the tick's held read, so users who joined meanwhile are in the next one. */
  #heldRead: AbortController | undefined
  #stopped = false

  constructor (broker: BrokerPort, source: ChangeSource, log: FastifyBaseLogger, options: Partial<ChangeFeedOptions> = {}, observer: FeedObserver = UNOBSERVED) {
    this.options = pickOptions(defaultChangeFeedOptions, options)
    this.#broker = broker
    this.#source = source
    this.#log = log
    this.#observer = observer
    broker.onUserActive((userId) => this.#activate(userId))
    broker.onUserIdle((userId) => this.#deactivate(userId))
    for (const userId of broker.users()) this.#activate(userId)
  }

  /** Changes settings from the next read on. */
  configure (options: Partial<ChangeFeedOptions>): void {
    this.options = pickOptions(this.options, options)
  }

  /** Called for each revoked grant the feed reports, after the page's messages went out. */
  onConnectionRevoked (listener: RevocationListener): void {
    this.#revocationListeners.push(listener)
  }

  /** Users whose feed this process reads. */
  get userCount (): number {
    return this.#cursors.size
  }

  isFollowing (userId: string): boolean {
    return this.#cursors.get(userId) != null
  }

  /**
   * Resolves true once the user's feed position is known, so everything that happens afterwards
   * reaches their streams; false when that took longer than `timeoutMs` (Sync unreachable) or the
   * user's streams closed first.
   */
  async ready (userId: string, timeoutMs = this.options.readyTimeoutMs): Promise<boolean> {
    if (this.isFollowing(userId)) return true
    if (!this.#cursors.has(userId)) return false
    return await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        // The stream goes on without a feed position; once one is known, everything it may have
        // missed in between is invalidated at once.
        if (this.#cursors.get(userId) === null) this.#lateStart.add(userId)
        done(false)
      }, timeoutMs)
      const waiter = (): void => { done(this.isFollowing(userId)) }
      const done = (result: boolean): void => {
        clearTimeout(timer)
        const waiters = this.#readyWaiters.get(userId)
        const index = waiters?.indexOf(waiter) ?? -1
        if (waiters !== undefined && index !== -1) waiters.splice(index, 1)
        if (waiters?.length === 0) this.#readyWaiters.delete(userId)
        resolve(result)
      }
      const waiters = this.#readyWaiters.get(userId) ?? []
      waiters.push(waiter)
      this.#readyWaiters.set(userId, waiters)
    })
  }

  async stop (): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#tickTimer)
    clearTimeout(this.#joinTimer)
    this.#heldRead?.abort()
    for (const userId of [...this.#readyWaiters.keys()]) this.#wake(userId)
    await Promise.allSettled([this.#ticking, this.#joining])
  }

  #activate (userId: string): void {
    if (this.#stopped || this.#cursors.has(userId)) return
    // Sync refuses a whole batch over one malformed id; such a user must not stall everyone else.
    if (!isObjectIdString(userId)) {
      this.#log.error({ userId }, 'change feed cannot follow a user id that is not a canonical 24-hex id')
      return
    }
    this.#cursors.set(userId, null)
    if (this.#joinTimer === undefined && this.#joining === undefined) this.#scheduleJoin()
    if (this.#tickTimer === undefined && this.#ticking === undefined) this.#scheduleTick(this.options.pollIntervalMs)
  }

  #deactivate (userId: string): void {
    this.#cursors.delete(userId)
    this.#lateStart.delete(userId)
    this.#wake(userId)
    if (this.#cursors.size === 0) {
      clearTimeout(this.#tickTimer)
      this.#tickTimer = undefined
    }
  }

  #wake (userId: string): void {
    for (const waiter of [...this.#readyWaiters.get(userId) ?? []]) waiter()
  }

  #scheduleTick (delayMs: number): void {
    clearTimeout(this.#tickTimer)
    this.#tickTimer = undefined
    if (this.#stopped || this.#cursors.size === 0) return
    this.#tickTimer = setTimeout(() => {
      this.#tickTimer = undefined
      this.#ticking = this.#tick().finally(() => { this.#ticking = undefined })
    }, delayMs)
    this.#tickTimer.unref()
  }

  // Users who just opened their first stream get their watermark at once instead of at the next tick.
  #join (): void {
    this.#joinTimer = undefined
    const joining = [...this.#cursors].filter(([userId, cursor]) => cursor === null && !this.#inFlight.has(userId))
    if (joining.length === 0 || this.#stopped) return
    this.#joining = this.#read(joining, 0)
      .then((result) => {
        // A failed join is retried by the regular tick, with its backoff.
        if (!result.ok) this.#log.warn({ err: result.error, users: joining.length }, 'change feed could not start following new users yet')
        // The held read under way leaves out the users who just joined: it is given up on, or
        // when none is under way the next read starts now, not an interval after the first
        // stream opened (a tab back from a provider's consent would hear nothing of its import
        // for that long).
        else if (this.#heldRead !== undefined) this.#heldRead.abort()
        else if (this.#ticking === undefined) this.#scheduleTick(0)
      })
      .finally(() => {
        this.#joining = undefined
        const waiting = [...this.#cursors.values()].includes(null)
        if (waiting && !this.#stopped && this.#joinTimer === undefined && this.stats.consecutiveFailures === 0) this.#scheduleJoin()
      })
  }

  #scheduleJoin (): void {
    this.#joinTimer = setTimeout(() => { this.#join() }, this.options.joinDelayMs)
    this.#joinTimer.unref()
  }

  async #tick (): Promise<void> {
    this.stats.ticks++
    const started = performance.now()
    const untilInterval = (): number => Math.max(0, started + this.options.pollIntervalMs - performance.now())
    let next = this.options.pollIntervalMs
    try {
      const users = [...this.#cursors].filter(([userId]) => !this.#inFlight.has(userId))
      // Users still waiting for their watermark need it at once, so such a read is not held.
      const waitMs = users.some(([, cursor]) => cursor === null) ? 0 : Math.min(this.options.pollIntervalMs, CHANGES_WAIT_MAX_MS)
      const result = await this.#read(users, waitMs)
      if (!result.ok) {
        next = backoffDelay(this.stats.consecutiveFailures - 1, { baseMs: this.options.backoffBaseMs, capMs: this.options.backoffMaxMs })
        this.#log.error({ err: result.error, consecutiveFailures: this.stats.consecutiveFailures, retryInMs: next }, 'change feed poll failed; retrying with backoff')
      } else if (result.more || result.abandoned) {
        next = 0
      } else if (result.changed) {
        next = Math.max(0, started + this.options.minReadGapMs - performance.now())
      } else {
        // Held for the interval, or answered early with nothing (a Sync that does not hold reads).
        next = untilInterval()
      }
    } catch (error) {
      // Nothing above should throw; if it does, the bridge logs it and keeps polling.
      this.#log.error({ err: error }, 'change feed tick failed unexpectedly')
    } finally {
      this.#scheduleTick(next)
    }
  }

  /**
   * Reads the feed of these users in batches of the contract's size. A held read (`waitMs`) can be
   * given up on by the bridge; when one batch reports changes, the others held are given up on too,
   * so every user is in the next read at once.
   */
  async #read (users: Array<[string, string | null]>, waitMs: number): Promise<ReadResult> {
    if (users.length === 0) return NOTHING_READ
    // Sync refuses a batch above the contract's maximum, whatever was configured.
    const size = Math.max(1, Math.min(this.options.maxUsersPerRequest, CHANGES_BATCH_MAX_USERS))
    const batches: Array<Array<[string, string | null]>> = []
    for (let start = 0; start < users.length; start += size) batches.push(users.slice(start, start + size))
    const held = waitMs > 0 ? new AbortController() : undefined
    if (held !== undefined) this.#heldRead = held
    for (const [userId] of users) this.#inFlight.add(userId)
    try {
      const results = await Promise.all(batches.map(async (batch) => {
        const result = await this.#readBatch(batch, waitMs, held?.signal)
        if (result.changed) held?.abort()
        return result
      }))
      const failed = results.find((result) => !result.ok)
      return failed ?? {
        ok: true,
        more: results.some((result) => result.more),
        changed: results.some((result) => result.changed),
        abandoned: results.some((result) => result.abandoned)
      }
    } finally {
      if (this.#heldRead === held) this.#heldRead = undefined
      for (const [userId] of users) this.#inFlight.delete(userId)
    }
  }

  async #readBatch (batch: Array<[string, string | null]>, waitMs: number, signal: AbortSignal | undefined): Promise<ReadResult> {
    this.stats.requests++
    const started = performance.now()
    let pages: ChangesPage[]
    try {
      pages = await this.#source.changesBatch(batch.map(([userId, cursor]) => ({ userId, cursor })), { waitMs, signal })
      this.#observer.read('ok', (performance.now() - started) / 1000)
    } catch (error) {
      if (signal?.aborted === true) return { ...NOTHING_READ, abandoned: true }
      this.#observer.read('failed', (performance.now() - started) / 1000)
      this.stats.failedRequests++
      this.stats.consecutiveFailures++
      return { ok: false, more: false, changed: false, abandoned: false, error }
    }
    if (this.stats.consecutiveFailures > 0) {
      this.#log.info({ afterFailures: this.stats.consecutiveFailures }, 'change feed reads Sync again')
      this.stats.consecutiveFailures = 0
    }
    let more = false
    let changed = false
    batch.forEach(([userId, sentCursor], index) => {
      const page = pages[index]
      if (page === undefined || page.userId !== userId) {
        this.#log.error({ userId, index }, 'change feed answer is missing this user\'s page; asking again next tick')
        return
      }
      if (this.#apply(userId, sentCursor, page)) more = true
      if (page.invalidations.length > 0 || page.resyncRequired) changed = true
    })
    return { ok: true, more, changed, abandoned: false }
  }

  /** Moves the user's cursor and publishes what the page reports; true when more is waiting. */
  #apply (userId: string, sentCursor: string | null, page: ChangesPage): boolean {
    // The user's streams closed while the request was out: nothing to publish, nobody to follow.
    if (!this.#cursors.has(userId)) return false
    this.#cursors.set(userId, page.cursor)
    // A null cursor asked for the watermark: what came before is covered by the state replayed on
    // connect, unless that replay went out before the position was known (Sync was unreachable).
    const messages = sentCursor !== null ? translatePage(page) : this.#lateStart.delete(userId) ? resyncMessages() : []
    for (const message of messages) this.#broker.publish(userId, message)
    if (sentCursor !== null) {
      const publishedAt = Date.now()
      for (const invalidation of page.invalidations) this.#observer.delivered(Math.max(0, publishedAt - Date.parse(invalidation.at)) / 1000)
      for (const invalidation of page.invalidations) {
        if (invalidation.kind !== 'connection' || !isRevocation(invalidation)) continue
        // Entries written before the feed named the provider came from Google connections.
        for (const listener of this.#revocationListeners) listener(userId, invalidation.connectionId, invalidation.provider ?? 'google')
      }
    }
    this.#wake(userId)
    return page.hasMore
  }
}

export interface ChangeFeedPluginOptions {
  realtime?: Partial<ChangeFeedOptions>
}
