import fp from 'fastify-plugin'

const STOP_WATCHES_ATTEMPTS = 5
const FIRST_RETRY_MS = 1000

// What sign-out does besides revoking the session: streams opened with the session close, and
// the Sync service stops the user's provider watches. Sync being away never fails a sign-out;
// the request is retried in the background with growing, jittered delays.
export default fp(async function signOutFollowUps (fastify) {
  const pendingRetries = new Set<NodeJS.Timeout>()

  async function stopWatches (userId: string, attempt: number): Promise<void> {
    try {
      await fastify.syncClient.stopWatches(userId)
    } catch (error) {
      if (attempt >= STOP_WATCHES_ATTEMPTS) {
        fastify.log.error({ err: error, attempt }, 'sign-out: Sync did not stop the user\'s watches; giving up')
        return
      }
      const delay = FIRST_RETRY_MS * 2 ** (attempt - 1) * (0.5 + Math.random())
      fastify.log.warn({ err: error, attempt, retryInMs: Math.round(delay) }, 'sign-out: Sync did not stop the user\'s watches; will retry')
      const timer = setTimeout(() => {
        pendingRetries.delete(timer)
        stopWatches(userId, attempt + 1).catch(() => {})
      }, delay)
      timer.unref()
      pendingRetries.add(timer)
    }
  }

  fastify.onSessionRevoked(async ({ userId, sessionHandle }) => {
    const closed = fastify.sse.closeSession(sessionHandle)
    if (closed > 0) fastify.log.info({ closed }, 'sign-out: closed the session\'s event streams')
    await stopWatches(userId, 1)
  })

  fastify.addHook('onClose', async () => {
    for (const timer of pendingRetries) clearTimeout(timer)
  })
}, { name: 'sign-out-follow-ups', dependencies: ['session', 'sync-client', 'sse-broker'] })
