// A minimal Fastify app around the broker plugin for stream tests that do not need sessions: the
// user and session come from test headers. Logs are captured so tests can assert what was logged.
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import sseBroker from '../../plugins/app/sse-broker.js'
import type { SseBrokerOptions } from '../../services/sse-broker.js'
import changeFeed from '../../plugins/app/change-feed.js'
import type { ChangeFeedOptions } from '../../services/change-feed-bridge.js'
import { SyncClient } from '../../clients/sync.js'

export interface LogLine { level: number, msg: string, [key: string]: unknown }

export class LogCapture extends Writable {
  readonly lines: LogLine[] = []
  override _write (chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() !== '') this.lines.push(JSON.parse(line) as LogLine)
    }
    callback()
  }

  find (msg: string): LogLine[] {
    return this.lines.filter((line) => line.msg === msg)
  }
}

export interface BrokerAppOptions {
  realtime?: Partial<SseBrokerOptions & ChangeFeedOptions>
  /** With a Sync URL the change-feed bridge runs too, through the real Sync client. */
  sync?: { url: string, internalAuthToken: string }
}

export async function startBrokerApp (t: Test, options: BrokerAppOptions = {}): Promise<{ app: FastifyInstance, url: string, logs: LogCapture }> {
  const logs = new LogCapture()
  const app = Fastify({ logger: { level: 'debug', stream: logs } })
  await app.register(sseBroker, { realtime: options.realtime })
  const sync = options.sync
  if (sync !== undefined) {
    await app.register(fp(async (instance) => {
      const client = new SyncClient({ baseUrl: sync.url, internalAuthToken: sync.internalAuthToken, timeoutMs: 2000 })
      instance.decorate('syncClient', client)
      instance.addHook('onClose', async () => { await client.close() })
    }, { name: 'sync-client' }))
    await app.register(changeFeed, { realtime: options.realtime })
  }
  app.get('/stream', (request, reply) => {
    const userId = request.headers['x-user']
    const session = request.headers['x-session']
    if (typeof userId !== 'string') return reply.code(401).send({ message: 'no user' })
    reply.hijack()
    app.sse.open(reply.raw, { userId, sessionHandle: typeof session === 'string' ? session : undefined })
  })
  // A stream whose replay comes `?replayAfterMs=` later, as the stream route's does once its reads end.
  app.get('/replayed', (request, reply) => {
    const userId = request.headers['x-user']
    if (typeof userId !== 'string') return reply.code(401).send({ message: 'no user' })
    const after = Number((request.query as { replayAfterMs?: string }).replayAfterMs ?? 0)
    reply.hijack()
    const stream = app.sse.open(reply.raw, { userId, replayFirst: true })
    if (stream === undefined) return
    setTimeout(() => { app.sse.replay(stream, { type: 'userMetadataChanged', session: { userId, metadata: {} }, sync: null }) }, after)
  })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { app, url: `${address}/stream`, logs }
}
