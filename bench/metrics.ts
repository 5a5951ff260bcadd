// What the metrics cost: POST /api/event as clients use it, on two backends of one process built
// from the same configuration but for the internal port, one with it (every request counted and
// timed, every database command and session-core call observed, /metrics scraped every second,
// fifteen times Prometheus' usual rate) and one without. Both write to the same database and their
// reports reach the same Sync service between measurements. Target: metrics cost under 3 % of
// the write throughput (ratio at least 0.97).
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'yaml'
import { decodeJwt } from 'jose'
import app, { initSessionLibrary, serverOptions } from '../app.js'
import { parseConfig } from '../lib/config.js'
import { compare, measure, type LoadResult } from './load.js'
import { INTERNAL_AUTH_TOKEN, SESSION_CORE_KEY, startBenchDependencies } from './sync-for-bench.js'

const { withDatabase, coreUri, syncUrl, close } = await startBenchDependencies()
const internalAuthToken = INTERNAL_AUTH_TOKEN

function configWith (metricsPort: number | undefined) {
  return parseConfig(stringify({
    runtime: { nodeEnv: 'test', timezone: 'UTC', logLevel: 'error' },
    web: { url: 'http://localhost:9080' },
    backend: { apiUrl: 'http://localhost:3000/api', originsAllowed: ['http://localhost:9080'], serviceToken: 'bench-service-token', ...(metricsPort === undefined ? {} : { metricsPort }) },
    database: { uri: withDatabase('calendar_bench') },
    sessions: { uri: coreUri, key: SESSION_CORE_KEY },
    sync: { databaseUri: withDatabase('sync_bench'), internalAuthToken, callbackBaseUrl: 'http://localhost:3010', postConnectRedirectUrl: 'http://localhost:9080', serviceUrl: syncUrl }
  }), 'backend').config
}

async function startBackend (metricsPort: number | undefined): Promise<{ backend: FastifyInstance, origin: string }> {
  const config = configWith(metricsPort)
  const backend = Fastify({ ...serverOptions(config), logger: { level: 'error' } })
  initSessionLibrary(config, backend.log)
  await backend.register(fp(app), { config })
  await backend.listen({ port: 0, host: '127.0.0.1' })
  return { backend, origin: `http://127.0.0.1:${(backend.server.address() as AddressInfo).port}` }
}

const plain = await startBackend(undefined)
const measured = await startBackend(0)
const metricsUrl = `http://127.0.0.1:${measured.backend.metricsPort ?? 0}/metrics`

const signUp = await plain.backend.inject({
  method: 'POST',
  url: '/api/auth/signup',
  headers: { 'sx-auth-mode': 'header' },
  payload: { formFields: [{ id: 'email', value: 'bench-metrics@example.com' }, { id: 'password', value: 'bench password 1' }, { id: 'name', value: 'Bench' }] }
})
const accessToken = String(signUp.headers['sx-access-token'])
if (decodeJwt(accessToken).sub === undefined) throw new Error('no session for the bench user')

const body = JSON.stringify({
  title: 'Planning',
  description: 'Quarterly planning with the whole team',
  startDate: '2026-06-01T09:00:00+02:00',
  endDate: '2026-06-01T10:30:00+02:00',
  timeZone: 'Europe/Berlin',
  priority: 'work'
})
const headers = { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` }

// Reports delivered during a measurement would compete with the requests; each backend's sender
// catches up between measurements instead (bench/event-write.ts does the same).
async function deliverReports (): Promise<void> {
  for (const { backend } of [plain, measured]) {
    backend.outbox.start()
    while (await backend.outbox.pending() > 0) await backend.outbox.flushDue()
    await backend.outbox.stop()
  }
}

let scrapes = 0
async function scrapedMeanwhile (run: () => Promise<LoadResult>): Promise<LoadResult> {
  const scraper = setInterval(() => {
    fetch(metricsUrl).then(async (answer) => { await answer.text(); scrapes++ }, () => {})
  }, 1000)
  try {
    return await run()
  } finally {
    clearInterval(scraper)
  }
}

const without = async () => { await deliverReports(); return await measure(plain.origin, '/api/event', { method: 'POST', body, headers, durationMs: 1500 }) }
const withMetrics = async () => { await deliverReports(); return await scrapedMeanwhile(async () => await measure(measured.origin, '/api/event', { method: 'POST', body, headers, durationMs: 1500 })) }

// Warm both before measuring (JIT), then many short alternating rounds and their medians.
for (let round = 0; round < 2; round += 1) {
  await without()
  await withMetrics()
}
const result = await compare(9, without, withMetrics)
const errors = (await without()).errors + (await withMetrics()).errors
await deliverReports()
const counted = /http_requests_total\{[^}]*route="\/api\/event"[^}]*status="204"[^}]*\} (\d+)/.exec(await (await fetch(metricsUrl)).text())?.[1] ?? '0'
console.log(`metrics: event writes without the internal port ${result.baseline.toFixed(0)} req/s, with it (and ${scrapes} scrapes) ${result.subject.toFixed(0)} req/s, ` +
  `ratio ${result.ratio.toFixed(3)} (target >= 0.97)${errors > 0 ? `, ${errors} failed requests` : ''}; ${counted} writes counted`)

await plain.backend.close()
await measured.backend.close()
await close()
