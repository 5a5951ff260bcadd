import { test } from 'tap'
import type { Test } from 'tap'
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { READ_DEADLINE_MS, SyncClient, SyncRequestError, SyncUnavailableError } from '../../clients/sync.js'
import { verifyInternalRequest } from '../../lib/internal-auth.js'
import Fastify from 'fastify'
import configPlugin from '../../plugins/external/config.js'
import syncClientPlugin from '../../plugins/app/sync-client.js'
import type { Config } from '../../schemas/config.js'

const secret = 'client-test-secret-0123456789'
const userId = '64b7f0c2a1b2c3d4e5f60718'

interface Seen { method: string, url: string, body: string, verified: ReturnType<typeof verifyInternalRequest> }
type Answer = (seen: Seen, res: ServerResponse) => void

async function startFake (t: Test, answer: Answer, prefix = '') {
  const seen: Seen[] = []
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString()
      const url = req.url ?? ''
      const entry = {
        method: req.method ?? '',
        url,
        body,
        verified: verifyInternalRequest({ secret, method: req.method ?? '', path: url, body, headers: req.headers }, Date.now())
      }
      seen.push(entry)
      answer(entry, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const baseUrl = `http://127.0.0.1:${port}${prefix}`
  const client = new SyncClient({ baseUrl, internalAuthToken: secret })
  t.teardown(async () => {
    await client.close()
    await new Promise((resolve) => server.close(resolve))
  })
  return { client, seen, baseUrl }
}

function json (res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

const page = { userId, cursor: 'c1', invalidations: [{ kind: 'event', at: '2026-11-21T09:00:00.000Z', eventId: 'e1' }], hasMore: false, resyncRequired: false }

test('requests are signed over the prefixed path, query and body, and answers are typed', async (t) => {
  const { client, seen } = await startFake(t, (entry, res) => {
    if (entry.url.startsWith('/sync/internal/changes/batch')) return json(res, 200, { pages: [page] })
    if (entry.url.startsWith('/sync/internal/changes')) return json(res, 200, page)
    json(res, 202, { duplicate: false, providerWriteQueued: true })
  }, '/sync')

  t.same(await client.changes(userId, 'abc', { limit: 5 }), page)
  t.same(await client.changes(userId, null), page)
  t.same(await client.changesBatch([{ userId, cursor: null }]), [page])
  const report = { userId, eventId: 'e1', operation: 'update' as const, idempotencyKey: 'key-00000001' }
  t.same(await client.reportEventChange(report), { duplicate: false, providerWriteQueued: true })

  t.equal(seen[0]?.url, `/sync/internal/changes?userId=${userId}&cursor=abc&limit=5`)
  t.equal(seen[1]?.url, `/sync/internal/changes?userId=${userId}`, 'a null cursor is left out')
  t.same(JSON.parse(seen[2]?.body ?? ''), { users: [{ userId, cursor: null }] })
  t.same(JSON.parse(seen[3]?.body ?? ''), report)
  t.same(seen.map((entry) => entry.verified), [
    { ok: true, userId }, { ok: true, userId }, { ok: true, userId: null }, { ok: true, userId }
  ], 'the server side of the scheme accepts every request with its acting user')
})

test('typed refusals become SyncRequestError with status and code', async (t) => {
  const { client } = await startFake(t, (entry, res) => {
    if (entry.url.includes('event-changes')) {
      return json(res, 410, { statusCode: 410, code: 'CONNECTION_REVOKED', error: 'Gone', message: 'revoked', connectionId: 'aaaaaaaaaaaaaaaaaaaaaaaa' })
    }
    if (entry.url.includes('begin')) {
      return json(res, 503, { statusCode: 503, code: 'MAINTENANCE', error: 'Service Unavailable', message: 'maintenance' })
    }
    json(res, 404, { message: 'no such route' })
  })

  const revoked = await client.reportEventChange({ userId, eventId: 'e1', operation: 'delete', idempotencyKey: 'key-00000002' })
    .catch((error: unknown) => error)
  t.ok(revoked instanceof SyncRequestError)
  t.match(revoked, { statusCode: 410, code: 'CONNECTION_REVOKED', connectionId: 'aaaaaaaaaaaaaaaaaaaaaaaa' })

  const maintenance = await client.beginConnection(userId, { provider: 'google', intent: 'connect' }).catch((error: unknown) => error)
  t.ok(maintenance instanceof SyncRequestError, 'MAINTENANCE is a deliberate refusal, not an outage')
  t.match(maintenance, { statusCode: 503, code: 'MAINTENANCE' })

  const untyped = await client.metadata(userId).catch((error: unknown) => error)
  t.ok(untyped instanceof SyncRequestError)
  t.match(untyped, { statusCode: 404, code: 'UNEXPECTED_RESPONSE' })
})

test('5xx, bodies outside the contract and network failures become SyncUnavailableError', async (t) => {
  const { client } = await startFake(t, (entry, res) => {
    if (entry.url.includes('metadata')) return json(res, 500, { statusCode: 500, code: 'INTERNAL', error: 'Internal Server Error', message: 'x' })
    if (entry.url.includes('restart')) return json(res, 200, { queued: 'three' })
    res.writeHead(502)
    res.end('bad gateway')
  })
  const failed = await client.metadata(userId).catch((error: unknown) => error)
  t.ok(failed instanceof SyncUnavailableError)
  t.match(failed, { statusCode: 500, code: 'INTERNAL' })
  const offContract = await client.restartSync(userId).catch((error: unknown) => error)
  t.ok(offContract instanceof SyncUnavailableError)
  t.match(offContract, { statusCode: 200 })
  const gateway = await client.stopWatches(userId).catch((error: unknown) => error)
  t.ok(gateway instanceof SyncUnavailableError)
  t.match(gateway, { statusCode: 502 })

  const closedPort = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
  const unreachable = new SyncClient({ baseUrl: `http://127.0.0.1:${closedPort}`, internalAuthToken: secret })
  t.teardown(() => unreachable.close())
  const refused = await unreachable.changes(userId, null).catch((error: unknown) => error)
  t.ok(refused instanceof SyncUnavailableError)
  t.match(refused, { statusCode: null })
  t.ok((refused as Error).cause, 'the network error is kept as the cause')
})

test('a Sync that hangs: the reads a person waits on give up at the read deadline, a report keeps the longer limit', async (t) => {
  const held: ServerResponse[] = []
  const { baseUrl } = await startFake(t, (_entry, res) => { held.push(res) })
  t.teardown(() => { for (const res of held) if (!res.writableEnded) res.destroy() })
  t.ok(READ_DEADLINE_MS < 10_000, 'the default read deadline is below the default limit')
  const client = new SyncClient({ baseUrl, internalAuthToken: secret, timeoutMs: 60_000, readTimeoutMs: 300 })
  t.teardown(() => client.close())
  for (const [what, read] of [['calendars', async () => await client.calendars(userId)], ['sync status', async () => await client.metadata(userId)]] as const) {
    const failed = await read().catch((error: unknown) => error)
    t.ok(failed instanceof SyncUnavailableError, `${what}: SyncUnavailableError, the route's 503`)
    t.match(failed, { statusCode: null })
  }
  const report = client.reportEventChange({ userId, eventId: 'e1', operation: 'delete', idempotencyKey: 'key-00000009' })
  const early = await Promise.race([
    report.then(() => 'answered', () => 'failed'),
    new Promise((resolve) => setTimeout(() => resolve('still waiting'), 1000))
  ])
  t.equal(early, 'still waiting', 'a report is not given up at the read deadline')
  const last = held.at(-1)
  if (last !== undefined) json(last, 202, { duplicate: false, providerWriteQueued: false })
  t.same(await report, { duplicate: false, providerWriteQueued: false }, 'and is answered when Sync answers')
})

test('the sync-client plugin builds fastify.syncClient from the configuration and closes its pool with the server', async (t) => {
  const { seen, baseUrl } = await startFake(t, (_entry, res) => json(res, 200, { stopped: 0 }))
  const app = Fastify()
  // The plugin reads only these two keys; the rest of a backend configuration is irrelevant here.
  const config = { sync: { serviceUrl: baseUrl, internalAuthToken: secret } } as unknown as Config
  await app.register(configPlugin, { config })
  await app.register(syncClientPlugin)
  await app.ready()
  t.same(await app.syncClient.stopWatches(userId), { stopped: 0 })
  t.same(seen[0]?.verified, { ok: true, userId }, 'signed with sync.internalAuthToken')
  await app.close()
  const afterClose = await app.syncClient.stopWatches(userId).catch((error: unknown) => error)
  t.ok(afterClose instanceof SyncUnavailableError, 'the pool is closed with the server')
  t.equal(seen.length, 1)
})
