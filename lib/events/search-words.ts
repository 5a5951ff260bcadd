// The words an event is found by, and the words of a query: folded (lower case, accents and other
// marks dropped, so "Café" and "cafe" are one word), split on anything but letters and digits,
// bounded. Shared by the server's search (search.ts) and the web client's search of the events
// kept in the browser, so both find the same events.

/** Words kept per event: title and location first, then the description's, each distinct word once. */
export const SEARCH_WORDS_KEPT = 300
/** Characters kept of a word: enough to tell words apart, and a bound on the index's keys. */
const SEARCH_WORD_LENGTH = 40
/** Words a query may hold (each is one more condition on the same index). */
export const SEARCH_QUERY_WORDS = 8

/** What of an event is searched. */
export interface SearchedFields {
  title?: string
  location?: string
  description?: string
}

// Most text is ASCII, which has no marks to drop and whose letters and digits are [a-z0-9] once
// lower-cased: it skips the Unicode normalization and classes, the cost of an import's words.
// eslint-disable-next-line no-control-regex
const ASCII = /^[\x00-\x7F]*$/

function wordsOf (text: string): string[] {
  const words = ASCII.test(text)
    ? text.toLowerCase().split(/[^a-z0-9]+/)
    : text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().split(/[^\p{L}\p{N}]+/u)
  return words.filter((word) => word.length > 0).map((word) => word.slice(0, SEARCH_WORD_LENGTH))
}

/** The words an event is found by. */
export function searchWordsOf (event: SearchedFields): string[] {
  const words = new Set<string>()
  for (const text of [event.title, event.location, event.description]) {
    if (typeof text !== 'string') continue
    for (const word of wordsOf(text)) {
      if (words.size >= SEARCH_WORDS_KEPT) return [...words]
      words.add(word)
    }
  }
  return [...words]
}

/** A query's distinct words, each the beginning of a word to find. */
export function queryWordsOf (query: string): string[] {
  return [...new Set(wordsOf(query))]
}
