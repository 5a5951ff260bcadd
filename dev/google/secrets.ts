// Tokens, codes and identifiers as the Google stand-in mints them.
import { randomBytes } from 'node:crypto'
import { randomText } from '../stand-in/secrets.js'

export { digest, safeEqual } from '../stand-in/secrets.js'

// The prefixes are Google's (`ya29.` access tokens, `1//` refresh tokens, `4/0` codes); clients and
// log scrubbers sometimes recognise tokens by them.
export const newAccessToken = (): string => `ya29.${randomText(96)}`
export const newRefreshToken = (): string => `1//${randomText(72)}`
export const newAuthorizationCode = (): string => `4/0${randomText(48)}`
export const newOpaqueId = (bytes = 16): string => randomText(bytes)

const BASE32HEX = '0123456789abcdefghijklmnopqrstuv'

/** An event id as Google mints them: lower-case base32hex (RFC 2938 section 3.1.2), 26 characters. */
export function newEventId (): string {
  const bytes = randomBytes(26)
  let id = ''
  for (const byte of bytes) id += BASE32HEX[byte & 31]
  return id
}

/** A Google account's `sub`: a decimal number of 21 digits. */
export function newSubject (): string {
  const bytes = randomBytes(21)
  let sub = '1'
  for (let i = 1; i < 21; i++) sub += String((bytes[i] ?? 0) % 10)
  return sub
}
