import { isObjectIdString, mintObjectId } from '../ids.js'
import { OBJECT_ID_BODY, OCCURRENCE_KEY_BODY, OPTIMISTIC_PREFIX } from '../../schemas/ids.js'
const OCCURRENCE_ID = new RegExp(`^(${OBJECT_ID_BODY})_(${OCCURRENCE_KEY_BODY})$`)

/**
 * Clients create events optimistically under an id they chose, marked `optimistic-<id>` until the
 * server confirms it; the stored id is the bare 24-hex part so later writes find the same record.
 */
export function normalizeEventId (id: string): string {
  const bare = id.startsWith(OPTIMISTIC_PREFIX) ? id.slice(OPTIMISTIC_PREFIX.length) : id
  if (!isObjectIdString(bare)) throw new TypeError(`not an event id: ${JSON.stringify(id)}`)
  return bare
}

export const mintEventId = mintObjectId

export type EventAddress =
  | { kind: 'stored', eventId: string }
  | { kind: 'occurrence', seriesId: string, occurrenceKey: string }

/** Reads a path id: a stored event's id, or `<seriesId>_<occurrence key>` for an unedited occurrence. */
export function parseEventAddress (pathId: string): EventAddress | null {
  if (isObjectIdString(pathId)) return { kind: 'stored', eventId: pathId }
  const match = OCCURRENCE_ID.exec(pathId)
  if (!match) return null
  return { kind: 'occurrence', seriesId: match[1] as string, occurrenceKey: match[2] as string }
}

export function occurrenceId (seriesId: string, occurrenceKey: string): string {
  return `${seriesId}_${occurrenceKey}`
}
