// The backend's memory around the largest range read it allows (EVENT_LIMITS: just under 5,000
// items and 4 MB of counted text, 400 days of twelve daily series with long descriptions),
// against a baseline measured in the same run: the same process after a one-day read of the
// same data. Printed: the heap and the resident set after the reads (after a garbage
// collection, so what the reads kept), and the highest resident set while they ran, each as a
// ratio to the baseline. A read that kept its answer, or built it whole several times over,
// shows as a ratio well above 1. The MongoDB stand-in runs in a process of its own, so its data
// is not counted.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'yaml'
import app, { serverOptions } from '../app.js'
import { parseConfig } from '../lib/config.js'
import { startSessionCore } from '../dev/session-core/index.js'
import { EVENT_LIMITS } from '../schemas/event.js'

setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

const root = fileURLToPath(new URL('..', import.meta.url))
const mongo = spawn(process.execPath, ['--import', 'tsx', 'dev/mongo/cli.ts'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
const mongoUri = await new Promise<string>((resolve, reject) => {
  let output = ''
  mongo.stdout.on('data', (chunk) => {
    output += chunk
    const match = /mongodb:\/\/\S+/.exec(output)
    if (match) resolve(match[0])
  })
  mongo.once('exit', () => reject(new Error(`the MongoDB stand-in stopped: ${output}`)))
})
const core = await startSessionCore({ apiKey: 'bench-session-core-api-key' })
const withDatabase = (name: string) => {
  const url = new URL(mongoUri)
  url.pathname = `/${name}`
  return url.toString()
}

const { config } = parseConfig(stringify({
  runtime: { nodeEnv: 'test', timezone: 'UTC', logLevel: 'error' },
  web: { url: 'http://localhost:9080' },
  backend: { apiUrl: 'http://localhost:3000/api', originsAllowed: ['http://localhost:9080'], serviceToken: 'bench-service-token' },
  database: { uri: withDatabase('calendar_range_bench') },
  sessions: { uri: core.uri, key: 'bench-session-core-api-key' },
  // Nothing answers there: the outbox keeps the reports, which this benchmark does not need.
  sync: { databaseUri: withDatabase('sync_range_bench'), internalAuthToken: 'bench-internal-auth-token-0123456789', callbackBaseUrl: 'http://localhost:3010', postConnectRedirectUrl: 'http://localhost:9080', serviceUrl: 'http://127.0.0.1:9' }
}), 'backend')
// A read that takes long on a busy machine is still measured, not cut off by the request deadline.
const backend = Fastify({ ...serverOptions(config), logger: { level: 'fatal' } })
await backend.register(fp(app), { config, loadShedding: { maxEventLoopDelayMs: 10_000 } })
await backend.ready()

const signUp = await backend.inject({
  method: 'POST',
  url: '/api/auth/signup',
  headers: { 'sx-auth-mode': 'header' },
  payload: { formFields: [{ id: 'email', value: 'range-bench@example.com' }, { id: 'password', value: 'bench password 1' }, { id: 'name', value: 'Bench' }] }
})
const headers = { authorization: `Bearer ${String(signUp.headers['sx-access-token'])}` }

// Twelve daily series over 400 days: 4,812 items, each counted as 400 characters plus its text.
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

await backend.close()
await core.close()
mongo.kill('SIGINT')
