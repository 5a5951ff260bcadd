// The use cases of provider connections, in one place for the routes and the job worker:
// authorize (after the OAuth callback), a credential handed over by the backend, and restart (the
// refresh button) are here; the jobs that import and pull calendars (calendar-reads.ts) and write
// own-data changes (provider-writes.ts), the notification channels (connection-watches.ts) and
// what every job of a connection shares (connection-jobs.ts) each have their own file. Each drives
// the connection state machine and appends the invalidations the backend turns into stream
// messages. Provider events reach the user's data only through the backend.
import { randomUUID } from 'node:crypto'
import type { CredentialHandOver, CredentialHandOverResult, ImportOperation, Provider } from '../../schemas/sync/index.js'
import type { ConnectionRecord } from '../lib/connections/record.js'
import { isLive } from '../lib/connections/state-machine.js'
import type { ProviderCredential } from '../lib/credentials.js'
import { SyncServiceError } from '../lib/errors.js'
import type { JobType } from '../stores/job-queue.js'
import type { JobHandler } from './job-worker.js'
import { calendarOf, ConnectionJobs, jobKeys, type SyncEngineParts } from './connection-jobs.js'
import { ConnectionWatches, type MaintenanceReport, type NotificationOutcome } from './connection-watches.js'
import { CalendarReads } from './calendar-reads.js'
import { ProviderWrites } from './provider-writes.js'

export class SyncEngine {
  readonly #parts: SyncEngineParts
  readonly #jobs: ConnectionJobs
  readonly #watches: ConnectionWatches
  readonly #reads: CalendarReads
  readonly #writes: ProviderWrites

  constructor (parts: SyncEngineParts) {
    this.#parts = parts
    this.#jobs = new ConnectionJobs(parts)
    this.#watches = new ConnectionWatches(parts, this.#jobs)
    this.#reads = new CalendarReads(parts, this.#jobs, this.#watches)
    this.#writes = new ProviderWrites(parts, this.#jobs)
  }

  handlers (): Record<JobType, JobHandler> {
    return {
      import: (job) => this.#jobs.guard(job, (connection, context, provider) => this.#reads.import(job, connection, context, provider)),
      pull: (job) => this.#jobs.guard(job, (connection, context, provider) => this.#reads.pull(job, connection, context, provider)),
      providerWrite: (job) => this.#jobs.guard(job, (connection, context, provider) => this.#writes.write(job, connection, context, provider))
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
      await this.#writes.queue(connection, write)
      await this.#parts.held.release(write)
    }
    return connection
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
      const acting = await this.#jobs.context(existing)
      if (acting !== null) {
        const known = await this.#parts.calendars.listByConnection(id)
        await this.#watches.ensureWatches(acting.provider, acting.context, known.map(calendarOf))
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

  /** See ProviderWrites.hold. */
  async holdProviderWrite (...args: Parameters<ProviderWrites['hold']>): Promise<void> {
    await this.#writes.hold(...args)
  }

  /** See ProviderWrites.queue. */
  async queueProviderWrite (...args: Parameters<ProviderWrites['queue']>): Promise<void> {
    await this.#writes.queue(...args)
  }

  async stopWatches (userId: string): Promise<number> {
    return await this.#watches.stopWatches(userId)
  }

  async notify (...args: Parameters<ConnectionWatches['notify']>): Promise<NotificationOutcome> {
    return await this.#watches.notify(...args)
  }

  async pullOverdueCalendars (): Promise<number> {
    return await this.#watches.pullOverdueCalendars()
  }

  async maintainWatches (): Promise<MaintenanceReport> {
    return await this.#watches.maintainWatches()
  }
}
