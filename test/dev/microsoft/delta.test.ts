// Delta queries over a calendar view as Graph documents them: a first round paged with
// @odata.nextLink ($skiptoken) and closed by @odata.deltaLink ($deltatoken); later rounds with
// what changed, `@removed` for what left the view; and the answer to a token Graph no longer
// knows (410 SyncStateNotFound), after which a client starts over.
import { test } from 'tap'
import { connect, control, defaultCalendarId, graph, startStandIn } from './harness.js'
import type { Json } from './harness.js'

const ALICE = 'alice@example.com'
const BERLIN = 'W. Europe Standard Time'
const WINDOW = 'startDateTime=2030-01-01T00:00:00Z&endDateTime=2030-03-01T00:00:00Z'

type Item = Record<string, unknown>
const values = (answer: Json): Item[] => answer.body['value'] as Item[]
const at = (day: string, hour: number): { dateTime: string, timeZone: string } => ({ dateTime: `${day}T${String(hour).padStart(2, '0')}:00:00`, timeZone: BERLIN })

/** Runs a round to its end: every item of every page, the pages, and the deltaLink. */
async function round (microsoft: Awaited<ReturnType<typeof startStandIn>>, token: string, first: string, prefer?: string): Promise<{ items: Item[], pages: Json[], deltaLink: string }> {
  const pages: Json[] = []
  let next: string | undefined = first
  while (next !== undefined) {
    const answer = await graph(microsoft, token, 'GET', next, undefined, prefer === undefined ? {} : { prefer })
    if (answer.status !== 200) throw new Error(`delta page answered ${answer.status}: ${JSON.stringify(answer.body)}`)
    pages.push(answer)
    next = answer.body['@odata.nextLink'] as string | undefined
  }
  const deltaLink = String(pages[pages.length - 1]?.body['@odata.deltaLink'])
  return { items: pages.flatMap(values), pages, deltaLink }
}

test('a first round of 2,000 events and their series pages with nextLink and ends with a deltaLink', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE, timeZone: BERLIN }] })
  const calendarId = await defaultCalendarId(microsoft, ALICE)
  const seeded = await control<{ inserted: number, tookMs: number }>(microsoft, 'POST', `/calendars/${calendarId}/seed`, {
    generate: { singles: 2000, series: 20, exceptions: 30, from: '2030-01-01', days: 59 }
  })
  t.equal(seeded.body.inserted, 2020)
  // How fast is for bench/provider-sync.ts, which seeds Microsoft alike: a loaded machine stretches any bound here.
  t.type(seeded.body.tookMs, 'number', 'the control route reports how long seeding took')
  const { tokens } = await connect(microsoft, ALICE)
  const path = `/me/calendars/${calendarId}/calendarView/delta?${WINDOW}`

  const small = await graph(microsoft, tokens.access_token, 'GET', path)
  t.equal(values(small).length, 10, 'ten items a page without Prefer')
  t.match(small.body['@odata.nextLink'], new RegExp(`^${microsoft.graphUrl}/me/calendars/AAMkA[^?]+/calendarView/delta\\?\\$skiptoken=[A-Za-z0-9_-]+$`))
  t.equal(small.body['@odata.context'], `${microsoft.url}/v1.0/$metadata#Collection(event)`)

  const started = Date.now()
  const first = await round(microsoft, tokens.access_token, path, 'odata.maxpagesize=250')
  t.ok(Date.now() - started < 5000, `first round in ${Date.now() - started} ms`)
  t.equal(first.pages[0]?.headers.get('preference-applied'), 'odata.maxpagesize=250')
  t.ok(first.pages.slice(0, -1).every((page) => values(page).length === 250 && !('@odata.deltaLink' in page.body)), 'full pages until the last, none with a deltaLink')
  t.match(first.deltaLink, /\/calendarView\/delta\?\$deltatoken=[A-Za-z0-9_-]+$/)
  const ids = first.items.map((item) => item['id'])
  t.equal(new Set(ids).size, ids.length, 'no item twice')
  const types = first.items.reduce<Record<string, number>>((counts, item) => ({ ...counts, [String(item['type'])]: (counts[String(item['type'])] ?? 0) + 1 }), {})
  t.equal(types['singleInstance'], 2000, 'every single event of the window')
  t.notOk('seriesMaster' in types, 'a calendar view holds occurrences, not masters')
  t.ok((types['occurrence'] ?? 0) > 100 && (types['exception'] ?? 0) === 20, `occurrences and exceptions (${JSON.stringify(types)})`)
  t.ok(first.items.every((item) => item['@odata.type'] === '#microsoft.graph.event'))
  t.ok(first.items.filter((item) => item['type'] !== 'singleInstance').every((item) => typeof item['seriesMasterId'] === 'string' && typeof item['originalStart'] === 'string'))

  const quiet = await graph(microsoft, tokens.access_token, 'GET', first.deltaLink)
  t.same(values(quiet), [], 'nothing changed, nothing answered')
  t.match(quiet.body['@odata.deltaLink'], /\$deltatoken=/)
})

test('later rounds: created, updated and deleted events, occurrences, exceptions, and what left the window', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE, timeZone: BERLIN }] })
  const calendarId = await defaultCalendarId(microsoft, ALICE)
  const add = async (body: Record<string, unknown>): Promise<string> =>
    String((await control<{ id: string }>(microsoft, 'POST', `/calendars/${calendarId}/events`, body)).body.id)
  const keep = await add({ subject: 'Keep', start: at('2030-01-10', 9), end: at('2030-01-10', 10) })
  const change = await add({ subject: 'Change', start: at('2030-01-11', 9), end: at('2030-01-11', 10) })
  const remove = await add({ subject: 'Remove', start: at('2030-01-12', 9), end: at('2030-01-12', 10) })
  const leave = await add({ subject: 'Leave', start: at('2030-01-13', 9), end: at('2030-01-13', 10) })
  const series = await add({
    subject: 'Standup',
    start: at('2030-01-07', 9),
    end: at('2030-01-07', 10),
    recurrence: { pattern: { type: 'daily', interval: 1 }, range: { type: 'endDate', startDate: '2030-01-07', endDate: '2030-01-11' } }
  })
  const { tokens } = await connect(microsoft, ALICE)
  const first = await round(microsoft, tokens.access_token, `/me/calendarView/delta?${WINDOW}`, 'odata.maxpagesize=3')
  t.equal(first.items.length, 9, 'four single events and five occurrences')
  t.equal(first.pages.length, 3)
  const occurrences = first.items.filter((item) => item['seriesMasterId'] === series)
  t.same(occurrences.map((item) => String(item['originalStart']).slice(0, 10)), ['2030-01-07', '2030-01-08', '2030-01-09', '2030-01-10', '2030-01-11'])

  // Changes by another device, and one by the application itself.
  const created = await add({ subject: 'New', start: at('2030-02-01', 9), end: at('2030-02-01', 10) })
  const outside = await add({ subject: 'Far away', start: at('2031-06-01', 9), end: at('2031-06-01', 10) })
  await control(microsoft, 'PATCH', `/calendars/${calendarId}/events/${change}`, { subject: 'Changed' })
  await control(microsoft, 'DELETE', `/calendars/${calendarId}/events/${remove}`)
  await control(microsoft, 'PATCH', `/calendars/${calendarId}/events/${leave}`, { start: at('2030-04-01', 9), end: at('2030-04-01', 10) })
  const second = String(occurrences[1]?.['id'])
  const fourth = String(occurrences[3]?.['id'])
  await control(microsoft, 'PATCH', `/calendars/${calendarId}/events/${second}`, { subject: 'Standup (late)', start: at('2030-01-08', 11), end: at('2030-01-08', 12) })
  await control(microsoft, 'DELETE', `/calendars/${calendarId}/events/${fourth}`)
  const own = await graph(microsoft, tokens.access_token, 'POST', '/me/events', { subject: 'From the app', start: at('2030-02-02', 9), end: at('2030-02-02', 10) })

  const next = await round(microsoft, tokens.access_token, first.deltaLink)
  const summary = next.items.map((item) => '@removed' in item ? `removed ${String(item['id'])}` : `${String(item['type'])} ${String(item['subject'])}`)
  t.same(summary.sort(), [
    'exception Standup (late)',
    'singleInstance Changed',
    'singleInstance From the app',
    'singleInstance New',
    `removed ${fourth}`,
    `removed ${leave}`,
    `removed ${outside}`,
    `removed ${remove}`
  ].sort(), 'what changed, and what left the view (a change outside the window is answered as removed, as documented)')
  t.notOk(next.items.some((item) => item['id'] === keep), 'an unchanged event is not answered again')
  t.same(next.items.find((item) => item['id'] === remove), { '@odata.type': '#microsoft.graph.event', id: remove, '@removed': { reason: 'deleted' } })
  t.match(next.items.find((item) => item['id'] === second), { type: 'exception', seriesMasterId: series, originalStart: '2030-01-08T08:00:00Z', start: { dateTime: '2030-01-08T10:00:00.0000000' } })
  t.ok(next.items.some((item) => item['id'] === created) && next.items.some((item) => item['id'] === own.body['id']))

  // A whole series removed: each of its occurrences in the window is removed.
  await control(microsoft, 'DELETE', `/calendars/${calendarId}/events/${series}`)
  const third = await round(microsoft, tokens.access_token, next.deltaLink)
  t.same(third.items.map((item) => item['@removed'] === undefined ? 'kept' : 'removed'), ['removed', 'removed', 'removed', 'removed'])
  t.same(new Set(third.items.map((item) => item['id'])), new Set(occurrences.filter((item) => item['id'] !== fourth).map((item) => item['id'])))
})

test('a token Graph no longer knows answers 410 SyncStateNotFound; the client starts over', async (t) => {
  const microsoft = await startStandIn(t, { accounts: [{ email: ALICE, timeZone: BERLIN }] })
  const calendarId = await defaultCalendarId(microsoft, ALICE)
  await control(microsoft, 'POST', `/calendars/${calendarId}/seed`, { generate: { singles: 30, from: '2030-01-01', days: 30 } })
  const { tokens } = await connect(microsoft, ALICE)
  const path = `/me/calendars/${calendarId}/calendarView/delta?${WINDOW}`
  const firstPage = await graph(microsoft, tokens.access_token, 'GET', path)
  const done = await round(microsoft, tokens.access_token, path, 'odata.maxpagesize=100')

  t.same((await control(microsoft, 'POST', `/accounts/${ALICE}/expire-delta-tokens`)).body, { calendars: [calendarId] })
  const gone = await graph(microsoft, tokens.access_token, 'GET', done.deltaLink)
  t.equal(gone.status, 410)
  t.match(gone.body, { error: { code: 'SyncStateNotFound', message: /The sync state generation is not found/ } })
  t.equal(gone.headers.get('location'), `${microsoft.graphUrl}/me/calendars/${calendarId}/calendarView/delta?startDateTime=2030-01-01T00:00:00.000Z&endDateTime=2030-03-01T00:00:00.000Z`)
  t.equal((await graph(microsoft, tokens.access_token, 'GET', String(firstPage.body['@odata.nextLink']))).status, 410, 'a skip token of an old round too')
  t.equal((await graph(microsoft, tokens.access_token, 'GET', '/me/calendarView/delta?$deltatoken=garbage')).status, 410)

  const restart = await round(microsoft, tokens.access_token, String(gone.headers.get('location')), 'odata.maxpagesize=100')
  t.equal(restart.items.length, 30, 'a full round from the Location starts over')
  t.match(await graph(microsoft, tokens.access_token, 'GET', '/me/calendarView/delta'), { status: 400, body: { error: { code: 'ErrorInvalidParameter' } } })
  t.match(await graph(microsoft, tokens.access_token, 'GET', `/me/calendarView/delta?${WINDOW}&$select=subject`), { status: 400 }, '$select is not supported on calendar view delta')
})
