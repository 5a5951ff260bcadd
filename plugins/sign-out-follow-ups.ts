import fp from 'fastify-plugin'
import type { Collection } from 'mongodb'
import { SyncRequestError } from '../lib/sync-client.js'
import { retryDelay, type RetryPolicy } from '../lib/events/outbox.js'

// A watch stop Sync has not taken yet, one per user (repeated sign-outs coalesce). Kept in the
// backend's database so a restart during a Sync outage still stops the watches afterwards.
interface PendingWatchStop {
  _id: string
  attempts: number
  nextAttemptAt: Date
  firstFailedAt: Date
}

export interface SignOutFollowUps {
  // Retries every pending watch stop that is due; the background sweep calls it too.
  sweep: () => Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    signOutFollowUps: SignOutFollowUps
  }
}

const RETRY: RetryPolicy = { baseDelayMs: 1000, maxDelayMs: 10 * 60_000 }
const SWEEP_INTERVAL_MS = 5000
// While one process retries a user's stop, others leave it alone for this long.
const CLAIM_MS = 30_000
const SWEEP_BATCH = 50

// What sign-out does besides revoking the session: streams opened with the session close, and
// the Sync service stops the user's provider watches. Sync being away never fails a sign-out;
// the stop is kept and retried with growing, jittered delays until Sync takes it.
export default fp(async function signOutFollowUps (fastify) {
  const pending: Collection<PendingWatchStop> = fastify.mongo.db.collection('pendingWatchStops')
  await pending.createIndex({ nextAttemptAt: 1 }, { name: 'due' })

  // Undefined when the stop is done with (taken, or refused for good); the error when it must be retried.
  async function stopWatches (userId: string): Promise<unknown> {
    try {
      await fastify.syncClient.stopWatches(userId)
      return undefined
    } catch (error) {
      if (error instanceof SyncRequestError && error.statusCode < 500) {
        fastify.log.error({ err: error, userId }, 'sign-out: Sync refused to stop the user\'s watches; dropped')
        return undefined
      }
      return error
    }
  }

  async function scheduleRetry (userId: string, attempts: number, reason: unknown): Promise<void> {
    const delay = retryDelay(attempts, RETRY)
    const now = Date.now()
    await pending.updateOne(
      { _id: userId },
      { $set: { attempts: attempts + 1, nextAttemptAt: new Date(now + delay) }, $setOnInsert: { firstFailedAt: new Date(now) } },
      { upsert: true }
    )
    fastify.log.warn({ err: reason, userId, attempt: attempts + 1, retryInMs: delay }, 'sign-out: Sync did not stop the user\'s watches; will retry')
  }

  async function retryOne (record: PendingWatchStop): Promise<void> {
    const now = Date.now()
    const claimed = await pending.findOneAndUpdate(
      { _id: record._id, nextAttemptAt: record.nextAttemptAt },
      { $set: { nextAttemptAt: new Date(now + CLAIM_MS) } }
    )
    if (claimed === null) return
    const failure = await stopWatches(record._id)
    if (failure === undefined) {
      await pending.deleteOne({ _id: record._id })
      fastify.log.info({ userId: record._id, attempts: record.attempts }, 'sign-out: Sync stopped the user\'s watches after a retry')
    } else {
      await scheduleRetry(record._id, record.attempts, failure)
    }
  }

  let sweeping: Promise<void> | undefined
  async function sweep (): Promise<void> {
    sweeping ??= (async () => {
      try {
        const due = await pending.find({ nextAttemptAt: { $lte: new Date() } }).sort({ nextAttemptAt: 1 }).limit(SWEEP_BATCH).toArray()
        for (const record of due) await retryOne(record)
      } finally {
        sweeping = undefined
      }
    })()
    await sweeping
  }

  fastify.decorate('signOutFollowUps', { sweep })

  fastify.onSessionRevoked(async ({ userId, sessionHandle }) => {
    const closed = fastify.sse.closeSession(sessionHandle)
    if (closed > 0) fastify.log.info({ closed }, 'sign-out: closed the session\'s event streams')
    const failure = await stopWatches(userId)
    if (failure !== undefined) await scheduleRetry(userId, 0, failure)
  })

  let timer: NodeJS.Timeout | undefined
  fastify.addHook('onReady', async () => {
    timer = setInterval(() => {
      sweep().catch((error: unknown) => { fastify.log.error({ err: error }, 'sign-out: retrying watch stops failed') })
    }, SWEEP_INTERVAL_MS)
    timer.unref()
  })
  fastify.addHook('onClose', async () => {
    clearInterval(timer)
    await sweeping
  })
}, { name: 'sign-out-follow-ups', dependencies: ['mongo', 'session', 'sync-client', 'sse-broker'] })
