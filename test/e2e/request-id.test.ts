// One request id from the browser to the provider: the backend names each request (or keeps the id
// a client sent) and answers it in X-Request-Id; a write's report goes to Sync, through the outbox,
// with that id; Sync's request, the job it queues and the job's work log it, and the pages Sync
// hands back to the backend carry it. One grep of both logs follows the write.
import { PassThrough } from 'node:stream'
import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { connectGoogle, primaryCalendarId, startFullStack, userWithGoogleAccount } from './stack.js'

/** Log lines of a pino stream, parsed as they come. */
function captured (): { stream: PassThrough, lines: () => Array<Record<string, unknown>> } {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk: Buffer) => { text += chunk.toString() })
  return { stream, lines: () => text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>) }
}

test('a write\'s request id, from the backend through Sync\'s request and job to Google and back', async (t) => {
  const syncLog = captured()
  const stack = await startFullStack(t, { syncLog: { stream: syncLog.stream, level: 'debug' } })
  const app = stack.backend.app
  const user = await userWithGoogleAccount(stack, 'trace')
  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)
  const calendarId = await primaryCalendarId(app, user.headers, 'google')

  // A request without an id gets one of its own; one with a well-formed id keeps it; another is replaced.
  const plain = await app.inject({ method: 'GET', url: '/api/health' })
  const again = await app.inject({ method: 'GET', url: '/api/health' })
  t.match(plain.headers['x-request-id'], /^[A-Za-z0-9_-]{16}$/, 'a fresh id, unique across processes')
  t.not(plain.headers['x-request-id'], again.headers['x-request-id'], 'one per request')
  t.equal((await app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'a b c' } })).headers['x-request-id']?.toString().includes(' '), false, 'an id with spaces is not taken')
  t.equal((await app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'x'.repeat(65) } })).headers['x-request-id']?.toString().length, 16, 'nor one too long')

  const traceId = 'support-trace-0001'
  const written = await app.inject({
    method: 'POST',
    url: '/api/event',
    headers: { ...user.headers, 'x-request-id': traceId },
    payload: { title: 'Traced dentist', calendarId, startDate: '2026-12-03T10:00:00Z', endDate: '2026-12-03T11:00:00Z' }
  })
  t.equal(written.statusCode, 204, written.body)
  t.equal(written.headers['x-request-id'], traceId, 'the answer names the request')
  await waitUntil(() => stack.google.control.storedEvents(user.email).some((event) => event['summary'] === 'Traced dentist'), 'the event at Google', 20_000)

  const backendLines = stack.backend.log.lines().filter((line) => line['reqId'] === traceId)
  t.ok(backendLines.some((line) => (line['req'] as { url?: string } | undefined)?.url === '/api/event'), 'the backend logged the write under the id')
  await waitUntil(() => syncLog.lines().some((line) => line['requestId'] === traceId && line['msg'] === 'job done'), 'Sync\'s job done under the id', 20_000)
  const syncLines = syncLog.lines()
  t.ok(syncLines.some((line) => line['reqId'] === traceId), 'Sync\'s request that took the report carries the id')
  t.ok(syncLines.some((line) => line['requestId'] === traceId && line['type'] === 'providerWrite'), 'and so does the provider write it queued')
  // The write's answer from Google is handed back to the backend (the provider's id and version) under the same id.
  await waitUntil(() => stack.backend.log.lines().some((line) => line['reqId'] === traceId && String((line['req'] as { url?: string } | undefined)?.url ?? '').startsWith('/api/internal/')), 'the backend\'s internal route under the id', 20_000)
  t.pass('the page Sync handed back to the backend carries the id')
})
