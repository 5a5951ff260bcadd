// Benchmarks of the realtime stream, each as a ratio against a bare node:http SSE server measured
// in the same run, so the figures mean the same on any machine:
//   - memory per idle stream at 5k, 10k and 19k streams (target: at most 1.25x bare)
//   - fan-out latency p50/p99 of one message to 10k streams (target: p99 at most 1.2x bare)
//   - heap after 10k connect/disconnect cycles (target: back within 2 MB of where it started)
//   - Sync change-feed requests per tick with 1k and 5k users streaming (target: 1 per tick)
// Each server runs in a child process (one process here holds about 19,990 sockets, and the
// clients need as many); client sockets are spread over 127.0.0.x source addresses.
//
//   npx tsx bench/sse.ts            full run (about 2 minutes)
//   npx tsx bench/sse.ts --quick    a smaller run (5k streams at most)
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify from 'fastify'
import pino from 'pino'
import sseBroker from '../plugins/app/sse-broker.js'
import { encodeFrame } from '../services/sse-broker.js'
import { ChangeFeedBridge } from '../services/change-feed-bridge.js'
import { SyncClient } from '../clients/sync.js'
import type { ServerMessage } from '../schemas/server-message.js'
import { FakeSync, fakeSyncSecret } from '../test/realtime/fake-sync.js'

type ServerKind = 'bare' | 'fastify'

const quick = process.argv.includes('--quick')
const SCALES = quick ? [1000, 2500, 5000] : [5000, 10_000, 19_000]
const FANOUT_STREAMS = quick ? 2500 : 10_000
const FANOUT_ROUNDS = quick ? 10 : 40
const CYCLES = quick ? 2000 : 10_000
const FEED_USERS = quick ? [1000] : [1000, 5000]
const FEED_TICKS = 10
const CONNECT_CONCURRENCY = 400
const SOURCE_ADDRESSES = 200
// Heartbeats are not what is measured here; a long interval keeps them out of the figures.
const HEARTBEAT_MS = 10 * 60_000
const FANOUT_USER = '64b7f0c2a1b2c3d4e5f6aaaa'
const MB = 1024 * 1024

const message: ServerMessage = { type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['64b7f0c2a1b2c3d4e5f60001'] }

// ---------------------------------------------------------------------------------------------
// The servers (child processes)

type Command = { cmd: 'memory' } | { cmd: 'publish', userId: string } | { cmd: 'count' }

function userOf (url: string | undefined): string {
  return new URL(url ?? '/', 'http://x').searchParams.get('u') ?? 'anonymous'
}

async function runServer (kind: ServerKind): Promise<void> {
  const gc = globalThis.gc
  if (gc === undefined) throw new Error('run the server with --expose-gc')
  let publish: (userId: string) => number
  let count: () => number
  let port: number

  if (kind === 'bare') {
    const byUser = new Map<string, Set<ServerResponse>>()
    const server = createServer((req, res) => {
      const userId = userOf(req.url)
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' })
      res.write('retry: 5000\n\n')
      let streams = byUser.get(userId)
      if (streams === undefined) byUser.set(userId, streams = new Set())
      streams.add(res)
      res.once('close', () => {
        streams.delete(res)
        if (streams.size === 0) byUser.delete(userId)
      })
    })
    setInterval(() => {
      for (const streams of byUser.values()) for (const res of streams) res.write(': keepalive\n\n')
    }, HEARTBEAT_MS).unref()
    publish = (userId) => {
      const frame = encodeFrame(message)
      let written = 0
      for (const res of byUser.get(userId) ?? []) { res.write(frame); written++ }
      return written
    }
    count = () => { let n = 0; for (const streams of byUser.values()) n += streams.size; return n }
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    port = typeof address === 'object' && address !== null ? address.port : 0
  } else {
    // As in production, a logger with a child per request but no per-request log lines.
    const discard = new Writable({ write (_chunk, _encoding, callback) { callback() } })
    const app = Fastify({ loggerInstance: pino({ level: 'warn' }, discard) })
    await app.register(sseBroker, { realtime: { heartbeatIntervalMs: HEARTBEAT_MS } })
    // The stream route's work once the session is verified: take the response over, open, replay.
    app.get('/stream', (request, reply) => {
      const userId = userOf(request.url)
      reply.hijack()
      const stream = app.sse.open(reply.raw, { userId, sessionHandle: `handle-${userId}`, headers: reply.getHeaders() })
      if (stream !== undefined) app.sse.send(stream, { type: 'userMetadataChanged', session: { userId: FANOUT_USER, metadata: {} }, sync: null })
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const address = app.server.address()
    port = typeof address === 'object' && address !== null ? address.port : 0
    publish = (userId) => app.sse.publish(userId, message)
    count = () => app.sse.streamCount
  }

  process.on('message', (command: Command) => {
    if (command.cmd === 'memory') {
      for (let i = 0; i < 4; i++) gc()
      const usage = process.memoryUsage()
      process.send?.({ type: 'memory', heapUsed: usage.heapUsed, rss: usage.rss })
    } else if (command.cmd === 'publish') {
      const startNs = process.hrtime.bigint()
      const written = publish(command.userId)
      // Writes are flushed to the sockets when the tick ends; the next check phase is after that.
      setImmediate(() => {
        const flushedMs = Number(process.hrtime.bigint() - startNs) / 1e6
        process.send?.({ type: 'published', startNs: startNs.toString(), written, flushedMs })
      })
    } else if (command.cmd === 'count') {
      process.send?.({ type: 'count', streams: count() })
    }
  })
  process.on('disconnect', () => process.exit(0))
  process.send?.({ type: 'ready', port })
}

// ---------------------------------------------------------------------------------------------
// The driver (parent process): clients, measurements, report

class ServerProcess {
  readonly #child: ChildProcess
  #waiting: Array<{ type: string, resolve: (value: Record<string, unknown>) => void }> = []

  private constructor (child: ChildProcess) {
    this.#child = child
    child.on('message', (reply: Record<string, unknown>) => {
      const index = this.#waiting.findIndex((waiter) => waiter.type === reply.type)
      const waiter = this.#waiting[index]
      if (waiter !== undefined) {
        this.#waiting.splice(index, 1)
        waiter.resolve(reply)
      }
    })
  }

  static async start (kind: ServerKind): Promise<{ server: ServerProcess, port: number }> {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), 'server', kind], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc']
    })
    const server = new ServerProcess(child)
    const ready = await server.#await('ready')
    return { server, port: Number(ready.port) }
  }

  async #await (type: string): Promise<Record<string, unknown>> {
    return await new Promise((resolve) => { this.#waiting.push({ type, resolve }) })
  }

  async request (command: Command, replyType: string): Promise<Record<string, unknown>> {
    const reply = this.#await(replyType)
    this.#child.send(command)
    return await reply
  }

  async memory (): Promise<{ heapUsed: number, rss: number }> {
    const reply = await this.request({ cmd: 'memory' }, 'memory')
    return { heapUsed: Number(reply.heapUsed), rss: Number(reply.rss) }
  }

  async streams (): Promise<number> {
    return Number((await this.request({ cmd: 'count' }, 'count')).streams)
  }

  stop (): void {
    this.#child.kill()
  }
}

interface Client { socket: Socket, received: bigint[] }

let nextSource = 0
async function openClient (port: number, userId: string): Promise<Client> {
  const localAddress = `127.0.0.${2 + (nextSource++ % SOURCE_ADDRESSES)}`
  const client: Client = { socket: connect({ host: '127.0.0.1', port, localAddress }), received: [] }
  client.socket.setNoDelay(true)
  await new Promise<void>((resolve, reject) => {
    let opened = false
    client.socket.on('data', (chunk: Buffer) => {
      if (!opened) {
        if (chunk.includes('retry:')) { opened = true; resolve() }
        return
      }
      if (chunk.includes('eventsChanged')) client.received.push(process.hrtime.bigint())
    })
    client.socket.once('error', reject)
    client.socket.write(`GET /stream?u=${userId} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`)
  })
  return client
}

async function openClients (port: number, count: number, userId: string): Promise<Client[]> {
  const clients: Client[] = []
  while (clients.length < count) {
    const batch = Math.min(CONNECT_CONCURRENCY, count - clients.length)
    clients.push(...await Promise.all(Array.from({ length: batch }, async () => await openClient(port, userId))))
  }
  return clients
}

async function closeClients (server: ServerProcess, clients: Client[]): Promise<void> {
  for (const client of clients) client.socket.destroy()
  while (await server.streams() > 0) await sleep(20)
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN
}

interface ServerFigures {
  perStream: Array<{ streams: number, rssBytes: number, heapBytes: number }>
  fanout: { p50: number, p99: number, samples: number, latencies: number[], serverMs: number[] }
  cycles: { heapBeforeMB: number, heapAfterMB: number }
}

async function measureServer (kind: ServerKind): Promise<ServerFigures> {
  const { server, port } = await ServerProcess.start(kind)
  try {
    // Warm-up: JIT and pools settle before anything is counted.
    await closeClients(server, await openClients(port, 500, FANOUT_USER))

    // Connect/disconnect cycles: the heap must come back to where it started.
    const heapBefore = (await server.memory()).heapUsed
    for (let done = 0; done < CYCLES; done += CONNECT_CONCURRENCY) {
      await closeClients(server, await openClients(port, Math.min(CONNECT_CONCURRENCY, CYCLES - done), FANOUT_USER))
    }
    const heapAfter = (await server.memory()).heapUsed

    // Idle streams at each scale, and the fan-out once FANOUT_STREAMS are open.
    const base = await server.memory()
    const clients: Client[] = []
    const perStream: ServerFigures['perStream'] = []
    let fanout: ServerFigures['fanout'] = { p50: Number.NaN, p99: Number.NaN, samples: 0, latencies: [], serverMs: [] }
    const milestones = [...new Set([...SCALES, FANOUT_STREAMS])].sort((a, b) => a - b)
    for (const target of milestones) {
      clients.push(...await openClients(port, target - clients.length, FANOUT_USER))
      if (SCALES.includes(target)) {
        const memory = await server.memory()
        perStream.push({ streams: target, rssBytes: (memory.rss - base.rss) / target, heapBytes: (memory.heapUsed - base.heapUsed) / target })
      }
      if (target === FANOUT_STREAMS) fanout = await measureFanout(server, clients)
    }
    await closeClients(server, clients)
    return { perStream, fanout, cycles: { heapBeforeMB: heapBefore / MB, heapAfterMB: heapAfter / MB } }
  } finally {
    server.stop()
  }
}

async function measureFanout (server: ServerProcess, clients: Client[]): Promise<ServerFigures['fanout']> {
  const latencies: number[] = []
  const serverMs: number[] = []
  for (let round = 0; round < FANOUT_ROUNDS; round++) {
    for (const client of clients) client.received.length = 0
    const published = await server.request({ cmd: 'publish', userId: FANOUT_USER }, 'published')
    const start = BigInt(String(published.startNs))
    serverMs.push(Number(published.flushedMs))
    const deadline = Date.now() + 10_000
    while (clients.some((client) => client.received.length === 0) && Date.now() < deadline) await sleep(5)
    for (const client of clients) {
      const at = client.received[0]
      if (at !== undefined) latencies.push(Number(at - start) / 1e6)
    }
    await sleep(50)
  }
  latencies.sort((a, b) => a - b)
  return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), samples: latencies.length, latencies, serverMs }
}

async function measureFeed (users: number): Promise<{ requestsPerTick: number, msPerTick: number }> {
  const sync = new FakeSync()
  await sync.start()
  const client = new SyncClient({ baseUrl: sync.url, internalAuthToken: fakeSyncSecret })
  const activeListeners: Array<(userId: string) => void> = []
  const userIds = Array.from({ length: users }, (_, i) => i.toString(16).padStart(24, '0'))
  const broker = {
    publish: () => 0,
    users: () => [][Symbol.iterator](),
    onUserActive: (listener: (userId: string) => void) => { activeListeners.push(listener) },
    onUserIdle: () => {}
  }
  const bridge = new ChangeFeedBridge(broker, client, pino({ level: 'silent' }), { pollIntervalMs: 200, joinDelayMs: 10 })
  try {
    for (const userId of userIds) for (const listener of activeListeners) listener(userId)
    await Promise.all(userIds.map(async (userId) => await bridge.ready(userId, 30_000)))
    const ticksBefore = bridge.stats.ticks
    const requestsBefore = sync.batchRequests.length
    const started = performance.now()
    while (bridge.stats.ticks < ticksBefore + FEED_TICKS) await sleep(10)
    // The last counted tick may still be reading; let it finish.
    while (sync.batchRequests.length - requestsBefore < FEED_TICKS * Math.ceil(users / bridge.options.maxUsersPerRequest) && performance.now() - started < 30_000) await sleep(10)
    const ticks = bridge.stats.ticks - ticksBefore
    const requests = sync.batchRequests.length - requestsBefore
    const elapsed = performance.now() - started
    return { requestsPerTick: requests / ticks, msPerTick: elapsed / ticks - bridge.options.pollIntervalMs }
  } finally {
    await bridge.stop()
    await client.close()
    await sync.stop()
  }
}

async function measureInDriver (kind: ServerKind): Promise<ServerFigures> {
  const driver = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), 'driver', kind, ...(quick ? ['--quick'] : [])], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  return await new Promise((resolve, reject) => {
    driver.once('message', (figures: ServerFigures) => resolve(figures))
    driver.once('exit', (code) => reject(new Error(`the ${kind} driver exited with ${code} before reporting`)))
  })
}

function mean (values: number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length
}

/** Memory figures averaged over runs; latency percentiles over the pooled samples of all runs. */
function combine (runs: ServerFigures[]): ServerFigures {
  const first = runs[0]
  if (first === undefined) throw new Error('no run to combine')
  const latencies = runs.flatMap((run) => run.fanout.latencies).sort((a, b) => a - b)
  return {
    perStream: first.perStream.map((entry, i) => ({
      streams: entry.streams,
      rssBytes: mean(runs.map((run) => run.perStream[i]?.rssBytes ?? Number.NaN)),
      heapBytes: mean(runs.map((run) => run.perStream[i]?.heapBytes ?? Number.NaN))
    })),
    fanout: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), samples: latencies.length, latencies: [], serverMs: runs.flatMap((run) => run.fanout.serverMs).sort((a, b) => a - b) },
    cycles: {
      heapBeforeMB: mean(runs.map((run) => run.cycles.heapBeforeMB)),
      heapAfterMB: mean(runs.map((run) => run.cycles.heapAfterMB))
    }
  }
}

function ratio (a: number, b: number): string {
  return (a / b).toFixed(2)
}

async function main (): Promise<void> {
  const overall = setTimeout(() => { console.log('bench: stopped after its 10-minute bound'); process.exit(0) }, 10 * 60_000)
  overall.unref()
  console.log(`bench/sse: ${quick ? 'quick' : 'full'} run; scales ${SCALES.join('/')}, fan-out to ${FANOUT_STREAMS}, ${CYCLES} cycles`)
  // Whatever runs second in one client process measures worse (its heap and JIT state differ), so
  // every measurement gets fresh client and server processes, in alternating order.
  const runs: Record<ServerKind, ServerFigures[]> = { bare: [], fastify: [] }
  for (const order of [['bare', 'fastify'], ['fastify', 'bare']] as const) {
    for (const kind of order) runs[kind].push(await measureInDriver(kind))
  }
  const bare = combine(runs.bare)
  const fastify = combine(runs.fastify)

  console.log('\nmemory per idle stream (server process, after GC)')
  console.log('streams   bare rss   ours rss   ratio   bare heap   ours heap   ratio   (target rss ratio <= 1.25)')
  bare.perStream.forEach((b, i) => {
    const o = fastify.perStream[i]
    if (o === undefined) return
    console.log(`${String(b.streams).padStart(7)}  ${(b.rssBytes / 1024).toFixed(2).padStart(7)} KB ${(o.rssBytes / 1024).toFixed(2).padStart(7)} KB   ${ratio(o.rssBytes, b.rssBytes).padStart(5)}  ${(b.heapBytes / 1024).toFixed(2).padStart(7)} KB  ${(o.heapBytes / 1024).toFixed(2).padStart(7)} KB   ${ratio(o.heapBytes, b.heapBytes).padStart(5)}`)
  })

  console.log(`\nfan-out of one message to ${FANOUT_STREAMS} streams, ${FANOUT_ROUNDS} rounds (ms from publish to each client's receipt)`)
  console.log(`bare  p50 ${bare.fanout.p50.toFixed(2)}  p99 ${bare.fanout.p99.toFixed(2)}  (${bare.fanout.samples} samples)`)
  console.log(`ours  p50 ${fastify.fanout.p50.toFixed(2)}  p99 ${fastify.fanout.p99.toFixed(2)}  (${fastify.fanout.samples} samples)`)
  console.log(`ratio p50 ${ratio(fastify.fanout.p50, bare.fanout.p50)}  p99 ${ratio(fastify.fanout.p99, bare.fanout.p99)}  (target p99 ratio <= 1.2)`)
  // The client side (one process reading every socket) dominates the latencies above and varies with
  // the machine's load; the server's own share is the time from publish until its writes are flushed.
  const serverP50 = (figures: ServerFigures) => percentile(figures.fanout.serverMs, 0.5)
  const serverP99 = (figures: ServerFigures) => percentile(figures.fanout.serverMs, 0.99)
  console.log(`server publish-to-flush per round: bare p50 ${serverP50(bare).toFixed(2)} p99 ${serverP99(bare).toFixed(2)} ms, ours p50 ${serverP50(fastify).toFixed(2)} p99 ${serverP99(fastify).toFixed(2)} ms, ratio p50 ${ratio(serverP50(fastify), serverP50(bare))} p99 ${ratio(serverP99(fastify), serverP99(bare))}`)

  console.log(`\nheap after ${CYCLES} connect/disconnect cycles (target: within 2 MB)`)
  for (const [name, figures] of [['bare', bare], ['ours', fastify]] as const) {
    const delta = figures.cycles.heapAfterMB - figures.cycles.heapBeforeMB
    console.log(`${name}  before ${figures.cycles.heapBeforeMB.toFixed(2)} MB  after ${figures.cycles.heapAfterMB.toFixed(2)} MB  delta ${delta >= 0 ? '+' : ''}${delta.toFixed(2)} MB`)
  }

  console.log(`\nSync change-feed requests per tick (target 1; the contract allows ${new ChangeFeedBridge({ publish: () => 0, users: () => [][Symbol.iterator](), onUserActive: () => {}, onUserIdle: () => {} }, { changesBatch: async () => [] }, pino({ level: 'silent' })).options.maxUsersPerRequest} users per request)`)
  for (const users of FEED_USERS) {
    const feed = await measureFeed(users)
    console.log(`${String(users).padStart(5)} users streaming: ${feed.requestsPerTick.toFixed(2)} requests per tick, about ${Math.max(0, feed.msPerTick).toFixed(1)} ms per tick`)
  }
  clearTimeout(overall)
}

if (process.argv[2] === 'server') {
  await runServer(process.argv[3] === 'bare' ? 'bare' : 'fastify')
} else if (process.argv[2] === 'driver') {
  const figures = await measureServer(process.argv[3] === 'bare' ? 'bare' : 'fastify')
  process.send?.(figures, () => process.exit(0))
} else {
  await main()
  process.exit(0)
}
