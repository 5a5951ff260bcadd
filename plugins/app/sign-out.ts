import fp from 'fastify-plugin'

export interface SignedOut { userId: string, sessionHandle: string }
export type SignOutListener = (signedOut: SignedOut) => void | Promise<void>

export interface SignOut {
  /** Adds something to do after every sign-out. */
  onSignedOut: (listener: SignOutListener) => void
  /** Called by the session plugin once the library has revoked the session. */
  afterSignOut: (signedOut: SignedOut) => Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    signOut: SignOut
  }
}

// What sign-out does besides revoking the session (specification, Sessions item 5): its access
// tokens are refused on every backend process, the streams opened with it close, and the Sync
// service is told to stop the user's provider watches. The stop goes through the outbox, so
// sign-out answers at once whether or not Sync is reachable, and the stop arrives when Sync
// answers again, also after a restart.
export default fp(async function signOut (fastify) {
  const listeners: SignOutListener[] = []

  async function afterSignOut (signedOut: SignedOut): Promise<void> {
    for (const listener of listeners) {
      try {
        await listener(signedOut)
      } catch (error) {
        // The session is already revoked; a follow-up failing must not undo the answer.
        fastify.log.error({ err: error }, 'sign-out follow-up failed')
      }
    }
  }

  fastify.decorate('signOut', { onSignedOut: (listener: SignOutListener) => { listeners.push(listener) }, afterSignOut })

  // First, so the session's access tokens are refused everywhere before anything else runs.
  fastify.signOut.onSignedOut(async ({ userId, sessionHandle }) => {
    const closed = await fastify.sessionRevocations.sessionEnded({ userId, sessionHandle, reason: 'signOut' })
    if (closed > 0) fastify.log.info({ closed }, 'sign-out: closed the session\'s event streams')
  })
  fastify.signOut.onSignedOut(async ({ userId }) => {
    await fastify.outbox.add(userId, [{ kind: 'watchStop' }])
    fastify.outbox.kick(userId)
  })
}, { name: 'sign-out', dependencies: ['outbox', 'sse-broker', 'session-revocations'] })
