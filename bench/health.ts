// GET /api/health of the full backend app against a bare node:http handler that does the same
// work (one database ping through the same driver, the same JSON), alternating, no pipelining.
// The ratio is the cost of the framework, plugins and hooks. Target: at least 0.9.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { MongoClient } from 'mongodb'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'yaml'
import app, { serverOptions } from '../app.js'
import { parseConfig } from '../lib/config.js'
import { startMongo } from '../dev/mongo/index.js'
import { startSessionCore } from '../dev/session-core/index.js'
import { compare, measure } from './load.js'

const mongo = await startMongo()
const core = await startSessionCore({ apiKey: 'bench-session-core-api-key' })
const databaseUri = `${mongo.uri.replace(/\/?(\?|$)/, '/calendar_bench$1')}`
const { config } = parseConfig(stringify({
  runtime: { nodeEnv: 'test', timezone: 'UTC', logLevel: 'warn' },
  web: { url: 'http://localhost:9080' },
  backend: { apiUrl: 'http://localhost:3000/api', originsAllowed: ['http://localhost:9080'], serviceToken: 'bench-service-token' },
  database: { uri: databaseUri },
  sessions: { uri: core.uri, key: 'bench-session-core-api-key' },
  sync: { databaseUri: databaseUri.replace('calendar_bench', 'sync_bench'), internalAuthToken: 'bench-internal', callbackBaseUrl: 'http://localhost:3010', postConnectRedirectUrl: 'http://localhost:9080', serviceUrl: 'http://127.0.0.1:9' }
}), 'backend')

const backend = Fastify({ ...serverOptions(config), logger: { level: 'warn' } })
await backend.register(fp(app), { config })
await backend.listen({ port: 0, host: '127.0.0.1' })
const backendOrigin = `http://127.0.0.1:${(backend.server.address() as AddressInfo).port}`

const client = new MongoClient(databaseUri)
await client.connect()
const db = client.db()
const bare = createServer((request, response) => {
  db.command({ ping: 1 }, { timeoutMS: 1000 }).then(() => {
    const body = JSON.stringify({ status: 'ok', timestamp: new Date().toISOString() })
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
    response.end(body)
  }, () => { response.writeHead(500).end() })
})
await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve))
const bareOrigin = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`

// Warm both paths before measuring.
await measure(bareOrigin, '/', { durationMs: 500 })
await measure(backendOrigin, '/api/health', { durationMs: 500 })

const result = await compare(3, () => measure(bareOrigin, '/'), () => measure(backendOrigin, '/api/health'))
console.log(`health: bare node:http ${result.baseline.toFixed(0)} req/s, backend ${result.subject.toFixed(0)} req/s, ratio ${result.ratio.toFixed(2)} (target >= 0.90)`)

bare.close()
await client.close()
await backend.close()
await core.close()
await mongo.close()
