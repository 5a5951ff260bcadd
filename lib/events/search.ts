// Search over a user's events by the words of their title, location and description. Each stored
// event keeps its words (folded: lower case, without accents) in `searchWords`, indexed with its
// owner, and a query matches the events holding a word that begins with each of its words: "stand
// berl" finds "Stand-up in Berlin". A prefix of a word is a range of one index, so the database
// answers from the index whatever the calendar's size; MongoDB's text search would match whole
// stemmed words only, which is not how people search a calendar.
import { invalidEvent } from './errors.js'
import { queryWordsOf, SEARCH_QUERY_WORDS } from './search-words.js'

/** A query's words, each a prefix to match; throws EVENT_INVALID for a query with none or too many. */
export function searchTermsOf (query: string): string[] {
  const terms = queryWordsOf(query)
  if (terms.length === 0) throw invalidEvent('querystring/q', 'must hold at least one letter or digit')
  if (terms.length > SEARCH_QUERY_WORDS) throw invalidEvent('querystring/q', `must hold at most ${SEARCH_QUERY_WORDS} words`)
  return terms
}

/** Where a page of results ended: the last event's start and storage key, in start order. */
export interface SearchPosition {
  startsAt: Date
  key: string
}

/** The opaque `cursor` a client sends back for the next page. */
export function encodeSearchCursor (position: SearchPosition): string {
  return Buffer.from(JSON.stringify([position.startsAt.getTime(), position.key])).toString('base64url')
}

/** The position a cursor names; throws EVENT_INVALID for one this service did not make. */
export function decodeSearchCursor (cursor: string): SearchPosition {
  const refused = invalidEvent('querystring/cursor', 'must be a cursor from an earlier page of this search')
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw refused
  }
  if (!Array.isArray(value) || value.length !== 2) throw refused
  const [startsAt, key] = value as unknown[]
  if (typeof startsAt !== 'number' || !Number.isFinite(startsAt) || typeof key !== 'string' || key.length > 200) throw refused
  return { startsAt: new Date(startsAt), key }
}
