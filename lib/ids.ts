import { ObjectId } from 'bson'

// Every id the service mints (users, events, connections, outbox entries) is a MongoDB ObjectId,
// written on the wire as 24 lowercase hex characters.
export const OBJECT_ID_PATTERN = '^[0-9a-f]{24}$'
const OBJECT_ID = new RegExp(OBJECT_ID_PATTERN)

export function isObjectIdString (value: string): boolean {
  return OBJECT_ID.test(value)
}

export function mintObjectId (): string {
  return new ObjectId().toHexString()
}

/** The ObjectId a 24-hex string names, or null for anything else (never throws on client input). */
export function objectIdFrom (value: string): ObjectId | null {
  return OBJECT_ID.test(value) ? ObjectId.createFromHexString(value) : null
}
