// Tokens, codes and identifiers as the Microsoft stand-in mints them. Secrets are kept by digest,
// so a lookup never holds or compares the secret itself byte by byte.
import { randomBytes, randomUUID } from 'node:crypto'
import { randomText } from '../stand-in/secrets.js'

export { randomText, safeEqual } from '../stand-in/secrets.js'
export const newGuid = (): string => randomUUID()

// The prefixes follow what Microsoft accounts hand out (`EwB` access tokens, `M.C5` codes,
// `M.R3` refresh tokens). Clients must treat all three as opaque; the prefixes only let a log
// scrubber or a person tell them apart.
export const newAccessToken = (): string => `EwB${randomText(120)}`
export const newRefreshToken = (): string => `M.R3_${randomText(96)}`
export const newAuthorizationCode = (): string => `M.C5_${randomText(48)}`

/** A personal account's 16-hex-digit id (what Graph answers as the user's `id`). */
export const newPersonalId = (): string => randomBytes(8).toString('hex')

// Outlook item ids are long base64 strings that start with `AAMkA`; clients must treat them as
// opaque. Here an id carries 16 random bytes, and an instance id also the series it belongs to and
// its original start, so occurrences need no storage until they are changed.
const ITEM_PREFIX = 'AAMkA'
const INSTANCE_MARK = 1

export function newItemId (): string {
  return `${ITEM_PREFIX}${randomBytes(16).toString('base64url')}=`
}

export function instanceItemId (seriesId: string, originalStartMs: number): string {
  const series = itemBytes(seriesId)
  if (series === undefined || series.length !== 16) throw new Error(`not a series id: ${seriesId}`)
  const buffer = Buffer.alloc(25)
  buffer[0] = INSTANCE_MARK
  series.copy(buffer, 1)
  buffer.writeBigInt64BE(BigInt(originalStartMs), 17)
  return `${ITEM_PREFIX}${buffer.toString('base64url')}=`
}

function itemBytes (id: string): Buffer | undefined {
  if (!id.startsWith(ITEM_PREFIX) || !id.endsWith('=')) return undefined
  const body = id.slice(ITEM_PREFIX.length, -1)
  if (!/^[A-Za-z0-9_-]+$/.test(body)) return undefined
  return Buffer.from(body, 'base64url')
}

export type ParsedItemId = { kind: 'item' } | { kind: 'instance', seriesId: string, originalStartMs: number }

/** What an id names; undefined when it is not an id this stand-in could have issued (Graph: malformed). */
export function parseItemId (id: string): ParsedItemId | undefined {
  const bytes = itemBytes(id)
  if (bytes === undefined) return undefined
  if (bytes.length === 16) return { kind: 'item' }
  if (bytes.length === 25 && bytes[0] === INSTANCE_MARK) {
    return {
      kind: 'instance',
      seriesId: `${ITEM_PREFIX}${bytes.subarray(1, 17).toString('base64url')}=`,
      originalStartMs: Number(bytes.readBigInt64BE(17))
    }
  }
  return undefined
}

/**
 * A change key as Exchange forms them: base64 of a per-calendar prefix and a growing change
 * number. `@odata.etag` is `W/"<changeKey>"`.
 */
export function changeKeyOf (prefix: Buffer, changeNumber: number): string {
  const buffer = Buffer.alloc(prefix.length + 6)
  prefix.copy(buffer)
  buffer.writeUIntBE(changeNumber, prefix.length, 6)
  return buffer.toString('base64')
}

/** An iCalendar UID in the form Outlook writes them (hex of a fixed header and a random part). */
export function newICalUid (): string {
  return `040000008200E00074C5B7101A82E00800000000${randomBytes(24).toString('hex').toUpperCase()}`
}
