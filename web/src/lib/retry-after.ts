// What the sign-in dialogs say when the server refuses for now (429): the wait it gives, in the
// largest unit that reads naturally. Retry-After is seconds or an HTTP date (RFC 9110, 10.2.3).

export function waitFromRetryAfter (header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined
  const seconds = /^\d+$/.test(header.trim()) ? Number(header.trim()) : (Date.parse(header) - now) / 1000
  return Number.isFinite(seconds) ? Math.max(1, Math.ceil(seconds)) : undefined
}

export function tooManyAttemptsMessage (seconds: number | undefined): string {
  if (seconds === undefined) return 'Too many attempts. Please try again later.'
  if (seconds < 60) return `Too many attempts. Try again in ${seconds} ${seconds === 1 ? 'second' : 'seconds'}.`
  const minutes = Math.ceil(seconds / 60)
  return `Too many attempts. Try again in ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}.`
}
