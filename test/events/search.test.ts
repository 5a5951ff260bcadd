// GET /api/events/search: a user's events found by the words of their title, location and
// description, over every date, a page at a time, and never another user's; the client module's
// searchEvents; and events stored before search found after a start adds their words.
import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import { buildApp, listen, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { CalendarClient } from '../../client/index.js'
import { MIGRATIONS_COLLECTION } from '../../stores/events.js'

interface Found { events: Array<Record<string, unknown> & { _id: string, title: string }>, next: string | null }

function id (): string {
  return randomBytes(12).toString('hex')
}

test('search over HTTP: words, prefixes, case and accents, every date, one user, pages, refusals, and older events', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const ada = await signUp(app, { email: uniqueEmail('ada-search'), password: 'correct horse 1', name: 'Ada' })
  const bob = await signUp(app, { email: uniqueEmail('bob-search'), password: 'correct horse 2', name: 'Bob' })
  const write = async (user: typeof ada, event: Record<string, unknown>) => {
    const answer = await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: event })
    t.equal(answer.statusCode, 204, `written: ${answer.body}`)
  }
  const search = async (user: typeof ada, query: string) => await app.inject({ method: 'GET', url: `/api/events/search?${query}`, headers: user.headers })
  const titles = async (user: typeof ada, q: string) => {
    const answer = await search(user, `q=${encodeURIComponent(q)}`)
    t.equal(answer.statusCode, 200, `searched "${q}": ${answer.body}`)
    return answer.json<Found>().events.map((event) => event.title)
  }

  const standup = id()
  await write(ada, { _id: standup, title: 'Stand-up in Berlin', location: 'Büro Mitte', startDate: '2026-12-01T09:00:00+01:00', endDate: '2026-12-01T09:15:00+01:00', timeZone: 'Europe/Berlin' })
  await write(ada, { title: 'Café with Zoë', description: 'Talk about the café\'s new menu: https://example.com/menu', startDate: '2019-05-04T15:00:00Z', endDate: '2019-05-04T16:00:00Z' })
  const series = id()
  await write(ada, { _id: series, title: 'Weekly review', startDate: '2026-11-02T16:00:00Z', endDate: '2026-11-02T17:00:00Z', recurrence: { rule: ['RRULE:FREQ=WEEKLY'] } })
  await write(bob, { title: 'Stand-up of Bob', startDate: '2026-12-01T09:00:00Z', endDate: '2026-12-01T09:15:00Z' })

  t.same(await titles(ada, 'stand'), ['Stand-up in Berlin'], 'a word\'s beginning finds it; another user\'s event is not found')
  t.same(await titles(bob, 'stand'), ['Stand-up of Bob'], 'and the other user finds only their own')
  t.same(await titles(ada, 'STAND berl'), ['Stand-up in Berlin'], 'every word of the query, any case')
  t.same(await titles(ada, 'buro mitte'), ['Stand-up in Berlin'], 'the location, without its accents')
  t.same(await titles(ada, 'zoe'), ['Café with Zoë'], 'accents ignored in the title')
  t.same(await titles(ada, 'menu'), ['Café with Zoë'], 'the description, years ago')
  t.same(await titles(ada, 'stand café'), [], 'an event must hold every word')
  t.same(await titles(ada, 'tand'), [], 'the middle of a word is not its beginning')

  const weekly = (await search(ada, 'q=weekly')).json<Found>()
  t.match(weekly.events, [{ _id: series, title: 'Weekly review', recurrence: { rule: ['RRULE:FREQ=WEEKLY'] } }], 'a series is one result')
  t.equal(weekly.next, null, 'the last page says so')
  for (const field of ['searchWords', 'startsAt', 'endsAt', 'eventId', 'user_search_words']) t.notOk(field in (weekly.events[0] ?? {}), `no ${field} in the answer`)

  // One occurrence deleted: its cancelled record is not a result; one renamed is one of its own.
  const occurrence = async (day: string) => (await app.inject({ method: 'GET', url: `/api/event?start=2026-11-${day}T00:00:00Z&end=2026-11-${day}T23:59:59Z`, headers: ada.headers })).json<Array<{ _id: string }>>()[0]?._id ?? ''
  t.equal((await app.inject({ method: 'DELETE', url: `/api/event/${await occurrence('09')}?applyTo=this`, headers: ada.headers })).statusCode, 204)
  const renamed = await occurrence('16')
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${renamed}`, headers: ada.headers, payload: { title: 'Weekly review with the board', startDate: '2026-11-16T16:00:00Z', endDate: '2026-11-16T17:00:00Z', recurrence: { eventId: series }, originalStartDate: '2026-11-16T16:00:00Z' } })).statusCode, 204)
  t.same(await titles(ada, 'weekly'), ['Weekly review', 'Weekly review with the board'], 'the series and its renamed occurrence, in start order; not the deleted one')
  t.same(await titles(ada, 'board'), ['Weekly review with the board'])

  // A change of title changes what finds the event.
  t.equal((await app.inject({ method: 'PUT', url: `/api/event/${standup}`, headers: ada.headers, payload: { title: 'Daily sync', location: 'Büro Mitte', startDate: '2026-12-01T09:00:00+01:00', endDate: '2026-12-01T09:15:00+01:00', timeZone: 'Europe/Berlin' } })).statusCode, 204)
  t.same(await titles(ada, 'stand'), [], 'the old title no longer finds it')
  t.same(await titles(ada, 'daily'), ['Daily sync'], 'the new one does')

  // Pages: start order over every date, a cursor for each next page, null after the last.
  const days = ['2031-01-05', '2024-02-01', '2026-07-09', '2026-07-08', '2020-12-31', '2026-07-08', '2029-03-03']
  for (const [index, day] of days.entries()) await write(ada, { title: `Pager ${index}`, startDate: `${day}T10:00:00Z`, endDate: `${day}T11:00:00Z` })
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const answer = await search(ada, `q=pager&limit=3${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`)
    t.equal(answer.statusCode, 200, answer.body)
    const page = answer.json<Found>()
    t.ok(page.events.length <= 3, 'at most the limit')
    seen.push(...page.events.map((event) => event.title))
    cursor = page.next
    pages++
  } while (cursor !== null && pages < 10)
  t.equal(pages, 3, 'seven results in pages of three')
  t.same(seen.map((title) => days[Number(title.slice(6))]), [...days].sort(), 'every one once, in start order')

  // Refusals: 400 with what to change, 401 without a session.
  const refusals: Array<[string, RegExp]> = [
    ['q=', /querystring\/q must NOT have fewer than 1 characters/],
    ['q=%20--%20', /querystring\/q must hold at least one letter or digit/],
    ['q=a%20b%20c%20d%20e%20f%20g%20h%20i', /querystring\/q must hold at most 8 words/],
    [`q=${'x'.repeat(201)}`, /querystring\/q must NOT have more than 200 characters/],
    ['q=pager&limit=0', /querystring\/limit must be >= 1/],
    ['q=pager&limit=101', /querystring\/limit must be <= 100/],
    ['q=pager&cursor=bm90LWEtY3Vyc29y', /querystring\/cursor must be a cursor from an earlier page of this search/],
    ['q=pager&other=1', /querystring must NOT have additional properties/]
  ]
  for (const [query, message] of refusals) {
    const answer = await search(ada, query)
    t.equal(answer.statusCode, 400, `${query}: 400`)
    t.match(answer.json(), { statusCode: 400, message }, `${query}: says what to change`)
  }
  t.equal((await app.inject({ method: 'GET', url: '/api/events/search?q=pager' })).statusCode, 401, 'a session is required')

  // An event stored before search (no words kept) is found once a start adds them, and the change is noted.
  const events = app.mongo.db.collection<{ _id: string } & Record<string, unknown>>('events')
  const older = await events.findOne({ title: 'Café with Zoë' })
  if (older === null) throw new Error('the café event is stored')
  const { searchWords: _words, ...withoutWords } = older
  await events.insertOne({ ...withoutWords, _id: `${String(older['user'])}:${id()}`, eventId: id(), title: 'Older one from before search' })
  t.same(await titles(ada, 'older'), [], 'without its words it is not found')
  await app.mongo.db.collection(MIGRATIONS_COLLECTION).deleteMany({})
  await app.eventStore.ensureIndexes()
  t.same(await titles(ada, 'older'), ['Older one from before search'], 'found after a start added its words')
  t.match(await app.mongo.db.collection(MIGRATIONS_COLLECTION).findOne({ _id: 'events-search-words' as never }), { doneAt: Date }, 'and the change is noted')
})

test('the client module\'s searchEvents reads the pages the API serves', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const client = new CalendarClient({ apiUrl: `${await listen(app)}/api/` })
  const signed = await client.signUp({ name: 'Cleo', email: uniqueEmail('cleo-search'), password: `pw-${randomBytes(6).toString('hex')}` })
  t.equal(signed.status, 'OK')
  for (const day of ['03', '01', '02']) await client.saveEvent({ title: `Yoga ${day}`, startDate: `2026-12-${day}T07:00:00Z`, endDate: `2026-12-${day}T08:00:00Z` })
  const first = await client.searchEvents('yog', { limit: 2 })
  t.same(first.events.map((event) => event.title), ['Yoga 01', 'Yoga 02'], 'the first page, in start order')
  t.type(first.next, 'string', 'with a cursor')
  const second = await client.searchEvents('yog', { limit: 2, cursor: first.next ?? '' })
  t.same(second.events.map((event) => event.title), ['Yoga 03'], 'then the rest')
  t.equal(second.next, null)
  await t.rejects(client.searchEvents('!!!'), { status: 400, code: 'EVENT_INVALID' }, 'a refusal arrives as an ApiError with its code')
})
