import { setTimeout as sleep } from 'node:timers/promises'
import type { AnyBulkWriteOperation, Collection } from 'mongodb'
import fp from 'fastify-plugin'
import Session from 'supertokens-node/recipe/session'
import { withDatabaseDeadline } from '../../stores/database.js'
import { PeriodicTask } from '../../lib/periodic-task.js'

/**
 * Ended sessions stay ended on every backend process. Access tokens are verified locally (no call
 * to the session core per request), so a session the core has forgotten (sign-out, a password
 * reset, refresh-token theft, a revoked provider grant) would keep working with its access token
 * until that expires. Every such end is written to the `sessionRevocations` collection; each
 * process keeps the rows in memory and reads what is new about once a second, so the check on a
 * request is one Map lookup and a revoked token is refused everywhere within about a second (and
 * at once in the process that saw the end). The process that learns of a revocation also closes
 * the event streams opened with that session.
 */
export type RevocationReason = 'signOut' | 'passwordReset' | 'tokenTheft' | 'providerRevoked'

export interface EndedSession { sessionHandle: string, userId: string, reason: RevocationReason }

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

declare module 'fastify' {
  interface FastifyInstance {
    sessionRevocations: SessionRevocations
  }
}

interface RevocationRow {
  _id: string
  userId: string
  reason: RevocationReason
  /** The database's clock, so processes with skewed clocks still agree on what is new. */
  revokedAt: Date
  /** When the last access token of the session has expired; the TTL index removes the row then. */
  expiresAt: Date
}

/** The session core's default access-token lifetime (access_token_validity, 3600 s). */
export const DEFAULT_ACCESS_TOKEN_LIFETIME_MS = 60 * 60 * 1000
/**
 * Each read asks again for what was written this long before the newest row it saw: a row is
 * stamped when it is written and may become visible a little later, after a row stamped later.
 */
const REREAD_WINDOW_MS = 60_000
const COLLECTION = 'sessionRevocations'
const WRITE_WAIT_MS = 1000

export default fp<{ realtime?: Partial<SessionRevocationOptions> }>(async function sessionRevocations (fastify, opts) {
  const pollMs = opts.realtime?.revocationPollMs ?? defaultSessionRevocationOptions.revocationPollMs
  const log = fastify.log.child({ plugin: 'session-revocations' })
  const rows: Collection<RevocationRow> = fastify.mongo.db.collection(COLLECTION)
  await rows.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0 })
  await rows.createIndex({ revokedAt: 1 })

  // handle -> when its last access token expires (epoch ms)
  const revoked = new Map<string, number>()
  // Ends not yet written (the database was unavailable); each read writes them first.
  const unwritten = new Map<string, EndedSession & { expiresAt: Date }>()
  let newestSeen: Date | undefined
  let tokenLifetimeMs = DEFAULT_ACCESS_TOKEN_LIFETIME_MS
  let failing = false

  function remember (handle: string, expiresAtMs: number): boolean {
    const known = revoked.get(handle)
    if (known !== undefined && known >= expiresAtMs) return false
    revoked.set(handle, expiresAtMs)
    return known === undefined
  }

  async function write (ends: Array<EndedSession & { expiresAt: Date }>): Promise<void> {
    const operations: Array<AnyBulkWriteOperation<RevocationRow>> = ends.map((end) => ({
      updateOne: {
        filter: { _id: end.sessionHandle },
        update: { $currentDate: { revokedAt: true }, $set: { userId: end.userId, reason: end.reason, expiresAt: end.expiresAt } },
        upsert: true
      }
    }))
    try {
      await withDatabaseDeadline(async () => await rows.bulkWrite(operations, { ordered: false }))
      for (const end of ends) unwritten.delete(end.sessionHandle)
    } catch (error) {
      // Refused here already; other processes learn of it once the database takes the write.
      for (const end of ends) unwritten.set(end.sessionHandle, end)
      log.error({ err: error, sessions: ends.length }, 'session revocation not stored yet; other backend processes learn of it once it is')
    }
  }

  async function endSessions (ends: EndedSession[]): Promise<number> {
    if (ends.length === 0) return 0
    const expiresAt = new Date(Date.now() + tokenLifetimeMs)
    let streamsClosed = 0
    for (const end of ends) {
      remember(end.sessionHandle, expiresAt.getTime())
      streamsClosed += fastify.sse.closeSession(end.sessionHandle)
    }
    // Refused here already; a database that is slow to take the write does not hold the answer
    // (sign-out, a reset) longer than this, and the write goes on (or is retried) behind it.
    const written = write(ends.map((end) => ({ ...end, expiresAt })))
    await Promise.race([written, sleep(WRITE_WAIT_MS, undefined, { ref: false })])
    return streamsClosed
  }

  async function refresh (): Promise<void> {
    if (unwritten.size > 0) await write([...unwritten.values()])
    const filter = newestSeen === undefined
      ? { expiresAt: { $gt: new Date() } }
      : { revokedAt: { $gte: new Date(newestSeen.getTime() - REREAD_WINDOW_MS) } }
    // A silent database must not stop the poll for longer than a read's deadline.
    const found = await withDatabaseDeadline(async (signal) => await rows.find(filter, { projection: { revokedAt: 1, expiresAt: 1 }, signal }).toArray())
    for (const row of found) {
      if (newestSeen === undefined || row.revokedAt > newestSeen) newestSeen = row.revokedAt
      if (remember(row._id, row.expiresAt.getTime())) {
        const closed = fastify.sse.closeSession(row._id)
        if (closed > 0) log.info({ closed }, 'closed the event streams of a session ended elsewhere')
      }
    }
    const now = Date.now()
    for (const [handle, until] of revoked) {
      if (until <= now) revoked.delete(handle)
    }
  }

  // Before the first request, so a process that just started refuses what was revoked before it.
  await refresh()

  const poller = new PeriodicTask({
    intervalMs: pollMs,
    run: async () => {
      await refresh()
      if (failing) log.info('session revocations are read again')
      failing = false
    },
    onError: (error) => {
      if (!failing) log.error({ err: error }, 'session revocations could not be read; retrying')
      failing = true
    }
  })
  poller.start()
  fastify.addHook('onClose', async () => { await poller.stop() })

  fastify.decorate('sessionRevocations', {
    async revokeUser (userId: string, reason: RevocationReason) {
      const handles = await Session.revokeAllSessionsForUser(userId)
      const closed = await endSessions(handles.map((sessionHandle) => ({ sessionHandle, userId, reason })))
      // Every session of the user ended, so every stream of the user here ends with them.
      return { sessionsRevoked: handles.length, streamsClosed: closed + fastify.sse.closeUser(userId) }
    },
    sessionEnded: async (ended: EndedSession) => await endSessions([ended]),
    isRevoked: (sessionHandle: string) => {
      const until = revoked.get(sessionHandle)
      return until !== undefined && until > Date.now()
    },
    noteAccessTokenLifetime: (lifetimeMs: number) => {
      if (lifetimeMs > tokenLifetimeMs) tokenLifetimeMs = lifetimeMs
    },
    refresh
  })
}, { name: 'session-revocations', dependencies: ['mongo', 'sse-broker'] })
