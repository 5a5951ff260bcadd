// Benchmarks of the realtime stream, each as a ratio against a bare node:http SSE server measured
// in the same run, so the figures mean the same on any machine:
//   - memory per idle stream at 5k, 10k and 19k streams (target: at most 1.25x bare)
//   - fan-out latency p50/p99 (target: p99 at most 1.2x bare) of (a) one change per user reaching
//     every stream of 500 users through the change feed (a Sync page per user, then a publish to
//     that user's streams), timed from the changes landing at Sync as a read arrives there, and
//     (b) one message published directly to one user's streams
//   - heap after 10k connect/disconnect cycles (target: back within 2 MB of where it started)
//   - Sync change-feed requests per tick with 1k and 5k users streaming (target: 1 per tick)
// Streams are spread over users as tabs are: at most the broker's per-user cap each (a user's
// next stream closes their oldest, so more would measure the cap, not the streams).
// The bare server does the same work by hand: the same sockets grouped by the same users, one
// signed batched read of the same Sync feed per tick, the same frames written.
// Each server runs in a child process (one process here holds about 19,990 sockets, and the
// clients need as many); client sockets are spread over 127.0.0.x source addresses. The Sync
// stand-in (test/realtime/fake-sync.ts) runs in the clients' process.
//
//   npx tsx bench/sse.ts            full run (about 2.5 minutes)
//   npx tsx bench/sse.ts --quick    a smaller run (5k streams at most)
import { deepStrictEqual } from 'node:assert'
import { spawn, type ChildProcess } from 'node:child_process'
import { Agent, createServer, request as httpRequest, type ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify from 'fastify'
import pino from 'pino'
import sseBroker from '../plugins/app/sse-broker.js'
import { defaultSseBrokerOptions, encodeFrame, type SseBroker } from '../services/sse-broker.js'
import { ChangeFeedBridge, type ChangeSource } from '../services/change-feed-bridge.js'
import { SyncClient } from '../clients/sync.js'
import { signInternalRequest } from '../lib/internal-auth.js'
import { translatePage } from '../lib/change-translation.js'
import { SYNC_PATHS, type ChangesPage, type Invalidation } from '../schemas/sync/index.js'
import type { ServerMessage } from '../schemas/server-message.js'
import { FakeSync, fakeSyncSecret } from '../test/realtime/fake-sync.js'

type ServerKind = 'bare' | 'fastify'

const quick = process.argv.includes('--quick')
const SCALES = quick ? [1000, 2500, 5000] : [5000, 10_000, 19_000]
const FANOUT_STREAMS = quick ? 2500 : 10_000
const FANOUT_ROUNDS = quick ? 10 : 30
const USER_ROUNDS = quick ? 20 : 60
const CYCLES = quick ? 2000 : 10_000
const FEED_USERS = quick ? [1000] : [1000, 5000]
const FEED_TICKS = 10
const PER_USER = defaultSseBrokerOptions.maxStreamsPerUser
const CONNECT_CONCURRENCY = 400
const SOURCE_ADDRESSES = 200
// Heartbeats are not what is measured here; a long interval keeps them out of the figures.
const HEARTBEAT_MS = 10 * 60_000
// The product reads the feed every 2 s; a shorter pause lets the rounds run back to back. The
// fan-out clock starts as the changes land at Sync while a read is there, so the pause is not in it.
const POLL_MS = 250
const MB = 1024 * 1024
const EVENT_ID = '64b7f0c2a1b2c3d4e5f60001'

const message: ServerMessage = { type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: [EVENT_ID] }

/** 24-hex ids, as the bridge follows no other kind. */
function userIdOf (n: number): string {
  return `64b7f0c2${n.toString(16).padStart(16, '0')}`
}

function invalidation (): Invalidation {
  return { kind: 'event', at: new Date().toISOString(), eventId: EVENT_ID }
}

/**
 * The Sync stand-in, able to land one change for each of a set of users the moment a read of their
 * feeds arrives. The fan-out clock starts there: when a read is out, a change that lands reaches
 * the streams without waiting for the next one, whether reads are polled or held at Sync.
 */
class ArmedSync extends FakeSync {
  #armed: { users: string[], landed: (atNs: bigint) => void } | undefined

  async land (users: string[]): Promise<bigint> {
    return await new Promise((resolve) => { this.#armed = { users, landed: resolve } })
  }

  override page (userId: string, cursor: string | null): ReturnType<FakeSync['page']> {
    const armed = this.#armed
    // A read that only asks for watermarks (new users) would not carry the changes.
    if (armed !== undefined && cursor !== null) {
      this.#armed = undefined
      const atNs = process.hrtime.bigint()
      for (const armedUser of armed.users) this.append(armedUser, invalidation())
      armed.landed(atNs)
    }
    return super.page(userId, cursor)
  }
}

function replayOf (userId: string): ServerMessage {
  return { type: 'userMetadataChanged', session: { userId, metadata: {} }, sync: null }
}

// ---------------------------------------------------------------------------------------------
// The servers (child processes)

type Command =
  | { cmd: 'memory' }
  | { cmd: 'publish', userId: string }
  | { cmd: 'count' }
  | { cmd: 'round' }
  | { cmd: 'feed' }

/** A read of the feed that carried changes: how many streams it wrote and how long the server took. */
interface FeedRound { answerToFlushMs: number, cpuMs: number, written: number }

/** What both servers keep of their feed reads. */
class FeedRecorder {
  ticks = 0
  requests = 0
  readMs: number[] = []
  #rounds: FeedRound[] = []
  #waiting: Array<(round: FeedRound) => void> = []

  /**
   * Called as a read starts; the returned function is called as its answer is in hand (checked and
   * parsed), before its pages are applied. Both figures are taken when the writes the pages caused
   * have gone out: the next check phase.
   */
  start (): (written: () => number) => void {
    this.requests++
    const startNs = process.hrtime.bigint()
    return (written) => {
      const answeredNs = process.hrtime.bigint()
      const answeredCpu = process.cpuUsage()
      setImmediate(() => {
        const nowNs = process.hrtime.bigint()
        this.readMs.push(Number(nowNs - startNs) / 1e6)
        const round = { answerToFlushMs: Number(nowNs - answeredNs) / 1e6, cpuMs: cpuMsSince(answeredCpu), written: written() }
        if (round.written === 0) return
        const waiter = this.#waiting.shift()
        if (waiter !== undefined) waiter(round)
        else this.#rounds.push(round)
      })
    }
  }

  async next (): Promise<FeedRound> {
    const round = this.#rounds.shift()
    if (round !== undefined) return round
    return await new Promise((resolve) => { this.#waiting.push(resolve) })
  }
}

/** CPU time of this process (user and system) since `from`: unlike wall time, hardly moved by other work on the machine. */
function cpuMsSince (from: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(from)
  return (used.user + used.system) / 1000
}

function userOf (url: string | undefined): string {
  return new URL(url ?? '/', 'http://x').searchParams.get('u') ?? 'anonymous'
}

interface ServerParts {
  port: number
  publish: (userId: string) => number
  count: () => number
  /** Users whose feed position is known. */
  followed: () => number
  ticks: () => number
}

async function bareServer (syncUrl: string, recorder: FeedRecorder): Promise<ServerParts> {
  const byUser = new Map<string, Set<ServerResponse>>()
  const cursors = new Map<string, string | null>()
  const server = createServer((req, res) => {
    const userId = userOf(req.url)
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' })
    res.write('retry: 5000\n\n')
    let streams = byUser.get(userId)
    if (streams === undefined) {
      byUser.set(userId, streams = new Set())
      cursors.set(userId, null)
    }
    streams.add(res)
    res.write(encodeFrame(replayOf(userId)))
    res.once('close', () => {
      streams.delete(res)
      if (streams.size === 0) {
        byUser.delete(userId)
        cursors.delete(userId)
      }
    })
  })
  setInterval(() => {
    for (const streams of byUser.values()) for (const res of streams) res.write(': keepalive\n\n')
  }, HEARTBEAT_MS).unref()

  const agent = new Agent({ keepAlive: true, maxSockets: 4 })
  const target = new URL(SYNC_PATHS.changesBatch, syncUrl)
  const read = async (): Promise<void> => {
    const users = [...cursors].map(([userId, cursor]) => ({ userId, cursor }))
    const done = recorder.start()
    const body = JSON.stringify({ users })
    const headers = signInternalRequest({ secret: fakeSyncSecret, method: 'POST', path: target.pathname, body }, Date.now())
    const text = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(target, { method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json' } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => { resolve(Buffer.concat(chunks).toString()) })
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(body)
    })
    const { pages } = JSON.parse(text) as { pages: ChangesPage[] }
    let written = 0
    done(() => written)
    for (const page of pages) {
      const sent = cursors.get(page.userId)
      if (sent === undefined) continue
      cursors.set(page.userId, page.cursor)
      if (sent === null || page.invalidations.length === 0) continue
      const frame = encodeFrame(message)
      for (const res of byUser.get(page.userId) ?? []) { res.write(frame); written++ }
    }
  }
  const tick = (): void => {
    recorder.ticks++
    const reading = cursors.size === 0 ? Promise.resolve() : read()
    reading.catch((error: unknown) => { console.error('bare feed read failed', error) })
      .finally(() => { setTimeout(tick, POLL_MS).unref() })
  }
  setTimeout(tick, POLL_MS).unref()

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    publish: (userId) => {
      const frame = encodeFrame(message)
      let written = 0
      for (const res of byUser.get(userId) ?? []) { res.write(frame); written++ }
      return written
    },
    count: () => { let n = 0; for (const streams of byUser.values()) n += streams.size; return n },
    followed: () => { let n = 0; for (const cursor of cursors.values()) if (cursor !== null) n++; return n },
    ticks: () => recorder.ticks
  }
}

async function fastifyServer (syncUrl: string, recorder: FeedRecorder): Promise<ServerParts> {
  // As in production, a logger with a child per request but no per-request log lines.
  const discard = new Writable({ write (_chunk, _encoding, callback) { callback() } })
  const app = Fastify({ loggerInstance: pino({ level: 'warn' }, discard) })
  await app.register(sseBroker, { realtime: { heartbeatIntervalMs: HEARTBEAT_MS } })
  const sse: SseBroker = app.sse
  if (sse.options.maxStreamsPerUser !== PER_USER) throw new Error('the bench groups streams by the broker\'s default cap')
  // The client and the bridge as plugins/app/sync-client.ts and change-feed.ts wire them; the two
  // wrappers only count, so the bare server's figures have their like here.
  const client = new SyncClient({ baseUrl: syncUrl, internalAuthToken: fakeSyncSecret })
  let written = 0
  const source: ChangeSource = {
    // The arguments go through untouched, whatever the bridge asks of the client.
    changesBatch: async (...args: Parameters<ChangeSource['changesBatch']>) => {
      const done = recorder.start()
      written = 0
      const pages = await client.changesBatch(...args)
      // The bridge publishes the pages in the microtasks after this returns, before the check phase.
      done(() => written)
      return pages
    }
  }
  const broker = {
    publish: (userId: string, published: ServerMessage) => { const n = sse.publish(userId, published); written += n; return n },
    onUserActive: (listener: (userId: string) => void) => { sse.onUserActive(listener) },
    onUserIdle: (listener: (userId: string) => void) => { sse.onUserIdle(listener) },
    users: () => sse.users()
  }
  const bridge = new ChangeFeedBridge(broker, source, app.log.child({ plugin: 'change-feed' }), { pollIntervalMs: POLL_MS })
  // The stream route's work once the session is verified (routes/events/stream.ts): take the
  // response over, open, wait for the feed position, replay.
  app.get('/stream', async (request, reply) => {
    const userId = userOf(request.url)
    reply.hijack()
    const stream = sse.open(reply.raw, { userId, sessionHandle: `handle-${userId}`, headers: reply.getHeaders(), replayFirst: true })
    if (stream === undefined) return
    await bridge.ready(userId)
    if (stream.closed) return
    sse.replay(stream, replayOf(userId))
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    publish: (userId) => sse.publish(userId, message),
    count: () => sse.streamCount,
    followed: () => { let n = 0; for (const userId of sse.users()) if (bridge.isFollowing(userId)) n++; return n },
    ticks: () => bridge.stats.ticks
  }
}

async function runServer (kind: ServerKind, syncUrl: string): Promise<void> {
  const gc = globalThis.gc
  if (gc === undefined) throw new Error('run the server with --expose-gc')
  const recorder = new FeedRecorder()
  const parts = kind === 'bare' ? await bareServer(syncUrl, recorder) : await fastifyServer(syncUrl, recorder)

  process.on('message', (command: Command) => {
    if (command.cmd === 'memory') {
      for (let i = 0; i < 4; i++) gc()
      const usage = process.memoryUsage()
      process.send?.({ type: 'memory', heapUsed: usage.heapUsed, rss: usage.rss })
    } else if (command.cmd === 'publish') {
      const startNs = process.hrtime.bigint()
      const startCpu = process.cpuUsage()
      const written = parts.publish(command.userId)
      setImmediate(() => {
        const flushedMs = Number(process.hrtime.bigint() - startNs) / 1e6
        process.send?.({ type: 'published', startNs: startNs.toString(), written, flushedMs, cpuMs: cpuMsSince(startCpu) })
      })
    } else if (command.cmd === 'count') {
      process.send?.({ type: 'count', streams: parts.count(), followed: parts.followed() })
    } else if (command.cmd === 'round') {
      recorder.next().then((round) => process.send?.({ type: 'round', ...round }), (error: unknown) => { console.error(error) })
    } else if (command.cmd === 'feed') {
      process.send?.({ type: 'feed', ticks: parts.ticks(), requests: recorder.requests, readMs: recorder.readMs.splice(0) })
    }
  })
  process.on('disconnect', () => process.exit(0))
  process.send?.({ type: 'ready', port: parts.port })
}

// ---------------------------------------------------------------------------------------------
// The driver (one child process per measured server): clients, the Sync stand-in, measurements

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

  static async start (kind: ServerKind, syncUrl: string): Promise<{ server: ServerProcess, port: number }> {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), 'server', kind, syncUrl], {
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

  async count (): Promise<{ streams: number, followed: number }> {
    const reply = await this.request({ cmd: 'count' }, 'count')
    return { streams: Number(reply.streams), followed: Number(reply.followed) }
  }

  async feed (): Promise<{ ticks: number, requests: number, readMs: number[] }> {
    const reply = await this.request({ cmd: 'feed' }, 'feed')
    return { ticks: Number(reply.ticks), requests: Number(reply.requests), readMs: reply.readMs as number[] }
  }

  stop (): void {
    this.#child.kill()
  }
}

interface Client { userId: string, socket: Socket, received: bigint[] }

let nextSource = 0
async function openClient (port: number, userId: string): Promise<Client> {
  const localAddress = `127.0.0.${2 + (nextSource++ % SOURCE_ADDRESSES)}`
  const client: Client = { userId, socket: connect({ host: '127.0.0.1', port, localAddress }), received: [] }
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

let nextUser = 0
/** Opens `count` streams for new users, `perUser` each (the last user may get fewer). */
async function openClients (port: number, count: number, perUser = PER_USER): Promise<Client[]> {
  const userIds = Array.from({ length: count }, (_, i) => userIdOf(nextUser + Math.floor(i / perUser)))
  nextUser += Math.ceil(count / perUser)
  const clients: Client[] = []
  while (clients.length < count) {
    const batch = userIds.slice(clients.length, clients.length + CONNECT_CONCURRENCY)
    clients.push(...await Promise.all(batch.map(async (userId) => await openClient(port, userId))))
  }
  return clients
}

async function closeClients (server: ServerProcess, clients: Client[]): Promise<void> {
  for (const client of clients) client.socket.destroy()
  while ((await server.count()).streams > 0) await sleep(20)
}

/** Until the server knows every user's feed position, a change would be taken for the watermark. */
async function awaitFollowed (server: ServerProcess, users: number): Promise<void> {
  const deadline = Date.now() + 30_000
  while ((await server.count()).followed < users) {
    if (Date.now() > deadline) throw new Error(`the server follows fewer than ${users} users after 30 s`)
    await sleep(20)
  }
}

function usersOf (clients: Client[]): string[] {
  return [...new Set(clients.map((client) => client.userId))]
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN
}

interface Fanout { latencies: number[], serverMs: number[], cpuMs: number[] }
interface FeedFigures { users: number, ticks: number, requests: number, readMs: number[] }

interface ServerFigures {
  perStream: Array<{ streams: number, rssBytes: number, heapBytes: number }>
  feedFanout: Fanout
  userFanout: Fanout
  cycles: { heapBeforeMB: number, heapAfterMB: number }
  feed: FeedFigures[]
}

async function measureServer (kind: ServerKind): Promise<ServerFigures> {
  const sync = new ArmedSync()
  await sync.start()
  const { server, port } = await ServerProcess.start(kind, sync.url)
  try {
    // Warm-up: JIT and pools settle before anything is counted.
    await closeClients(server, await openClients(port, 500))

    // Connect/disconnect cycles, new users each time: the heap must come back to where it started.
    const heapBefore = (await server.memory()).heapUsed
    for (let done = 0; done < CYCLES; done += CONNECT_CONCURRENCY) {
      await closeClients(server, await openClients(port, Math.min(CONNECT_CONCURRENCY, CYCLES - done)))
      sync.batchRequests.length = 0
    }
    const heapAfter = (await server.memory()).heapUsed

    // Idle streams at each scale, and the fan-outs once FANOUT_STREAMS are open.
    const base = await server.memory()
    const clients: Client[] = []
    const perStream: ServerFigures['perStream'] = []
    let feedFanout: Fanout = { latencies: [], serverMs: [], cpuMs: [] }
    let userFanout: Fanout = { latencies: [], serverMs: [], cpuMs: [] }
    const milestones = [...new Set([...SCALES, FANOUT_STREAMS])].sort((a, b) => a - b)
    for (const target of milestones) {
      clients.push(...await openClients(port, target - clients.length))
      await awaitFollowed(server, usersOf(clients).length)
      sync.batchRequests.length = 0
      if (SCALES.includes(target)) {
        const memory = await server.memory()
        perStream.push({ streams: target, rssBytes: (memory.rss - base.rss) / target, heapBytes: (memory.heapUsed - base.heapUsed) / target })
      }
      if (target === FANOUT_STREAMS) {
        feedFanout = await measureFeedFanout(server, sync, clients)
        userFanout = await measureUserFanout(server, clients.filter((client) => client.userId === clients[0]?.userId))
      }
    }
    await closeClients(server, clients)

    // Sync reads per tick, one stream per user.
    const feed: FeedFigures[] = []
    for (const users of FEED_USERS) {
      const opened = await openClients(port, users, 1)
      await awaitFollowed(server, users)
      const before = await server.feed()
      await sleep(FEED_TICKS * POLL_MS)
      const after = await server.feed()
      feed.push({ users, ticks: after.ticks - before.ticks, requests: after.requests - before.requests, readMs: after.readMs })
      await closeClients(server, opened)
      sync.batchRequests.length = 0
    }
    return { perStream, feedFanout, userFanout, cycles: { heapBeforeMB: heapBefore / MB, heapAfterMB: heapAfter / MB }, feed }
  } finally {
    server.stop()
    await sync.stop()
  }
}

async function awaitReceipt (clients: Client[]): Promise<void> {
  const deadline = Date.now() + 10_000
  while (clients.some((client) => client.received.length === 0) && Date.now() < deadline) await sleep(5)
}

/** One change for every user, landing at Sync as a read arrives; that read carries them all. */
async function measureFeedFanout (server: ServerProcess, sync: ArmedSync, clients: Client[]): Promise<Fanout> {
  const latencies: number[] = []
  const serverMs: number[] = []
  const cpuMs: number[] = []
  const users = usersOf(clients)
  for (let round = 0; round < FANOUT_ROUNDS; round++) {
    for (const client of clients) client.received.length = 0
    const carried = server.request({ cmd: 'round' }, 'round')
    const start = await sync.land(users)
    const published = await carried
    if (Number(published.written) !== clients.length) throw new Error(`a read carried changes to ${String(published.written)} streams, not ${clients.length}`)
    serverMs.push(Number(published.answerToFlushMs))
    cpuMs.push(Number(published.cpuMs))
    await awaitReceipt(clients)
    for (const client of clients) {
      const at = client.received[0]
      if (at !== undefined) latencies.push(Number(at - start) / 1e6)
    }
    sync.batchRequests.length = 0
    await sleep(50)
  }
  return { latencies, serverMs, cpuMs }
}

/** One message to one user's streams, published directly (as a revocation or a metadata change is). */
async function measureUserFanout (server: ServerProcess, clients: Client[]): Promise<Fanout> {
  const latencies: number[] = []
  const serverMs: number[] = []
  const cpuMs: number[] = []
  const userId = clients[0]?.userId ?? ''
  for (let round = 0; round < USER_ROUNDS; round++) {
    for (const client of clients) client.received.length = 0
    const published = await server.request({ cmd: 'publish', userId }, 'published')
    if (Number(published.written) !== clients.length) throw new Error(`a publish reached ${String(published.written)} streams, not ${clients.length}`)
    const start = BigInt(String(published.startNs))
    serverMs.push(Number(published.flushedMs))
    cpuMs.push(Number(published.cpuMs))
    await awaitReceipt(clients)
    for (const client of clients) {
      const at = client.received[0]
      if (at !== undefined) latencies.push(Number(at - start) / 1e6)
    }
    await sleep(20)
  }
  return { latencies, serverMs, cpuMs }
}

// ---------------------------------------------------------------------------------------------
// The report (parent process)

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

function sorted (values: number[]): number[] {
  return [...values].sort((a, b) => a - b)
}

function ratio (a: number, b: number): string {
  return (a / b).toFixed(2)
}

function ms (value: number): string {
  return value.toFixed(2).padStart(7)
}

/** Memory averaged over the runs; latency percentiles over the pooled samples of all runs. */
function report (bare: ServerFigures[], ours: ServerFigures[]): void {
  const first = bare[0]
  if (first === undefined) return

  console.log('\nmemory per idle stream (server process, after GC)')
  console.log('streams  users   bare rss   ours rss   ratio   bare heap   ours heap   ratio   (target rss ratio <= 1.25)')
  first.perStream.forEach((entry, i) => {
    const b = { rss: mean(bare.map((run) => run.perStream[i]?.rssBytes ?? Number.NaN)), heap: mean(bare.map((run) => run.perStream[i]?.heapBytes ?? Number.NaN)) }
    const o = { rss: mean(ours.map((run) => run.perStream[i]?.rssBytes ?? Number.NaN)), heap: mean(ours.map((run) => run.perStream[i]?.heapBytes ?? Number.NaN)) }
    console.log(`${String(entry.streams).padStart(7)} ${String(Math.ceil(entry.streams / PER_USER)).padStart(6)}  ${(b.rss / 1024).toFixed(2).padStart(7)} KB ${(o.rss / 1024).toFixed(2).padStart(7)} KB   ${ratio(o.rss, b.rss).padStart(5)}  ${(b.heap / 1024).toFixed(2).padStart(7)} KB  ${(o.heap / 1024).toFixed(2).padStart(7)} KB   ${ratio(o.heap, b.heap).padStart(5)}`)
  })

  const fanouts = [
    [`(a) one change per user through the change feed, ${FANOUT_STREAMS / PER_USER} users x ${PER_USER} streams, ${FANOUT_ROUNDS} rounds (ms from the changes landing at Sync, a read there, to each client's receipt)`, 'feedFanout', 'from the Sync answer in hand'],
    [`(b) one message published to one user's ${PER_USER} streams, ${FANOUT_STREAMS} streams open, ${USER_ROUNDS} rounds (ms from publish to each client's receipt)`, 'userFanout', 'from publish']
  ] as const
  for (const [title, key, from] of fanouts) {
    const b = sorted(bare.flatMap((run) => run[key].latencies))
    const o = sorted(ours.flatMap((run) => run[key].latencies))
    console.log(`\nfan-out ${title}`)
    console.log(`bare  p50 ${ms(percentile(b, 0.5))}  p99 ${ms(percentile(b, 0.99))}  (${b.length} samples)`)
    console.log(`ours  p50 ${ms(percentile(o, 0.5))}  p99 ${ms(percentile(o, 0.99))}  (${o.length} samples)`)
    console.log(`ratio p50 ${ratio(percentile(o, 0.5), percentile(b, 0.5))}  p99 ${ratio(percentile(o, 0.99), percentile(b, 0.99))}  (target p99 ratio <= 1.2)`)
    // The client side (one process reading every socket) is most of the latencies above and varies
    // with the machine's load; the server's own share ends when its writes are flushed.
    const bs = sorted(bare.flatMap((run) => run[key].serverMs))
    const os = sorted(ours.flatMap((run) => run[key].serverMs))
    console.log(`server's share per round (${from} to its writes flushed): bare p50 ${ms(percentile(bs, 0.5))} p99 ${ms(percentile(bs, 0.99))}, ours p50 ${ms(percentile(os, 0.5))} p99 ${ms(percentile(os, 0.99))}, ratio p50 ${ratio(percentile(os, 0.5), percentile(bs, 0.5))} p99 ${ratio(percentile(os, 0.99), percentile(bs, 0.99))}`)
    const bc = sorted(bare.flatMap((run) => run[key].cpuMs))
    const oc = sorted(ours.flatMap((run) => run[key].cpuMs))
    console.log(`server's CPU time in that share: bare p50 ${ms(percentile(bc, 0.5))} p99 ${ms(percentile(bc, 0.99))}, ours p50 ${ms(percentile(oc, 0.5))} p99 ${ms(percentile(oc, 0.99))}, ratio p50 ${ratio(percentile(oc, 0.5), percentile(bc, 0.5))} p99 ${ratio(percentile(oc, 0.99), percentile(bc, 0.99))}`)
  }

  console.log(`\nheap after ${CYCLES} connect/disconnect cycles, ${CYCLES / PER_USER} users (target: within 2 MB)`)
  for (const [name, runs] of [['bare', bare], ['ours', ours]] as const) {
    const before = mean(runs.map((run) => run.cycles.heapBeforeMB))
    const after = mean(runs.map((run) => run.cycles.heapAfterMB))
    const deltas = runs.map((run) => run.cycles.heapAfterMB - run.cycles.heapBeforeMB)
    console.log(`${name}  before ${before.toFixed(2)} MB  after ${after.toFixed(2)} MB  delta per run ${deltas.map((delta) => `${delta >= 0 ? '+' : ''}${delta.toFixed(2)}`).join(', ')} MB`)
  }

  console.log('\nSync change-feed requests per tick, one stream per user (target 1)')
  first.feed.forEach((entry, i) => {
    const perTick = (runs: ServerFigures[]): number => mean(runs.map((run) => { const f = run.feed[i]; return f === undefined ? Number.NaN : f.requests / f.ticks }))
    const readP50 = (runs: ServerFigures[]): number => percentile(sorted(runs.flatMap((run) => run.feed[i]?.readMs ?? [])), 0.5)
    console.log(`${String(entry.users).padStart(5)} users: bare ${perTick(bare).toFixed(2)}, ours ${perTick(ours).toFixed(2)} requests per tick (ratio ${ratio(perTick(ours), perTick(bare))}); a read takes bare ${readP50(bare).toFixed(1)} ms, ours ${readP50(ours).toFixed(1)} ms at p50 (ratio ${ratio(readP50(ours), readP50(bare))})`)
  })
}

async function main (): Promise<void> {
  const overall = setTimeout(() => { console.log('bench: stopped after its 15-minute bound'); process.exit(1) }, 15 * 60_000)
  overall.unref()
  // The bare server writes `message` for every page that has changes; the product writes what the
  // translation makes of the page. The two must be the same frame.
  deepStrictEqual(translatePage({ invalidations: [invalidation()], resyncRequired: false }), [message])
  console.log(`bench/sse: ${quick ? 'quick' : 'full'} run; scales ${SCALES.join('/')} streams at ${PER_USER} per user, fan-out to ${FANOUT_STREAMS}, ${CYCLES} cycles, feed at ${FEED_USERS.join('/')} users`)
  // Whatever runs second in one client process measures worse (its heap and JIT state differ), so
  // every measurement gets fresh client and server processes, in alternating order.
  const runs: Record<ServerKind, ServerFigures[]> = { bare: [], fastify: [] }
  for (const order of [['bare', 'fastify'], ['fastify', 'bare']] as const) {
    for (const kind of order) runs[kind].push(await measureInDriver(kind))
  }
  report(runs.bare, runs.fastify)
  clearTimeout(overall)
}

if (process.argv[2] === 'server') {
  await runServer(process.argv[3] === 'bare' ? 'bare' : 'fastify', process.argv[4] ?? '')
} else if (process.argv[2] === 'driver') {
  const figures = await measureServer(process.argv[3] === 'bare' ? 'bare' : 'fastify')
  process.send?.(figures, () => process.exit(0))
} else {
  await main()
  process.exit(0)
}
