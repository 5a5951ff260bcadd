import fp from 'fastify-plugin'
import Session from 'supertokens-node/recipe/session'

/**
 * Revoking every session of a user. The session core forgets them at once, so refreshes fail and
 * streams (which verify with the core) are refused; access tokens are verified locally, so this
 * process also remembers the revoked sessions and refuses their access tokens until those expire
 * by themselves. Other backend processes refuse them once they expire (or at once, when their own
 * change feed reports the same revocation).
 */
export interface SessionRevocations {
  /** Revokes every session of the user and closes their event streams here; answers the counts. */
  revokeUser: (userId: string) => Promise<{ sessionsRevoked: number, streamsClosed: number }>
  /** Whether this process revoked the session while its access tokens may still be live. */
  isRevoked: (sessionHandle: string) => boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    sessionRevocations: SessionRevocations
  }
}

// Longer than any access token lives (the session core's default is an hour).
const REMEMBER_MS = 24 * 60 * 60 * 1000

export default fp(async function sessionRevocations (fastify) {
  const revoked = new Map<string, number>()

  function prune (now: number): void {
    for (const [handle, until] of revoked) {
      if (until > now) break
      revoked.delete(handle)
    }
  }

  fastify.decorate('sessionRevocations', {
    async revokeUser (userId: string) {
      const handles = await Session.revokeAllSessionsForUser(userId)
      const now = Date.now()
      prune(now)
      for (const handle of handles) {
        // Kept in expiry order, so pruning stops at the first live one.
        revoked.delete(handle)
        revoked.set(handle, now + REMEMBER_MS)
      }
      return { sessionsRevoked: handles.length, streamsClosed: fastify.sse.closeUser(userId) }
    },
    isRevoked: (sessionHandle: string) => {
      const until = revoked.get(sessionHandle)
      return until !== undefined && until > Date.now()
    }
  })
}, { name: 'session-revocations', dependencies: ['sse-broker'] })
