import type { FastifyBaseLogger } from 'fastify'

interface SignedOut { userId: string, sessionHandle: string }
type SignOutListener = (signedOut: SignedOut) => void | Promise<void>

export interface SignOut {
  /** Adds something to do after every sign-out. */
  onSignedOut: (listener: SignOutListener) => void
  /** Called by the session plugin once the library has revoked the session. */
  afterSignOut: (signedOut: SignedOut) => Promise<void>
}

/** The follow-ups of a sign-out, each run in turn; one that fails is logged and the rest still run. */
export function createSignOut (log: FastifyBaseLogger): SignOut {
  const listeners: SignOutListener[] = []
  return {
    onSignedOut: (listener: SignOutListener) => { listeners.push(listener) },
    async afterSignOut (signedOut: SignedOut): Promise<void> {
      for (const listener of listeners) {
        try {
          await listener(signedOut)
        } catch (error) {
          // The session is already revoked; a follow-up failing must not undo the answer.
          log.error({ err: error }, 'sign-out follow-up failed')
        }
      }
    }
  }
}
