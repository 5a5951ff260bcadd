import { createHash, timingSafeEqual } from 'node:crypto'

/**
 * Compares two secrets in time that does not depend on where they differ (or on their lengths:
 * both are hashed to the same size first), so an attacker cannot guess a token byte by byte.
 */
export function secretsEqual (presented: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest()
  return timingSafeEqual(digest(presented), digest(expected))
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken (authorization: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')
  return match?.[1]
}
