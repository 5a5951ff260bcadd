// What the sign-in dialogs say when the server refuses for now (429): the wait it gives, in the
// largest unit that reads naturally. Retry-After is seconds or an HTTP date (RFC 9110, 10.2.3),
// read by the one parser the services use.
import { retryAfterMs } from '../../../lib/backoff.js'

export function waitFromRetryAfter (header: string | null, now = Date.now()): number | undefined {
  const ms = retryAfterMs(header, new Date(now))
  return ms === null ? undefined : Math.max(1, Math.ceil(ms / 1000))
}

export function tooManyAttemptsMessage (seconds: number | undefined): string {
  if (seconds === undefined) return 'Too many attempts. Please try again later.'
  if (seconds < 60) return `Too many attempts. Try again in ${seconds} ${seconds === 1 ? 'second' : 'seconds'}.`
  const minutes = Math.ceil(seconds / 60)
  return `Too many attempts. Try again in ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}.`
}
