// The process under test for bench/health.ts: the backend app and a bare node:http handler doing
// the same work (one database ping through the same driver, the same JSON and headers), on two ports. The
// database and the load generator live in other processes, as they do in a deployment.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connectMongo } from '../plugins/external/mongo.js'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'yaml'
import app, { initSessionLibrary, serverOptions } from '../app.js'
import { parseConfig } from '../lib/config.js'
import { startSessionCore } from '../dev/session-core/index.js'

const mongoUri = process.env.BENCH_MONGO_URI ?? ''
const core = await startSessionCore({ apiKey: 'bench-session-core-api-key' })
const databaseUri = mongoUri.replace(/\/?(\?|$)/, '/calendar_bench$1')
const { config } = parseConfig(stringify({
  runtime: { nodeEnv: 'test', timezone: 'UTC', logLevel: 'warn' },
  web: { url: 'http://localhost:9080' },
  backend: { apiUrl: 'http://localhost:3000/api', originsAllowed: ['http://localhost:9080'], serviceToken: 'bench-service-token' },
  database: { uri: databaseUri },
  sessions: { uri: core.uri, key: 'bench-session-core-api-key' },
  sync: { databaseUri: databaseUri.replace('calendar_bench', 'sync_bench'), internalAuthToken: 'bench-internal', callbackBaseUrl: 'http://localhost:3010', postConnectRedirectUrl: 'http://localhost:9080', serviceUrl: 'http://127.0.0.1:9' }
}), 'backend')

const backend = Fastify({ ...serverOptions(config), logger: { level: 'warn' } })
initSessionLibrary(config, backend.log)
await backend.register(fp(app), { config })
await backend.listen({ port: 0, host: '127.0.0.1' })

// The bare handler answers with the same headers the backend sends (security headers, Vary), so
// the two responses are the same bytes and the ratio is the cost of the framework alone.
const probe = await backend.inject({ method: 'GET', url: '/api/health' })
const sameHeaders = Object.fromEntries(Object.entries(probe.headers)
  .filter(([name]) => !['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name)))

// The same database handle and ping as the backend's (one ping shared by concurrent probes), so
// only the framework differs.
const database = await connectMongo(databaseUri)
const client = database.client
const bare = createServer((request, response) => {
  database.ping(1000).then((ok) => {
    if (!ok) return response.writeHead(500).end()
    const body = JSON.stringify({ status: 'ok', timestamp: new Date().toISOString() })
    response.writeHead(200, { ...sameHeaders, 'content-length': Buffer.byteLength(body) })
    response.end(body)
  }, () => { response.writeHead(500).end() })
})
await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve))

process.send?.({
  backend: (backend.server.address() as AddressInfo).port,
  bare: (bare.address() as AddressInfo).port
})
process.on('disconnect', () => {
  bare.close()
  Promise.all([client.close(), backend.close(), core.close()]).finally(() => process.exit(0))
})
