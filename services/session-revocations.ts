import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyBaseLogger } from 'fastify'
import Session from 'supertokens-node/recipe/session'
import { PeriodicTask } from '../lib/periodic-task.js'
import type { EndedSession, RevocationReason, SessionRevocationStore, StoredEnd } from '../stores/session-revocations.js'
import type { SseBroker } from './sse-broker.js'

/**
 * Ended sessions stay ended on every backend process. Access tokens are verified locally (no call
 * to the session core per request), so a session the core has forgotten (sign-out, a password
 * reset, refresh-token theft, a revoked provider grant) would keep working with its access token
 * until that expires. Every such end is written to the store; each process keeps the rows in
 * memory and reads what is new about once a second, so the check on a request is one Map lookup
 * and a revoked token is refused everywhere within about a second (and at once in the process
 * that saw the end). The process that learns of a revocation also closes the event streams opened
 * with that session.
 */
export interface SessionRevocations {
  /** Revokes every session of the user at the session core and ends them everywhere; answers the counts here. */
  revokeUser: (userId: string, reason: RevocationReason) => Promise<{ sessionsRevoked: number, streamsClosed: number }>
  /** Ends everywhere a session the session core already forgot; answers how many streams closed here. */
  sessionEnded: (ended: EndedSession) => Promise<number>
  /** Whether the session was ended while its access tokens may still be live. */
  isRevoked: (sessionHandle: string) => boolean
  /** Told the lifetime of each verified access token, so a revocation is kept as long as its tokens live. */
  noteAccessTokenLifetime: (lifetimeMs: number) => void
  /** Reads what other processes revoked since the last read (the poll does this; tests call it). */
  refresh: () => Promise<void>
}

export interface SessionRevocationOptions {
  /** Pause between two reads of new revocations: the bound on how late another process learns of one. */
  revocationPollMs: number
}

export const defaultSessionRevocationOptions: SessionRevocationOptions = { revocationPollMs: 1000 }

/** The session core's default access-token lifetime (access_token_validity, 3600 s). */
const DEFAULT_ACCESS_TOKEN_LIFETIME_MS = 60 * 60 * 1000
/**
 * Each read asks again for what was written this long before the newest row it saw: a row is
 * stamped when it is written and may become visible a little later, after a row stamped later.
 */
const REREAD_WINDOW_MS = 60_000
const WRITE_WAIT_MS = 1000

export interface SessionRevocationDependencies {
  store: SessionRevocationStore
  streams: Pick<SseBroker, 'closeSession' | 'closeUser'>
  log: FastifyBaseLogger
  options: SessionRevocationOptions
}

export class SessionRevocationService implements SessionRevocations {
  readonly #store: SessionRevocationStore
  readonly #streams: SessionRevocationDependencies['streams']
  readonly #log: FastifyBaseLogger
  readonly #poller: PeriodicTask
  // handle -> when its last access token expires (epoch ms)
  readonly #revoked = new Map<string, number>()
  // Ends not yet written (the database was unavailable); each read writes them first.
  readonly #unwritten = new Map<string, StoredEnd>()
  #newestSeen: Date | undefined
  #tokenLifetimeMs = DEFAULT_ACCESS_TOKEN_LIFETIME_MS
  #failing = false

  constructor ({ store, streams, log, options }: SessionRevocationDependencies) {
    this.#store = store
    this.#streams = streams
    this.#log = log
    this.#poller = new PeriodicTask({
      intervalMs: options.revocationPollMs,
      run: async () => {
        await this.refresh()
        if (this.#failing) this.#log.info('session revocations are read again')
        this.#failing = false
      },
      onError: (error) => {
        if (!this.#failing) this.#log.error({ err: error }, 'session revocations could not be read; retrying')
        this.#failing = true
      }
    })
  }

  /** Reads what was revoked before this process started, then keeps reading. */
  async start (): Promise<void> {
    await this.refresh()
    this.#poller.start()
  }

  async stop (): Promise<void> {
    await this.#poller.stop()
  }

  async revokeUser (userId: string, reason: RevocationReason): Promise<{ sessionsRevoked: number, streamsClosed: number }> {
    const handles = await Session.revokeAllSessionsForUser(userId)
    const closed = await this.#endSessions(handles.map((sessionHandle) => ({ sessionHandle, userId, reason })))
    // Every session of the user ended, so every stream of the user here ends with them.
    return { sessionsRevoked: handles.length, streamsClosed: closed + this.#streams.closeUser(userId) }
  }

  async sessionEnded (ended: EndedSession): Promise<number> {
    return await this.#endSessions([ended])
  }

  isRevoked (sessionHandle: string): boolean {
    const until = this.#revoked.get(sessionHandle)
    return until !== undefined && until > Date.now()
  }

  noteAccessTokenLifetime (lifetimeMs: number): void {
    if (lifetimeMs > this.#tokenLifetimeMs) this.#tokenLifetimeMs = lifetimeMs
  }

  async refresh (): Promise<void> {
    if (this.#unwritten.size > 0) await this.#write([...this.#unwritten.values()])
    const found = this.#newestSeen === undefined
      ? await this.#store.live()
      : await this.#store.stampedSince(new Date(this.#newestSeen.getTime() - REREAD_WINDOW_MS))
    for (const row of found) {
      if (this.#newestSeen === undefined || row.revokedAt > this.#newestSeen) this.#newestSeen = row.revokedAt
      if (this.#remember(row._id, row.expiresAt.getTime())) {
        const closed = this.#streams.closeSession(row._id)
        if (closed > 0) this.#log.info({ closed }, 'closed the event streams of a session ended elsewhere')
      }
    }
    const now = Date.now()
    for (const [handle, until] of this.#revoked) {
      if (until <= now) this.#revoked.delete(handle)
    }
  }

  #remember (handle: string, expiresAtMs: number): boolean {
    const known = this.#revoked.get(handle)
    if (known !== undefined && known >= expiresAtMs) return false
    this.#revoked.set(handle, expiresAtMs)
    return known === undefined
  }

  async #write (ends: StoredEnd[]): Promise<void> {
    try {
      await this.#store.record(ends)
      for (const end of ends) this.#unwritten.delete(end.sessionHandle)
    } catch (error) {
      // Refused here already; other processes learn of it once the database takes the write.
      for (const end of ends) this.#unwritten.set(end.sessionHandle, end)
      this.#log.error({ err: error, sessions: ends.length }, 'session revocation not stored yet; other backend processes learn of it once it is')
    }
  }

  async #endSessions (ends: EndedSession[]): Promise<number> {
    if (ends.length === 0) return 0
    const expiresAt = new Date(Date.now() + this.#tokenLifetimeMs)
    let streamsClosed = 0
    for (const end of ends) {
      this.#remember(end.sessionHandle, expiresAt.getTime())
      streamsClosed += this.#streams.closeSession(end.sessionHandle)
    }
    // Refused here already; a database that is slow to take the write does not hold the answer
    // (sign-out, a reset) longer than this, and the write goes on (or is retried) behind it.
    const written = this.#write(ends.map((end) => ({ ...end, expiresAt })))
    await Promise.race([written, sleep(WRITE_WAIT_MS, undefined, { ref: false })])
    return streamsClosed
  }
}
