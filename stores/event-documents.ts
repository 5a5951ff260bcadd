// How an event is kept in the events collection, for the store and its migrations.
import type { ProviderRecord } from '../lib/events/record.js'
import type { StorageFields } from '../lib/events/range.js'

/**
 * A stored event: keyed by its owner and its id, so an id is the user's own. Another user may
 * hold the same id, and a create with it is no different from one with a fresh id: the answer
 * cannot tell anyone which ids exist. `eventId` is the id the API shows.
 */
export type StoredEvent = ProviderRecord & StorageFields & { eventId: string }

/** The document key of a user's event. */
export function storageKey (userId: string, eventId: string): string {
  return `${userId}:${eventId}`
}
