// The change-feed cursor: opaque to the backend, but it carries the user's feed position, when it was
// issued (to detect cursors older than the retention window) and a tag binding it to one user.
import { createHash } from 'node:crypto'

export interface FeedPosition {
  seq: number
  issuedAtMs: number
}

function userTag (userId: string): string {
  return createHash('sha256').update(`feed-cursor:${userId}`).digest('hex').slice(0, 12)
}

export function encodeCursor (userId: string, position: FeedPosition): string {
  return Buffer.from(`1.${position.seq}.${position.issuedAtMs}.${userTag(userId)}`).toString('base64url')
}

const CURSOR_PATTERN = /^1\.(\d{1,15})\.(\d{1,15})\.([0-9a-f]{12})$/

/** The position in a cursor, or null when it is malformed or belongs to another user. */
export function decodeCursor (userId: string, cursor: string): FeedPosition | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null
  const match = CURSOR_PATTERN.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
  if (!match || match[3] !== userTag(userId)) return null
  return { seq: Number(match[1]), issuedAtMs: Number(match[2]) }
}
