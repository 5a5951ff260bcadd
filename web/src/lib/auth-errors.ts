// What the account dialogs say when a request fails outright: never "something went wrong", but
// what happened and what to do, from what the answer (or its absence) shows.
import { tooManyAttemptsMessage, waitFromRetryAfter } from './retry-after.js'

export type AuthFailure =
  /** No answer at all: the browser is offline or the server cannot be reached. */
  | { kind: 'network', online: boolean }
  | { kind: 'status', status: number, retryAfter: string | null }

export function authFailureMessage (failure: AuthFailure, now = Date.now()): string {
  if (failure.kind === 'network') {
    return failure.online
      ? 'The server cannot be reached right now. Nothing was changed; try again in a moment.'
      : 'This browser is offline. Connect to the internet and try again.'
  }
  const { status } = failure
  if (status === 429) return tooManyAttemptsMessage(waitFromRetryAfter(failure.retryAfter, now))
  if (status === 503 || status === 502 || status === 504) return `The sign-in service is not available right now (${status}). Try again in a few minutes.`
  if (status >= 500) return `The server could not finish this (${status}). Try again in a few minutes.`
  if (status === 413) return 'What was entered is too long.'
  return `The server refused the request (${status}). Reload the page and try again.`
}
