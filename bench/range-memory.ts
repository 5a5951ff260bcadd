// The backend's memory around the largest range read it allows (EVENT_LIMITS: just under 5,000
// items and 4 MB of counted text, 400 days of twelve daily series with long descriptions),
// against a baseline measured in the same run: the same process after a one-day read of the
// same data. Printed: the heap and the resident set after the reads (after a garbage
// collection, so what the reads kept), and the highest resident set while they ran, each as a
// ratio to the baseline. A read that kept its answer, or built it whole several times over,
// shows as a ratio well above 1. The MongoDB stand-in runs in a process of its own, so its data
// is not counted.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { EVENT_LIMITS } from '../schemas/event.js'
import { startBenchBackend } from './backend-process.js'

setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

const { backend, user, close } = await startBenchBackend('calendar_range_memory')
const headers = await user('range-memory@example.com')

// Twelve daily series over 400 days: 4,800 items, each counted as 400 characters plus its text.
const SERIES = 12
const series = Array.from({ length: SERIES }, (_, index) => ({
  title: `Daily ${index}`,
  description: 'd'.repeat(400),
  startDate: `2026-01-01T${String(8 + index).padStart(2, '0')}:00:00Z`,
  endDate: `2026-01-01T${String(8 + index).padStart(2, '0')}:30:00Z`,
  recurrence: { rule: ['RRULE:FREQ=DAILY'] }
}))
const written = await backend.inject({ method: 'POST', url: '/api/event', headers, payload: series })
if (written.statusCode !== 204) throw new Error(`the series were not written: ${written.body}`)

const largest = '/api/event?start=2026-01-01T00:00:00Z&end=2027-02-05T00:00:00Z'
const oneDay = '/api/event?start=2026-06-01T00:00:00Z&end=2026-06-02T00:00:00Z'

async function read (url: string): Promise<{ items: number, bytes: number }> {
  const answer = await backend.inject({ method: 'GET', url, headers })
  if (answer.statusCode !== 200) throw new Error(`${url}: ${answer.statusCode} ${answer.body}`)
  return { items: (answer.json() as unknown[]).length, bytes: answer.rawPayload.length }
}

interface Memory { heapMb: number, rssMb: number, peakRssMb: number }
const MB = 1024 * 1024

/** Runs `reads` reads of `url` one after the other; the memory kept afterwards and the highest resident set meanwhile. */
async function memoryAround (url: string, reads: number): Promise<Memory & { items: number, bytes: number }> {
  collectGarbage()
  let peakRss = process.memoryUsage.rss()
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage.rss()) }, 5)
  let last = { items: 0, bytes: 0 }
  for (let round = 0; round < reads; round += 1) last = await read(url)
  clearInterval(sampler)
  peakRss = Math.max(peakRss, process.memoryUsage.rss())
  collectGarbage()
  const after = process.memoryUsage()
  return { heapMb: after.heapUsed / MB, rssMb: after.rss / MB, peakRssMb: peakRss / MB, ...last }
}

// Warm both paths (code compiled, compiled rules cached) before measuring.
await read(largest)
await read(oneDay)

const READS = 10
const baseline = await memoryAround(oneDay, READS)
const subject = await memoryAround(largest, READS)
const again = await memoryAround(oneDay, READS)
const ratio = (a: number, b: number) => (a / b).toFixed(2)
const figures = (memory: Memory) => `heap ${memory.heapMb.toFixed(1)} MB, rss ${memory.rssMb.toFixed(0)} MB, peak rss ${memory.peakRssMb.toFixed(0)} MB`
console.log(`range-memory: bounds ${EVENT_LIMITS.rangeItems} items, ${EVENT_LIMITS.rangeCharacters / MB} MB of text, ${EVENT_LIMITS.rangePeriods} rule steps`)
console.log(`  baseline, ${READS} one-day reads (${baseline.items} items, ${(baseline.bytes / 1024).toFixed(0)} KB each): ${figures(baseline)}`)
console.log(`  ${READS} largest reads (${subject.items} items, ${(subject.bytes / MB).toFixed(2)} MB each): ${figures(subject)}`)
console.log(`  ${READS} one-day reads after them: ${figures(again)}`)
console.log(`  ratios to the baseline: heap kept ${ratio(subject.heapMb, baseline.heapMb)}, rss kept ${ratio(subject.rssMb, baseline.rssMb)}, ` +
  `peak rss ${ratio(subject.peakRssMb, baseline.peakRssMb)}; after one-day reads again: heap ${ratio(again.heapMb, baseline.heapMb)}, rss ${ratio(again.rssMb, baseline.rssMb)}`)

await close()
