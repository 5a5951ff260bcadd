// What a call can fail with, as a client needs to tell the cases apart: the session is gone (sign
// in again), a dependency is down (try later, keep the tokens), or the request itself was refused.
import type { ErrorResponse } from '../schemas/errors.js'

/** The backend refused the request; `code` is the stable code of its error body when it has one. */
export class ApiError extends Error {
  override readonly name = 'ApiError'

  constructor (
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly body: Partial<ErrorResponse> | unknown = null
  ) {
    super(message)
  }
}

/**
 * The session ended: the refresh token was refused (signed out elsewhere, a password reset, a
 * revoked provider grant, token theft) or there never was one. The client has dropped its tokens
 * and called `onReauthRequired`; only a new sign-in helps.
 */
export class SessionEndedError extends Error {
  override readonly name = 'SessionEndedError'

  constructor (readonly reason: 'notSignedIn' | 'refreshRefused' | 'accessRefused') {
    super(reason === 'notSignedIn' ? 'not signed in' : 'the session has ended; sign in again')
  }
}

/**
 * The backend or a service behind it could not answer (503, or no answer at all). The session is
 * kept: a dependency that is down never signs anyone out. `retryAfterMs` is the server's hint.
 */
export class UnavailableError extends Error {
  override readonly name = 'UnavailableError'

  constructor (message: string, readonly retryAfterMs: number | null, readonly code?: string) {
    super(message)
  }
}
