import { randomUUID } from 'node:crypto'
import type { ClientSession } from 'mongodb'
import type { FastifyBaseLogger } from 'fastify'
import { SyncRequestError, SyncUnavailableError, type SyncClient } from '../clients/sync.js'
import { backoffDelay, type BackoffPolicy } from '../lib/backoff.js'
import type { OutboxStore } from '../stores/outbox.js'
import { outboxRecords, type NewOutboxEntry, type OutboxEntry, type OutboxEntryKind, type OutboxRecord } from '../lib/outbox.js'
import { PeriodicTask } from '../lib/periodic-task.js'
import { keepLease } from '../lib/lease-keeper.js'
import { currentRequestId, withRequestId } from '../lib/request-id.js'

/**
 * How long a process's claim on a user's entries lasts unless renewed. The holder renews it every
 * third of that while it sends, so a delivery that takes longer keeps it; a crashed holder's claim
 * lapses this soon, and the next sweep (every 2 s) of any process takes the entries over.
 */
const OUTBOX_LEASE_MS = 5000

export type DeliverEntry = (userId: string, entry: OutboxEntry) => Promise<void>

export interface OutboxOptions {
  store: OutboxStore
  deliver: DeliverEntry
  log: FastifyBaseLogger
  /** How often the sender looks for entries that are due (entries of this process are sent at once). */
  pollIntervalMs: number
  backoff: BackoffPolicy
  /** How long a claim on a user's entries lasts without renewal (a crashed holder's claim expires). */
  leaseMs?: number
  now?: () => Date
  random?: () => number
}

// Operators read these lines; each kind says what it means for the user.
const MESSAGES: Record<OutboxEntryKind, { delivered: string, retry: string, refused: string }> = {
  eventChange: {
    delivered: 'event change reported to Sync',
    retry: 'Sync did not take an event change report; will retry',
    refused: 'Sync refused an event change report; dropped'
  },
  watchStop: {
    delivered: 'sign-out: Sync stopped the user\'s watches',
    retry: 'sign-out: Sync did not stop the user\'s watches; will retry',
    refused: 'sign-out: Sync refused to stop the user\'s watches; dropped'
  },
  restartSync: {
    delivered: 'Sync restarted the user\'s sync',
    retry: 'Sync did not take a sync restart; will retry',
    refused: 'Sync refused a sync restart; dropped'
  },
  credentialHandOver: {
    delivered: 'provider credential handed to Sync',
    retry: 'Sync did not take a provider credential; will retry',
    refused: 'Sync refused a provider credential; dropped'
  }
}

function logFields (userId: string, entry: OutboxEntry): Record<string, unknown> {
  if (entry.kind === 'eventChange') return { userId, kind: entry.kind, eventId: entry.report.eventId }
  // Never the credential itself.
  if (entry.kind === 'credentialHandOver') return { userId, kind: entry.kind, provider: entry.handOver.provider, mode: entry.handOver.mode }
  return { userId, kind: entry.kind }
}

/**
 * Sync answered that it has no such route: it is older than this backend (a rolling deploy). The
 * entry waits for a Sync that knows it, as it would for a Sync that is away.
 */
function syncLacksRoute (error: SyncRequestError): boolean {
  return error.statusCode === 404 && error.code === 'NOT_FOUND'
}

const BATCH = 50

/**
 * Stores what the backend must tell the Sync service and delivers it: one user's entries strictly
 * in the order they were written (an entry waits while an older one of the same user is failing;
 * one process at a time sends them, under a lease), every user independently, each entry until
 * Sync has it. An entry is removed only after Sync answered, so a restart resends at most the
 * entry that was in flight; its idempotency key makes Sync apply it once, or (watch stop, sync
 * restart) the operation is one a repeat leaves as it was.
 */
export class Outbox {
  readonly #options: OutboxOptions
  readonly #now: () => Date
  readonly #random: () => number
  readonly #running = new Map<string, Promise<void>>()
  readonly #queued = new Map<string, Promise<void>>()
  readonly #holder = randomUUID()
  readonly #leaseMs: number
  readonly #sweep: PeriodicTask
  #stopped = false

  constructor (options: OutboxOptions) {
    this.#options = options
    this.#now = options.now ?? (() => new Date())
    this.#random = options.random ?? Math.random
    this.#leaseMs = options.leaseMs ?? OUTBOX_LEASE_MS
    this.#sweep = new PeriodicTask({
      intervalMs: options.pollIntervalMs,
      run: async () => { await this.flushDue() },
      onError: (error) => { this.#options.log.error({ err: error }, 'outbox sweep failed') }
    })
  }

  /**
   * Stores entries for the user. Inside a transaction (`session`) they exist exactly when the
   * change they report does. Call `kick` once the write is complete to send them.
   */
  async add (userId: string, entries: NewOutboxEntry[], options: { session?: ClientSession, now?: Date } = {}): Promise<void> {
    if (entries.length === 0) return
    await this.#options.store.insert(outboxRecords(userId, entries, options.now ?? this.#now(), currentRequestId()), options.session)
  }

  start (): void {
    this.#stopped = false
    this.#sweep.start(0)
  }

  /** Delivers the user's due entries now; resolves once this user's queue was worked through. */
  async flush (userId: string): Promise<void> {
    // One run per user at a time keeps the order. A run in progress may have read the queue
    // before the caller's entry was written, so callers wait for one more run after it; all
    // callers arriving meanwhile share that run.
    const queued = this.#queued.get(userId)
    if (queued !== undefined) return await queued
    const running = this.#running.get(userId)
    if (running !== undefined) {
      const next = running.catch(() => {}).then(async () => {
        this.#queued.delete(userId)
        await this.flush(userId)
      })
      this.#queued.set(userId, next)
      return await next
    }
    const run = this.#deliverAll(userId).finally(() => { this.#running.delete(userId) })
    this.#running.set(userId, run)
    return await run
  }

  /** Starts delivery of the user's entries without waiting for it. */
  kick (userId: string): void {
    if (this.#stopped) return
    this.flush(userId).catch((error: unknown) => {
      this.#options.log.error({ err: error, userId }, 'outbox delivery failed')
    })
  }

  /** Delivers every user's due entries (what the timer does). */
  async flushDue (): Promise<void> {
    const users = await this.#options.store.dueUsers(this.#now())
    for (const userId of users) {
      if (this.#stopped) return
      await this.flush(userId)
    }
  }

  async pending (userId?: string, kind?: OutboxEntryKind): Promise<number> {
    return await this.#options.store.count(userId, kind)
  }

  async stop (): Promise<void> {
    this.#stopped = true
    await this.#sweep.stop()
    await Promise.allSettled([...this.#running.values(), ...this.#queued.values()])
  }

  async #deliverAll (userId: string): Promise<void> {
    if (!await this.#options.store.claim(userId, this.#holder, new Date(this.#now().getTime() + this.#leaseMs), this.#now())) return
    // Only a claim this process still holds is renewed: one that lapsed and was taken over is lost, never taken back.
    const claim = keepLease({
      leaseMs: this.#leaseMs,
      renew: async () => await this.#options.store.extend(userId, this.#holder, new Date(this.#now().getTime() + this.#leaseMs)),
      onRenewalError: (error) => this.#options.log.warn({ err: error, userId }, 'outbox lease renewal failed')
    })
    try {
      while (!this.#stopped) {
        // Entries are read in batches in order; only the first can be waiting for a retry, since
        // delivery stops at the first entry Sync does not take.
        const batch = await this.#options.store.oldest(userId, BATCH)
        if (batch.length === 0) return
        for (const record of batch) {
          // A claim lost (this process stalled past the lease and another took over) ends the run:
          // the entries are the other holder's now, and sending on would break their order.
          if (this.#stopped || claim.lost || record.nextAttemptAt > this.#now()) return
          if (!await this.#send(record)) return
        }
      }
    } finally {
      await claim.end()
      await this.#options.store.release(userId, this.#holder)
    }
  }

  /** Sends one entry; false when Sync did not take it and it waits for its retry. */
  async #send (record: OutboxRecord): Promise<boolean> {
    const { store, log } = this.#options
    const messages = MESSAGES[record.entry.kind]
    const fields = logFields(record.user, record.entry)
    try {
      await withRequestId(record.requestId, async () => { await this.#options.deliver(record.user, record.entry) })
      await store.remove(record._id)
      // A delivery after failures is news to an operator who saw the warnings; a first one is not.
      if (record.attempts > 0) log.info({ ...fields, attempts: record.attempts }, `${messages.delivered} after a retry`)
      else log.debug(fields, messages.delivered)
      return true
    } catch (error) {
      if (error instanceof SyncUnavailableError || (error instanceof SyncRequestError && (error.code === 'MAINTENANCE' || syncLacksRoute(error)))) {
        const delay = backoffDelay(record.attempts, this.#options.backoff, this.#random)
        await store.postpone(record._id, new Date(this.#now().getTime() + delay), error.message)
        log.warn({ ...fields, attempts: record.attempts + 1, retryInMs: delay, reason: error.message }, messages.retry)
        return false
      }
      if (error instanceof SyncRequestError) {
        // Sync answered and refused this entry for good (revoked connection, invalid report):
        // retrying cannot change the answer, and holding it would block the user's later entries.
        await store.remove(record._id)
        log.warn({ ...fields, statusCode: error.statusCode, code: error.code }, messages.refused)
        return true
      }
      throw error
    }
  }
}

/** Opens a credential sealed for the user's outbox; absent when no credential encryption key is configured. */
export type OpenOutboxCredential = (sealed: string, userId: string) => string

/** How each kind of entry reaches the Sync service. */
export function deliverThrough (client: SyncClient, openCredential?: OpenOutboxCredential): DeliverEntry {
  return async (userId, entry) => {
    switch (entry.kind) {
      case 'eventChange':
        await client.reportEventChange(entry.report)
        return
      // These two send no idempotency key: a repeat is harmless by nature (a second stop finds no
      // watch left, a second restart joins the pull already queued or, if that ran, pulls again and
      // finds nothing new; test/sync/internal-routes.test.ts), so Sync keeps no record of keys for them.
      case 'watchStop':
        await client.stopWatches(userId)
        return
      case 'restartSync':
        await client.restartSync(userId)
        return
      case 'credentialHandOver': {
        if (openCredential === undefined) throw new Error('a provider credential waits in the outbox but sync.credentialEncryptionKey is not configured')
        const { sealedRefreshToken, ...handOver } = entry.handOver
        await client.handOverCredential(userId, { ...handOver, refreshToken: openCredential(sealedRefreshToken, userId) })
      }
    }
  }
}
