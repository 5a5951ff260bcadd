// The longest time one request holds the backend's event loop, for the worst requests the bounds
// allow, against a baseline measured in the same run: one-day reads of the same data. Target:
// no request holds the loop more than about 100 ms (test/events/bounded-cost.test.ts asserts a
// generous bound only, since test processes share the machine's two cores). Each request runs
// alone, with monitorEventLoopDelay (10 ms resolution) watching; printed is the longest block
// over the runs of each request, in ms and as a ratio to the baseline's longest block.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { InjectOptions } from 'fastify'
import { startBenchBackend } from './backend-process.js'

const { backend, user, close } = await startBenchBackend('calendar_loop_block')
const [hourly, daily, sparse, many, writer] = [
  await user('loop-hourly@example.com'), await user('loop-daily@example.com'), await user('loop-sparse@example.com'), await user('loop-many@example.com'), await user('loop-writer@example.com')
]

async function write (headers: Record<string, string>, payload: InjectOptions['payload']): Promise<void> {
  const answer = await backend.inject({ method: 'POST', url: '/api/event', headers, payload })
  if (answer.statusCode !== 204) throw new Error(`not written: ${answer.statusCode} ${answer.body}`)
}
const hundredHourly = Array.from({ length: 100 }, (_, index) => ({ title: `Series ${index}`, description: 'd'.repeat(1024), startDate: '2026-01-01T00:00:00Z', endDate: '2026-01-01T00:30:00Z', recurrence: { rule: ['RRULE:FREQ=HOURLY'] } }))
await write(many, hundredHourly)
await write(hourly, { _id: 'a'.repeat(24), title: 'Hourly since 1970', startDate: '1970-01-01T00:00:00Z', endDate: '1970-01-01T00:30:00Z', recurrence: { rule: ['RRULE:FREQ=HOURLY'] } })
await write(daily, Array.from({ length: 12 }, (_, index) => ({
  title: `Daily ${index}`,
  description: 'd'.repeat(400),
  startDate: `2026-01-01T${String(8 + index).padStart(2, '0')}:00:00Z`,
  endDate: `2026-01-01T${String(8 + index).padStart(2, '0')}:30:00Z`,
  recurrence: { rule: ['RRULE:FREQ=DAILY'] }
})))
await write(sparse, Array.from({ length: 12 }, (_, index) => ({
  title: `Leap ${index}`,
  startDate: `2024-02-29T03:${String(index).padStart(2, '0')}:00Z`,
  endDate: `2024-02-29T04:${String(index).padStart(2, '0')}:00Z`,
  recurrence: { rule: ['RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=3'] }
})))

const read = (headers: Record<string, string>, start: string, end: string): InjectOptions => ({ method: 'GET', url: `/api/event?start=${start}&end=${end}`, headers })
let batch = 0
const cases: Array<[string, () => InjectOptions, number]> = [
  ['largest allowed read (4,800 items, 3.8 MB)', () => read(daily, '2026-01-01T00:00:00Z', '2027-02-05T00:00:00Z'), 200],
  ['five weeks of an hourly series begun in 1970', () => read(hourly, '2026-11-30T00:00:00Z', '2027-01-04T00:00:00Z'), 200],
  ['400 days of 12 rarely matching series (refused)', () => read(sparse, '2026-03-01T00:00:00Z', '2027-04-05T00:00:00Z'), 400],
  ['100 hourly series with 1 KB descriptions in one POST', () => ({ method: 'POST', url: '/api/event', headers: writer, payload: hundredHourly.map((series) => ({ ...series, title: `${series.title} ${batch++}` })) }), 204],
  ['400 days of 100 hourly series (refused)', () => read(many, '2026-01-01T00:00:00Z', '2027-02-05T00:00:00Z'), 400]
]
const baselineCase = (): InjectOptions => read(daily, '2026-06-01T00:00:00Z', '2026-06-02T00:00:00Z')

/** The longest loop block (ms) while the request runs, its time, and whether it got the expected answer (a busy machine can pass the request deadline). */
async function longestBlock (request: InjectOptions, expected: number): Promise<{ blockMs: number, tookMs: number, answered: boolean }> {
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const started = performance.now()
  const answer = await backend.inject(request)
  const tookMs = performance.now() - started
  loop.disable()
  const answered = answer.statusCode === expected
  if (!answered && answer.statusCode !== 503) throw new Error(`${request.method} ${request.url}: ${answer.statusCode} ${answer.body.slice(0, 200)}`)
  // The monitor's figures include its resolution: what it saw beyond that is the block.
  return { blockMs: Math.max(0, loop.max / 1e6 - 10), tookMs, answered }
}

// Warm every path (code compiled, zones and rules cached) before measuring.
await longestBlock(baselineCase(), 200)
for (const [, request, expected] of cases) await longestBlock(request(), expected)

const ROUNDS = 5
const worst = async (request: () => InjectOptions, expected: number) => {
  const runs = []
  for (let round = 0; round < ROUNDS; round += 1) runs.push(await longestBlock(request(), expected))
  const sorted = runs.map((run) => run.blockMs).sort((a, b) => a - b)
  return { max: sorted[sorted.length - 1] ?? 0, median: sorted[Math.floor(sorted.length / 2)] ?? 0, tookMs: Math.max(...runs.map((run) => run.tookMs)), late: runs.filter((run) => !run.answered).length }
}
const baseline = await worst(baselineCase, 200)
console.log(`loop-block: longest event-loop block per request, ${ROUNDS} runs each (target: about 100 ms at most)`)
console.log(`  baseline, a one-day read: longest ${baseline.max.toFixed(0)} ms, median ${baseline.median.toFixed(0)} ms`)
for (const [what, request, expected] of cases) {
  const result = await worst(request, expected)
  const ratio = baseline.max > 0 ? ` (${(result.max / baseline.max).toFixed(1)}x the baseline)` : ''
  console.log(`  ${what}: longest ${result.max.toFixed(0)} ms${ratio}, median ${result.median.toFixed(0)} ms, slowest answer ${result.tookMs.toFixed(0)} ms${result.late > 0 ? `, ${result.late} past the request deadline (503)` : ''}${result.max > 100 ? '  OVER TARGET' : ''}`)
}
await close()
