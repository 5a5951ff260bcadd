// POST /api/event as clients use it (session verified, body checked against the schema) against
// the same write (the events decorator) with no session and no body schema, in the same
// process and the same run, alternating. Both write the event and its outbox report to the same
// database; their reports reach the same Sync service between measurements. The ratio is what
// session verification and the schema cost. Target: at least 0.75.
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'yaml'
import app, { initSessionLibrary, serverOptions } from '../app.js'
import { parseConfig } from '../lib/config.js'
import type { EventChangeBodyInput } from '../schemas/event.js'
import { compare, measure, type LoadResult } from './load.js'
import { INTERNAL_AUTH_TOKEN, SESSION_CORE_KEY, startBenchDependencies } from './sync-for-bench.js'
import { decodeJwt } from 'jose'

const { withDatabase, coreUri, syncUrl, close } = await startBenchDependencies()
const internalAuthToken = INTERNAL_AUTH_TOKEN

const { config } = parseConfig(stringify({
  runtime: { nodeEnv: 'test', timezone: 'UTC', logLevel: 'error' },
  web: { url: 'http://localhost:9080' },
  backend: { apiUrl: 'http://localhost:3000/api', originsAllowed: ['http://localhost:9080'], serviceToken: 'bench-service-token' },
  database: { uri: withDatabase('calendar_bench') },
  sessions: { uri: coreUri, key: SESSION_CORE_KEY },
  sync: { databaseUri: withDatabase('sync_bench'), internalAuthToken, callbackBaseUrl: 'http://localhost:3010', postConnectRedirectUrl: 'http://localhost:9080', serviceUrl: syncUrl }
}), 'backend')

let benchUserId = ''
const backend = Fastify({ ...serverOptions(config), logger: { level: 'error' } })
initSessionLibrary(config, backend.log)
await backend.register(fp(app), { config })
// The baseline: the same write through the same decorator the route calls, for a fixed user,
// without session verification or the body schema.
await backend.register(async (instance) => {
  instance.post('/bench/event-unchecked', async (request, reply) => {
    await instance.events.upsert({ userId: benchUserId, now: new Date() }, request.body as EventChangeBodyInput, request.log)
    return await reply.code(204).send()
  })
})
await backend.listen({ port: 0, host: '127.0.0.1' })
const origin = `http://127.0.0.1:${(backend.server.address() as AddressInfo).port}`

const signUp = await backend.inject({
  method: 'POST',
  url: '/api/auth/signup',
  headers: { 'sx-auth-mode': 'header' },
  payload: { formFields: [{ id: 'email', value: 'bench@example.com' }, { id: 'password', value: 'bench password 1' }, { id: 'name', value: 'Bench' }] }
})
const accessToken = String(signUp.headers['sx-access-token'])
benchUserId = (decodeJwt(accessToken) as { sub: string }).sub

const body = JSON.stringify({
  title: 'Planning',
  description: 'Quarterly planning with the whole team',
  startDate: '2026-06-01T09:00:00+02:00',
  endDate: '2026-06-01T10:30:00+02:00',
  timeZone: 'Europe/Berlin',
  priority: 'work'
})
const json = { 'content-type': 'application/json' }
// Each write leaves its report for the sender, which delivers one user's reports one after the
// other. Delivered during a measurement, they would compete with the requests, and more so for
// the faster path; so the sender pauses while a path is measured and catches up in between.
async function deliverReports (): Promise<void> {
  backend.outbox.start()
  while (await backend.outbox.pending() > 0) await backend.outbox.flushDue()
  await backend.outbox.stop()
}

async function drained (run: () => Promise<LoadResult>): Promise<LoadResult> {
  await deliverReports()
  return await run()
}

const checked = () => drained(() => measure(origin, '/api/event', { method: 'POST', body, headers: { ...json, authorization: `Bearer ${accessToken}` }, durationMs: 1500 }))
const unchecked = () => drained(() => measure(origin, '/bench/event-unchecked', { method: 'POST', body, headers: json, durationMs: 1500 }))

// Warm both paths before measuring: throughput keeps rising for the first seconds (JIT), which
// would favour whichever path is measured later.
for (let round = 0; round < 2; round += 1) {
  await unchecked()
  await checked()
}

// Many short alternating rounds and their medians: the machine is shared and noisy.
const result = await compare(7, unchecked, checked)
const errors = (await checked()).errors + (await unchecked()).errors
await deliverReports()
console.log(`event-write: no session, no schema ${result.baseline.toFixed(0)} req/s, session + schema ${result.subject.toFixed(0)} req/s, ratio ${result.ratio.toFixed(2)} (target >= 0.75)${errors > 0 ? `, ${errors} failed requests` : ''}`)

await backend.close()
await close()
