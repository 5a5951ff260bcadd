// How long a change Sync appends to its feed takes to reach the `message` frame on the user's
// stream, with the backend's reads held by Sync (waitMs) against the same bridge reading the feed
// every 2 s without holding (the backend before held reads), measured in the same run:
//   - latency p50/p99 over 100 changes for 1 user and for 1,000 users with an open stream each,
//     appended by the Sync process the backend reads and by a second Sync process over the same
//     database (a replica set: the change stream on the feed's counters). Target: p99 under 1 s.
//   - Sync requests per interval with every user idle (target: the same as reading every 2 s,
//     at most one per interval per backend process).
// The backend's bridge, both Sync processes and the stream clients share this process.
//
//   npx tsx bench/feed-latency.ts
import { request, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import pino from 'pino'
import syncApp from '../sync/app.js'
import sseBroker from '../plugins/app/sse-broker.js'
import { ChangeFeedBridge, type ChangeSource } from '../services/change-feed-bridge.js'
import { SyncClient } from '../clients/sync.js'
import { startMongo } from '../dev/mongo/index.js'
import { INTERNAL_AUTH_TOKEN, benchSyncConfig } from './sync-for-bench.js'

const CHANGES = 100
const USER_COUNTS = [1, 1000]
const INTERVAL_MS = 2000
const IDLE_INTERVALS = 5

function userId (index: number): string {
  return `64b7f0c2a1b2c3d4${index.toString(16).padStart(8, '0')}`
}

function percentile (values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN
}

async function startSync (databaseUri: string): Promise<{ app: FastifyInstance, url: string, batchRequests: () => number }> {
  let batches = 0
  const app = Fastify({ logger: false, forceCloseConnections: true })
  app.addHook('onRequest', async (incoming) => { if (incoming.url === '/internal/changes/batch') batches++ })
  await app.register(fp(syncApp), { config: benchSyncConfig(databaseUri), worker: { autoStart: false } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, batchRequests: () => batches }
}

/** The backend's stream side: the broker and a bridge over the Sync client, held or not. */
async function startBackend (syncUrl: string, held: boolean): Promise<{ app: FastifyInstance, url: string, bridge: ChangeFeedBridge }> {
  const app = Fastify({ logger: false, forceCloseConnections: true })
  await app.register(sseBroker, { realtime: { heartbeatIntervalMs: 10 * 60_000 } })
  const client = new SyncClient({ baseUrl: syncUrl, internalAuthToken: INTERNAL_AUTH_TOKEN })
  // Without holding, Sync answers at once and the bridge waits out the rest of its interval.
  const source: ChangeSource = held ? client : { changesBatch: async (cursors) => await client.changesBatch(cursors) }
  const bridge = new ChangeFeedBridge(app.sse, source, pino({ level: 'silent' }), { pollIntervalMs: INTERVAL_MS })
  app.addHook('onClose', async () => { await bridge.stop(); await client.close() })
  app.get('/stream', (incoming, reply) => {
    reply.hijack()
    app.sse.open(reply.raw, { userId: (incoming.query as Record<string, string>).u ?? '' })
  })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url: `${address}/stream`, bridge }
}

/** Opens one stream per user; `arrived(user)` resolves at the next `message` frame of that user. */
async function openStreams (url: string, users: string[]): Promise<{ arrived: (user: string) => Promise<number>, close: () => void }> {
  const waiting = new Map<string, (at: number) => void>()
  const responses: IncomingMessage[] = []
  for (let start = 0; start < users.length; start += 100) {
    await Promise.all(users.slice(start, start + 100).map(async (user) => await new Promise<void>((resolve, reject) => {
      request(`${url}?u=${user}`, (response) => {
        responses.push(response)
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => {
          if (!chunk.includes('event: message')) return
          const done = waiting.get(user)
          waiting.delete(user)
          done?.(performance.now())
        })
        resolve()
      }).on('error', reject).end()
    })))
  }
  return {
    arrived: async (user) => await new Promise<number>((resolve) => { waiting.set(user, resolve) }),
    close: () => { for (const response of responses) response.destroy() }
  }
}

interface Run { p50: number, p99: number, idleRequestsPerInterval: number }

async function measure (mongoUri: string, database: string, users: number, held: boolean, appendFromOther: boolean): Promise<Run> {
  const databaseUri = `${mongoUri.replace(/\/\?/, `/${database}?`)}`
  const sync = await startSync(databaseUri)
  const other = appendFromOther ? await startSync(databaseUri) : sync
  const backend = await startBackend(sync.url, held)
  const ids = Array.from({ length: users }, (_, index) => userId(index))
  const streams = await openStreams(backend.url, ids)
  for (const id of ids) await backend.bridge.ready(id, 30_000)
  // Let the joins settle into the steady rhythm of reads.
  await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS + 500))

  const latencies: number[] = []
  for (let change = 0; change < CHANGES; change++) {
    const user = ids[Math.floor(Math.random() * ids.length)] ?? ids[0] ?? ''
    // Changes land at any moment of the read rhythm, as provider changes do.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 300))
    const arrived = streams.arrived(user)
    await other.app.syncFeed.append(user, { kind: 'event', eventId: `e${change}` })
    const appended = performance.now()
    latencies.push((await arrived) - appended)
  }

  const before = sync.batchRequests()
  await new Promise((resolve) => setTimeout(resolve, IDLE_INTERVALS * INTERVAL_MS))
  const idleRequestsPerInterval = (sync.batchRequests() - before) / IDLE_INTERVALS

  streams.close()
  await backend.app.close()
  if (other !== sync) await other.app.close()
  await sync.app.close()
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), idleRequestsPerInterval }
}

const mongo = await startMongo({ replicaSet: 'rs0' })
const ms = (value: number): string => `${Math.round(value)} ms`
try {
  let run = 0
  for (const users of USER_COUNTS) {
    const polled = await measure(mongo.uri, `feed_bench_${run++}`, users, false, false)
    process.stdout.write(`${users} user(s), reads every ${INTERVAL_MS / 1000} s (baseline): p50 ${ms(polled.p50)}, p99 ${ms(polled.p99)}, ${polled.idleRequestsPerInterval.toFixed(2)} requests per interval idle\n`)
    for (const fromOther of [false, true]) {
      const result = await measure(mongo.uri, `feed_bench_${run++}`, users, true, fromOther)
      const who = fromOther ? 'appended by another Sync process' : 'appended by the Sync process read'
      process.stdout.write(`${users} user(s), held reads, ${who}: p50 ${ms(result.p50)} (${(result.p50 / polled.p50).toFixed(3)}x), ` +
        `p99 ${ms(result.p99)} (${(result.p99 / polled.p99).toFixed(3)}x; target under 1 s: ${result.p99 < 1000 ? 'met' : 'MISSED'}), ` +
        `${result.idleRequestsPerInterval.toFixed(2)} requests per interval idle (${(result.idleRequestsPerInterval / polled.idleRequestsPerInterval).toFixed(2)}x)\n`)
    }
  }
} finally {
  await mongo.close()
}
