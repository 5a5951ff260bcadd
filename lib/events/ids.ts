import { OBJECT_ID_PATTERN, isObjectIdString, mintObjectId } from '../ids.js'

const OPTIMISTIC_PREFIX = 'optimistic-'
// The one object id pattern (lib/ids.ts) without its anchors, so every event id pattern embeds it
// rather than a second copy of it.
const OBJECT_ID = OBJECT_ID_PATTERN.replace(/^\^|\$$/g, '')
/** An occurrence's original start: UTC `YYYYMMDDTHHMMSSZ`, or `YYYYMMDD` for an all-day series. */
const OCCURRENCE_KEY = '\\d{8}(?:T\\d{6}Z)?'

/** A path id: a stored event's id, or `<seriesId>_<occurrence key>` for an unedited occurrence. */
export const EVENT_PATH_ID_PATTERN = `^${OBJECT_ID}(?:_${OCCURRENCE_KEY})?$`
/** An event id a client sends, `optimistic-` until the server confirmed it. */
export const CLIENT_EVENT_ID_PATTERN = `^(?:${OPTIMISTIC_PREFIX})?${OBJECT_ID}$`
/** An event id a client sends in a body: its own (maybe optimistic) id, or an occurrence id. */
export const CLIENT_EVENT_PATH_ID_PATTERN = `^(?:${OPTIMISTIC_PREFIX})?${OBJECT_ID}(?:_${OCCURRENCE_KEY})?$`
const OCCURRENCE_ID = new RegExp(`^(${OBJECT_ID})_(${OCCURRENCE_KEY})$`)

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
export { isObjectIdString }

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
