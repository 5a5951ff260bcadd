// Secrets as every stand-in keeps them: by digest, so a lookup never holds or compares the secret
// itself byte by byte. What the secrets look like (their prefixes and lengths) is each provider's.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

export const digest = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('base64url')

/** Constant-time comparison of two secrets of any length (their digests have equal length). */
export function safeEqual (a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a, 'utf8').digest(), createHash('sha256').update(b, 'utf8').digest())
}

export const randomText = (bytes: number): string => randomBytes(bytes).toString('base64url')
