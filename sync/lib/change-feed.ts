// Rules of the change feed over plain data: how long cursors and entries live, and which entries
// after a cursor a page may deliver. The store (sync/stores/change-feed.ts) carries them out.
import type { Invalidation } from '../../schemas/sync/index.js'

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never
/** An invalidation as appended; the feed stamps its time. */
export type InvalidationInput = DistributiveOmit<Invalidation, 'at'>

const DAY_MS = 24 * 60 * 60 * 1000
/** A cursor older than this answers resyncRequired: entries after it may already be gone. */
export const CURSOR_MAX_AGE_MS = 7 * DAY_MS
/** Entries live longer than any valid cursor, so a cursor that is still valid never misses one. */
export const CHANGE_FEED_RETENTION_MS = CURSOR_MAX_AGE_MS + 2 * 60 * 60 * 1000
/**
 * A sequence number is taken before its entry is written, so a reader can see entry n+1 while n is
 * still in flight. A hole younger than this stops the page (the next poll gets it); an older one
 * belongs to a writer that died and is skipped.
 */
export const FEED_GAP_GRACE_MS = 10_000

/**
 * The entries a page delivers from `found` (the stored entries after sequence `afterSeq`, in
 * sequence order): they run until a hole younger than FEED_GAP_GRACE_MS.
 */
export function deliverableEntries<E extends { seq: number, createdAt: Date }> (found: E[], afterSeq: number, nowMs: number): E[] {
  const delivered: E[] = []
  let expected = afterSeq + 1
  for (const entry of found) {
    if (entry.seq !== expected && nowMs - entry.createdAt.getTime() < FEED_GAP_GRACE_MS) break
    delivered.push(entry)
    expected = entry.seq + 1
  }
  return delivered
}
