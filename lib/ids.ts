import { ObjectId } from 'bson'
import { OBJECT_ID_PATTERN } from '../schemas/ids.js'

// Every id the service mints (users, events, connections, outbox entries) is a MongoDB ObjectId,
// written on the wire as 24 lowercase hex characters (OBJECT_ID_PATTERN).
const OBJECT_ID = new RegExp(OBJECT_ID_PATTERN)

export function isObjectIdString (value: string): boolean {
  return OBJECT_ID.test(value)
}

const MAX_SEQUENCE = 0x3fff
let lastMillisecond = 0
let sequence = 0

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))
// Random bytes drawn a few kilobytes at a time: one call to the generator per id cost an import of
// 10,000 events about a tenth of a second. Each byte is handed out once, as it was drawn.
const RANDOM_POOL_BYTES = 5 * 1024
const randomPool = new Uint8Array(RANDOM_POOL_BYTES)
let randomAt = RANDOM_POOL_BYTES

function randomHex (bytes: number): string {
  if (randomAt + bytes > RANDOM_POOL_BYTES) {
    crypto.getRandomValues(randomPool)
    randomAt = 0
  }
  let text = ''
  for (let index = 0; index < bytes; index++) text += HEX[randomPool[randomAt + index] as number] as string
  randomAt += bytes
  return text
}

/**
 * A new id in the ObjectId layout, in the order this process minted them (the second; then the
 * millisecond and a sequence within it, 24 bits), ending in 5 random bytes. Not the driver's
 * ObjectId, whose last bytes are a per-process value and a counter: ids minted one after another
 * differ by one, so anyone holding one of their own could name another user's neighbours and
 * learn from a 409 that they exist. Ordered, because reads break ties of events at the same time
 * by id, in the order they were made.
 */
export function mintObjectId (): string {
  const now = Date.now()
  if (now > lastMillisecond) {
    lastMillisecond = now
    sequence = 0
  } else if (sequence < MAX_SEQUENCE) {
    sequence += 1
  } else {
    // 16,384 ids in one millisecond: the next ones are dated a millisecond on, so the order holds.
    lastMillisecond += 1
    sequence = 0
  }
  const seconds = Math.floor(lastMillisecond / 1000)
  const within = ((lastMillisecond % 1000) << 14) | sequence
  return seconds.toString(16).padStart(8, '0').slice(-8) + within.toString(16).padStart(6, '0') + randomHex(5)
}

/** The ObjectId a 24-hex string names, or null for anything else (never throws on client input). */
export function objectIdFrom (value: string): ObjectId | null {
  return OBJECT_ID.test(value) ? ObjectId.createFromHexString(value) : null
}
