// The shapes of the ids on the wire, shared by the schemas that check them and the rules that
// read them (lib/ids.ts, lib/events/ids.ts).

/** Every id the service mints (users, events, connections, outbox entries): an ObjectId as 24 lowercase hex characters. */
export const OBJECT_ID_PATTERN = '^[0-9a-f]{24}$'

/** Marks an event id a client chose until the server confirmed it. */
export const OPTIMISTIC_PREFIX = 'optimistic-'
// The object id pattern without its anchors, so every event id pattern embeds it rather than a
// second copy of it.
export const OBJECT_ID_BODY = OBJECT_ID_PATTERN.replace(/^\^|\$$/g, '')
/** An occurrence's original start: UTC `YYYYMMDDTHHMMSSZ`, or `YYYYMMDD` for an all-day series. */
export const OCCURRENCE_KEY_BODY = '\\d{8}(?:T\\d{6}Z)?'

/** A path id: a stored event's id, or `<seriesId>_<occurrence key>` for an unedited occurrence. */
export const EVENT_PATH_ID_PATTERN = `^${OBJECT_ID_BODY}(?:_${OCCURRENCE_KEY_BODY})?$`
/** An event id a client sends, `optimistic-` until the server confirmed it. */
export const CLIENT_EVENT_ID_PATTERN = `^(?:${OPTIMISTIC_PREFIX})?${OBJECT_ID_BODY}$`
/** An event id a client sends in a body: its own (maybe optimistic) id, or an occurrence id. */
export const CLIENT_EVENT_PATH_ID_PATTERN = `^(?:${OPTIMISTIC_PREFIX})?${OBJECT_ID_BODY}(?:_${OCCURRENCE_KEY_BODY})?$`
