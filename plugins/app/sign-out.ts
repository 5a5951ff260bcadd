import fp from 'fastify-plugin'
import { createSignOut, type SignOut } from '../../services/sign-out.js'

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
  const signOut = createSignOut(fastify.log)
  // First, so the session's access tokens are refused everywhere before anything else runs.
  signOut.onSignedOut(async ({ userId, sessionHandle }) => {
    const closed = await fastify.sessionRevocations.sessionEnded({ userId, sessionHandle, reason: 'signOut' })
    if (closed > 0) fastify.log.info({ closed }, 'sign-out: closed the session\'s event streams')
  })
  signOut.onSignedOut(async ({ userId }) => {
    await fastify.outbox.add(userId, [{ kind: 'watchStop' }])
    fastify.outbox.kick(userId)
  })
  fastify.decorate('signOut', signOut)
}, { name: 'sign-out', dependencies: ['outbox', 'sse-broker', 'session-revocations'] })
