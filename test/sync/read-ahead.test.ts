// How a provider list is read ahead of what the backend applies (sync/providers/read-ahead.ts), and
// how Graph's series batches overlap the work on their answers (sync/providers/microsoft/series-reader.ts):
// the order, the bound on what is read ahead, one request at a time, and what a failure stops.
import { test } from 'tap'
import { takePagesReadingAhead } from '../../sync/providers/read-ahead.js'
import { MicrosoftSeriesReader } from '../../sync/providers/microsoft/series-reader.js'
import type { MicrosoftGraph } from '../../sync/providers/microsoft/graph.js'
import type { ProviderContext } from '../../sync/lib/providers/port.js'

/** A promise settled from outside. */
function deferred<T = void> (): { promise: Promise<T>, resolve: (value: T) => void, reject: (error: Error) => void } {
  const settle: { resolve: (value: T) => void, reject: (error: Error) => void } = { resolve: () => {}, reject: () => {} }
  const promise = new Promise<T>((resolve, reject) => { settle.resolve = resolve; settle.reject = reject })
  return { promise, resolve: (value) => { settle.resolve(value) }, reject: (error) => { settle.reject(error) } }
}

const turns = async (count = 20): Promise<void> => { for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve)) }

/** Pages 0..last, each naming the next; every read waits until the test lets it answer. */
function pagedList (last: number) {
  const requested: number[] = []
  const answers = new Map<number, ReturnType<typeof deferred<number>>>()
  const answer = (page: number) => {
    const pending = answers.get(page) ?? deferred<number>()
    answers.set(page, pending)
    return pending
  }
  const next = (page: number): Promise<number> | null => {
    if (page === last) return null
    requested.push(page + 1)
    return answer(page + 1).promise
  }
  return { requested, next, answerRead: (page: number) => { answer(page).resolve(page) }, failRead: (page: number) => { answer(page).reject(new Error(`page ${page} could not be read`)) } }
}

test('pages are read ahead up to the depth while a page is applied, one read at a time, and taken in order', async (t) => {
  const list = pagedList(5)
  const taken: number[] = []
  const applying = new Map<number, ReturnType<typeof deferred<void>>>()
  const take = async (page: number): Promise<void> => {
    taken.push(page)
    const done = deferred<void>()
    applying.set(page, done)
    await done.promise
  }
  const finished = takePagesReadingAhead(0, list.next, take, 3)
  await turns()
  t.same(list.requested, [1], 'the next read starts once the one before it answered')
  list.answerRead(1)
  await turns()
  list.answerRead(2)
  await turns()
  list.answerRead(3)
  await turns()
  t.same(list.requested, [1, 2, 3], 'three pages read while page 0 is still being applied, no more')
  t.same(taken, [0])
  applying.get(0)?.resolve()
  await turns()
  t.same(taken, [0, 1], 'page 1 taken as soon as page 0 is applied')
  t.same(list.requested, [1, 2, 3, 4], 'and the read of the page after those read ahead begins')
  list.answerRead(4)
  list.answerRead(5)
  for (const page of [1, 2, 3, 4, 5]) {
    await turns()
    applying.get(page)?.resolve()
  }
  t.equal(await finished, 5, 'answers the last page')
  t.same(taken, [0, 1, 2, 3, 4, 5])
  t.same(list.requested, [1, 2, 3, 4, 5], 'nothing read past the last page')
})

test('a page the sink refuses is not taken past, and what was read ahead is dropped', async (t) => {
  const list = pagedList(9)
  const taken: number[] = []
  const finished = takePagesReadingAhead(0, list.next, async (page) => {
    taken.push(page)
    if (page === 1) throw new Error('the backend refused page 1')
  }, 2)
  const refused = t.rejects(finished, /the backend refused page 1/)
  for (let page = 1; page <= 4; page++) {
    await turns()
    list.answerRead(page)
  }
  await refused
  await turns()
  t.same(taken, [0, 1])
  t.same(list.requested, [1, 2], 'the read under way as page 1 was refused ends, and none starts after it')
})

test('a read that fails ends the list after the pages before it are taken', async (t) => {
  const list = pagedList(9)
  const taken: number[] = []
  const finished = takePagesReadingAhead(0, list.next, async (page) => { taken.push(page) }, 4)
  await turns()
  list.answerRead(1)
  await turns()
  const failed = t.rejects(finished, /page 2 could not be read/)
  list.failRead(2)
  await failed
  t.same(taken, [0, 1])
  t.same(list.requested, [1, 2], 'no read after the failed one')
})

test('Graph series batches: the next batch is on its way while an answer is worked on, never two at once', async (t) => {
  const events: string[] = []
  let inFlight = 0
  let mostInFlight = 0
  let sent = 0
  const graph = {
    base: 'https://graph.example',
    call: async (_context: ProviderContext, what: string, _method: string, _url: string, body?: { requests: Array<{ id: string, url: string }> }) => {
      if (what !== 'batch' || body === undefined) throw new Error(`unexpected ${what}`)
      const batch = sent++
      inFlight++
      mostInFlight = Math.max(mostInFlight, inFlight)
      events.push(`sent ${batch}`)
      await turns(3)
      inFlight--
      events.push(`answered ${batch}`)
      return {
        responses: body.requests.map((request) => request.id.startsWith('m')
          ? { id: request.id, status: 200, body: { id: decodeURIComponent(request.url.split('/')[3] ?? ''), type: 'seriesMaster' } }
          : { id: request.id, status: 200, body: { value: [] } })
      }
    }
  }
  const reader = new MicrosoftSeriesReader(graph as unknown as MicrosoftGraph, { now: () => new Date('2026-12-01T00:00:00Z') })
  const masterIds = Array.from({ length: 25 }, (_, index) => `master-${index}`)
  let worked = 0
  const read = await reader.readSeries({ connectionId: 'c', userId: 'u' } as unknown as ProviderContext, masterIds, new Date('2026-12-01T00:00:00Z'), async (answered) => {
    const batch = worked++
    events.push(`working on ${batch} (${answered.size} series)`)
    await turns(6)
    events.push(`worked on ${batch}`)
  })
  t.equal(read.size, 25, 'every series answered is kept')
  t.equal(mostInFlight, 1, 'one batch at a time, as Graph\'s concurrency per mailbox asks')
  t.same(events.slice(0, 4), ['sent 0', 'answered 0', 'sent 1', 'working on 0 (10 series)'], 'the next batch leaves before the answer is worked on')
  t.ok(events.indexOf('answered 1') < events.indexOf('worked on 0'), 'and is answered while the work goes on')
  t.same(events.filter((event) => event.startsWith('working')), ['working on 0 (10 series)', 'working on 1 (10 series)', 'working on 2 (5 series)'])
})
