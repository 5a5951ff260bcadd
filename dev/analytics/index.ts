// A stand-in of PostHog's public capture endpoints, for tests and the local stack: it keeps in
// memory every event posted to it. The shapes are PostHog's documented ones: a single event
// `{api_key, event, distinct_id | properties.distinct_id, properties, timestamp}` on `/capture/` or
// `/i/v0/e/`, and `{api_key, batch: [...]}` on `/batch/` (what posthog-node sends, gzipped or not).
// Browsers post cross-origin, so it answers CORS preflights as the real endpoints do.
import { gunzipSync } from 'node:zlib'
import Fastify from 'fastify'
import { refuseProduction } from '../stand-in/index.js'

interface CapturedEvent {
  apiKey: string | null
  event: string
  distinctId: string | null
  properties: Record<string, unknown>
  receivedAt: string
}

export interface AnalyticsStandIn {
  url: string
  events: () => CapturedEvent[]
  close: () => Promise<void>
}

interface RawEvent { event?: unknown, distinct_id?: unknown, properties?: unknown, api_key?: unknown }

function text (value: unknown): string | null {
  return typeof value === 'string' ? value : null
}

export async function startAnalyticsStandIn (options: { port?: number } = {}): Promise<AnalyticsStandIn> {
  refuseProduction('dev/analytics (PostHog)')
  const received: CapturedEvent[] = []
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 })
  // The body as sent, whatever its content type says (a beacon's Blob, posthog-node's gzip).
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => { done(null, body) })
  app.addHook('onRequest', async (request, reply) => {
    reply.headers({
      'access-control-allow-origin': request.headers.origin ?? '*',
      'access-control-allow-headers': 'content-type',
      'access-control-allow-methods': 'POST, OPTIONS'
    })
  })
  app.options('/*', async (_request, reply) => await reply.code(204).send())

  function keep (raw: RawEvent, apiKey: unknown): void {
    const properties = typeof raw.properties === 'object' && raw.properties !== null ? raw.properties as Record<string, unknown> : {}
    const event = text(raw.event)
    if (event === null) return
    received.push({
      apiKey: text(raw.api_key) ?? text(apiKey),
      event,
      distinctId: text(raw.distinct_id) ?? text(properties['distinct_id']),
      properties,
      receivedAt: new Date().toISOString()
    })
  }

  const capture = async (request: { headers: Record<string, unknown>, body: unknown }, reply: { code: (status: number) => { send: (body: unknown) => unknown } }) => {
    const raw = request.body instanceof Buffer ? request.body : Buffer.alloc(0)
    let body: RawEvent & { batch?: unknown }
    try {
      body = JSON.parse((request.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8')) as RawEvent & { batch?: unknown }
    } catch {
      return reply.code(400).send({ type: 'validation_error', detail: 'the body is not JSON' })
    }
    if (Array.isArray(body.batch)) {
      for (const item of body.batch as RawEvent[]) keep(item, body.api_key)
    } else {
      keep(body, body.api_key)
    }
    return { status: 1 }
  }
  for (const path of ['/capture/', '/capture', '/i/v0/e/', '/i/v0/e', '/batch/', '/batch', '/e/', '/e']) app.post(path, capture)
  app.get('/events.json', async () => received)

  await app.listen({ port: options.port ?? 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    events: () => [...received],
    close: async () => { await app.close() }
  }
}
