import { test } from 'tap'
import { decodeSearchCursor, encodeSearchCursor, searchTermsOf } from '../../../lib/events/search.js'
import { SEARCH_WORDS_KEPT, searchWordsOf } from '../../../lib/events/search-words.js'

test('an event\'s words: folded, each once, title and location before the description, bounded', async (t) => {
  t.same(searchWordsOf({ title: 'Café with Zoë', location: 'Straße 5, Zürich', description: 'CAFÉ again; zoe’s 2nd visit' }),
    ['cafe', 'with', 'zoe', 'straße', '5', 'zurich', 'again', 's', '2nd', 'visit'], 'lower case without accents, split on anything but letters and digits')
  t.same(searchWordsOf({ title: '東京 meeting' }), ['東京', 'meeting'], 'letters of any script')
  const long = Array.from({ length: 500 }, (_, index) => `w${index}`).join(' ')
  const kept = searchWordsOf({ title: 'Title first', description: long })
  t.equal(kept.length, SEARCH_WORDS_KEPT, 'at most the bound')
  t.same(kept.slice(0, 2), ['title', 'first'], 'the title kept before the description')
  t.equal(searchWordsOf({ title: 'x'.repeat(100) })[0]?.length, 40, 'a word is cut to 40 characters')
})

test('a query\'s terms, and the queries refused', async (t) => {
  t.same(searchTermsOf('  Stand-UP  stand berl '), ['stand', 'up', 'berl'], 'folded and each once')
  t.throws(() => searchTermsOf(' -- '), { statusCode: 400, code: 'EVENT_INVALID', message: 'querystring/q must hold at least one letter or digit' })
  t.throws(() => searchTermsOf('a b c d e f g h i'), { statusCode: 400, message: 'querystring/q must hold at most 8 words' })
  t.same(searchTermsOf('.* (a|b) [x]'), ['a', 'b', 'x'], 'pattern characters never reach the database as a pattern')
})

test('a cursor names where a page ended, and one not made here is refused', async (t) => {
  const position = { startsAt: new Date('2026-12-01T09:00:00Z'), key: `${'a'.repeat(24)}:${'b'.repeat(24)}` }
  t.same(decodeSearchCursor(encodeSearchCursor(position)), position)
  for (const forged of ['!!', Buffer.from('{"a":1}').toString('base64url'), Buffer.from('["x","k"]').toString('base64url'), Buffer.from(JSON.stringify([1, 'k'.repeat(201)])).toString('base64url')]) {
    t.throws(() => decodeSearchCursor(forged), { statusCode: 400, message: 'querystring/cursor must be a cursor from an earlier page of this search' }, forged)
  }
})

test('ASCII text gives the words the Unicode rule gives (folded, split on anything but letters and digits)', async (t) => {
  const byTheRule = (text: string): string[] => [...new Set(text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase()
    .split(/[^\p{L}\p{N}]+/u).filter((word) => word.length > 0).map((word) => word.slice(0, 40)))]
  for (const text of ['Q3-review_notes: Budget/Plan (v2.1)', 'TEAM  sync\t#42 @ HQ', 'x'.repeat(50) + ' end', '~!$%^&*', 'Café au LAIT, 2nd floor', 'Straße ﬁnal Ⅻ']) {
    t.same(searchWordsOf({ title: text }), byTheRule(text), text)
  }
})
