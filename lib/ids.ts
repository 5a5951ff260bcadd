import { ObjectId } from 'bson'

// Every id the service mints (users, events, connections, outbox entries) is a MongoDB ObjectId,
// written on the wire as 24 lowercase hex characters.
export const OBJECT_ID_PATTERN = '^[0-9a-f]{24}$'
const OBJECT_ID = new RegExp(OBJECT_ID_PATTERN)

export function isObjectIdString (value: string): boolean {
  return OBJECT_ID.test(value)
}

/**
 * A new id in the ObjectId layout: the second it was made, then 8 random bytes. Not the driver's
 * ObjectId, whose last bytes are a per-process value and a counter: ids minted one after another
 * would differ by one, so anyone holding one of their own could name another user's neighbours
 * (and learn from a 409 that they exist).
 */
export function mintObjectId (): string {
  const seconds = Math.floor(Date.now() / 1000).toString(16).padStart(8, '0').slice(-8)
  return seconds + Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString('hex')
}

/** The ObjectId a 24-hex string names, or null for anything else (never throws on client input). */
export function objectIdFrom (value: string): ObjectId | null {
  return OBJECT_ID.test(value) ? ObjectId.createFromHexString(value) : null
}
