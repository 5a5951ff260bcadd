// What an operator's Prometheus reads from both services after a scripted day: a sign-up, writes,
// an open stream, a Google connect and its import, then Google answering 503 for a while. Each
// figure the operations guide names is there with the value the day implies, on each service's
// internal port, which listens on 127.0.0.1 only and carries no user's id, address or event.
import { readFileSync } from 'node:fs'
import { networkInterfaces } from 'node:os'
import { connect } from 'node:net'
import { test } from 'tap'
import { RawSseReader } from '../realtime/sse-reader.js'
import { waitUntil } from '../processes.js'
import { metricValue, scrape, type Sample } from '../metrics-text.js'
import { connectGoogle, primaryCalendarId, startFullStack, userWithGoogleAccount } from './stack.js'

/** Whether a TCP connection to host:port is refused (nothing listens there for that address). */
async function refused (host: string, port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect({ host, port })
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => { resolve(true) })
  })
}

test('both services\' figures after a day of use, on internal ports only', async (t) => {
  const stack = await startFullStack(t, { metrics: true })
  const app = stack.backend.app
  const backendPort = app.metricsPort
  const syncPort = stack.sync.metricsPort
  if (backendPort === null || syncPort === null) throw new Error('the internal ports are not served')
  const backendFigures = async (): Promise<Sample[]> => (await scrape(backendPort)).samples
  const syncFigures = async (): Promise<Sample[]> => (await scrape(syncPort)).samples

  await t.test('the internal port: liveness, readiness, and nothing public', async (t) => {
    for (const port of [backendPort, syncPort]) {
      t.equal((await fetch(`http://127.0.0.1:${port}/live`)).status, 200, 'live')
      t.equal((await fetch(`http://127.0.0.1:${port}/ready`)).status, 200, 'ready: started, database answering')
      t.equal((await fetch(`http://127.0.0.1:${port}/api/health`)).status, 404, 'no public route there')
      t.equal((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status, 405, 'read only')
      const outside = Object.values(networkInterfaces()).flat().find((address) => address !== undefined && !address.internal && address.family === 'IPv4')
      if (outside !== undefined) t.ok(await refused(outside.address, port), `refused on ${outside.address}, this host's own outside address`)
    }
    t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404, 'the public port has no /metrics')
    t.equal((await app.inject({ method: 'GET', url: '/api/metrics' })).statusCode, 404, 'nor /api/metrics')
    const { types, samples } = await scrape(backendPort)
    t.equal(metricValue(samples, 'calendar_build_info', { service: 'backend' }), 1, 'the build, labelled with its service')
    t.match(samples.find((sample) => sample.name === 'calendar_build_info')?.labels, { version: /^\d+\.\d+\.\d+/, image: 'latest' })
    for (const name of ['nodejs_eventloop_lag_p99_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_active_handles_total', 'process_resident_memory_bytes']) {
      t.ok(types.has(name), `${name}: the process's own`)
    }
    t.equal(metricValue(await syncFigures(), 'calendar_build_info', { service: 'sync' }), 1)
  }).catch(t.threw)

  const user = await userWithGoogleAccount(stack, 'metrics')
  const headers = user.headers
  const stream = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: headers.authorization ?? '' })
  t.teardown(() => stream.close())
  await stream.untilMessages(1, 10_000)

  await t.test('requests by route pattern, method and status; an open stream; the database and the session core timed', async (t) => {
    const id = 'c'.repeat(24)
    for (let index = 0; index < 3; index++) {
      const created = await app.inject({ method: 'POST', url: '/api/event', headers, payload: { ...(index === 0 ? { _id: id } : {}), title: `Standup ${index}`, startDate: `2026-12-0${index + 1}T09:00:00Z`, endDate: `2026-12-0${index + 1}T09:15:00Z` } })
      t.equal(created.statusCode, 204)
    }
    t.equal((await app.inject({ method: 'PUT', url: `/api/event/${id}`, headers, payload: { title: 'Standup moved', startDate: '2026-12-01T10:00:00Z', endDate: '2026-12-01T10:15:00Z' } })).statusCode, 204)
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers, payload: { title: '' } })).statusCode, 400)
    const figures = await backendFigures()
    t.equal(metricValue(figures, 'http_requests_total', { route: '/api/event', method: 'POST', status: '204' }), 3, 'three creates')
    t.equal(metricValue(figures, 'http_requests_total', { route: '/api/event', method: 'POST', status: '400' }), 1, 'one refused')
    t.equal(metricValue(figures, 'http_requests_total', { route: '/api/event/:id', method: 'PUT', status: '204' }), 1, 'the edit, under its pattern, not its id')
    t.equal(metricValue(figures, 'http_request_duration_seconds_count', { route: '/api/event', method: 'POST' }), 4, 'each timed')
    t.equal(metricValue(figures, 'event_streams_open'), 1, 'the open stream')
    t.equal(metricValue(figures, 'event_stream_users'), 1)
    t.equal(metricValue(figures, 'http_request_duration_seconds_count', { route: '/api/events/stream' }), undefined, 'a stream\'s length is no latency')
    t.ok((metricValue(figures, 'db_command_duration_seconds_count', { command: 'insert' }) ?? 0) >= 3, 'the database\'s inserts timed')
    t.ok((metricValue(figures, 'session_core_request_duration_seconds_count') ?? 0) >= 1, 'the session core\'s calls timed (the sign-up and sign-in)')
    t.equal(metricValue(figures, 'session_core_request_failures_total') ?? 0, 0, 'none failed')
    t.equal(metricValue(figures, 'http_requests_shed_total'), 0, 'nothing shed')
    t.equal(metricValue(figures, 'outbox_depth') !== undefined, true, 'the outbox\'s depth is there')
  }).catch(t.threw)

  await t.test('a Google connect and its import, through Sync\'s queue and its feed to the stream', async (t) => {
    t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
    await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)
    const calendarId = await primaryCalendarId(app, headers, 'google')
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers, payload: { calendarId, title: 'Dentist', startDate: '2026-12-04T10:00:00Z', endDate: '2026-12-04T11:00:00Z' } })).statusCode, 204)
    await waitUntil(() => stack.google.control.storedEvents(user.email).some((event) => event['summary'] === 'Dentist'), 'the event at Google', 20_000)
    await waitUntil(async () => (metricValue(await syncFigures(), 'sync_job_runs_total', { type: 'providerWrite', outcome: 'done' }) ?? 0) >= 1, 'the write counted', 20_000)
    await waitUntil(async () => metricValue(await backendFigures(), 'outbox_depth') === 0, 'the outbox drained', 20_000)

    const sync = await syncFigures()
    t.equal(metricValue(sync, 'sync_job_runs_total', { type: 'import', outcome: 'done' }), 1, 'one import, done')
    t.equal(metricValue(sync, 'sync_job_duration_seconds_count', { type: 'import' }), 1, 'and timed')
    t.ok((metricValue(sync, 'sync_provider_requests_total', { provider: 'google', operation: 'GET events', status: '200' }) ?? 0) >= 1, 'Google\'s event pages read')
    t.ok((metricValue(sync, 'sync_provider_requests_total', { provider: 'google', operation: 'POST events', status: '200' }) ?? 0) >= 1, 'the write sent to Google')
    t.ok((metricValue(sync, 'sync_provider_request_duration_seconds_count', { provider: 'google' }) ?? 0) >= 2, 'each timed')
    t.equal(metricValue(sync, 'sync_connections', { provider: 'google', state: 'healthy' }), 1, 'one healthy Google connection')
    t.equal(metricValue(sync, 'sync_connections', { provider: 'microsoft', state: 'healthy' }), 0, 'every known state shown, 0 where none')
    t.equal(metricValue(sync, 'sync_jobs', { type: 'providerWrite', status: 'running' }), 0)
    const waited = metricValue(sync, 'sync_job_queue_oldest_due_age_seconds') ?? Infinity
    t.ok(waited < 5, `no due job waits long for a worker (the oldest: ${waited} s)`)
    t.equal(metricValue(sync, 'sync_watches_expiring_soon'), 0, 'the new watch channel lives longer than a day')
    t.equal(metricValue(sync, 'sync_held_writes'), 0)
    t.ok((metricValue(sync, 'db_command_duration_seconds_count', { command: 'find' }) ?? 0) >= 1, 'Sync\'s database timed too')
    t.ok((metricValue(sync, 'http_requests_total', { route: '/internal/changes/batch', method: 'POST', status: '200' }) ?? 0) >= 1, 'Sync\'s own requests by route')

    const backend = await backendFigures()
    t.ok((metricValue(backend, 'change_feed_reads_total', { outcome: 'ok' }) ?? 0) >= 1, 'the backend reads the feed')
    const lag = metricValue(backend, 'change_feed_lag_seconds_count') ?? 0
    t.ok(lag >= 1, `${lag} changes from the feed reached the stream, each with its lag`)
    t.ok((metricValue(backend, 'change_feed_lag_seconds_sum') ?? Infinity) / lag < 5, 'within seconds each')
  }).catch(t.threw)

  await t.test('Google answers 503: the provider\'s refusals counted apart, the job waits for it', async (t) => {
    const faults = async (method: 'POST' | 'DELETE', body?: Record<string, unknown>): Promise<void> => {
      const answer = await fetch(`${stack.google.url}/_control/faults`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) })
      if (!answer.ok) throw new Error(`the fault control answered ${answer.status}`)
    }
    await faults('POST', { pathPrefix: '/calendar/v3/', status: 503, count: 100_000 })
    t.teardown(async () => { await faults('DELETE') })
    const calendarId = await primaryCalendarId(app, headers, 'google')
    t.equal((await app.inject({ method: 'POST', url: '/api/event', headers, payload: { calendarId, title: 'During the outage', startDate: '2026-12-05T10:00:00Z', endDate: '2026-12-05T11:00:00Z' } })).statusCode, 204)
    await waitUntil(async () => (metricValue(await syncFigures(), 'sync_job_runs_total', { type: 'providerWrite', outcome: 'waiting' }) ?? 0) >= 1, 'the write waits for Google', 20_000)
    const sync = await syncFigures()
    t.ok((metricValue(sync, 'sync_provider_requests_total', { provider: 'google', status: '503' }) ?? 0) >= 1, '503s counted by status')
    t.equal(metricValue(sync, 'sync_jobs', { type: 'providerWrite', status: 'queued' }), 1, 'the write queued again')
    t.equal(metricValue(sync, 'sync_connections', { provider: 'google', state: 'delayed' }), 1, 'the connection delayed')
    t.equal(metricValue(sync, 'sync_job_runs_total', { outcome: 'failed' }) ?? 0, 0, 'no job spent its attempts')
    t.equal(metricValue(sync, 'sync_sweep_jobs_total', { action: 'exhausted' }), 0, 'none exhausted by the sweep, shown as 0')
  }).catch(t.threw)

  await t.test('a refused maintenance call is counted', async (t) => {
    const refused = await stack.sync.inject({ method: 'POST', url: '/maintenance', headers: { authorization: 'Bearer not-a-token' } })
    t.equal(refused.statusCode, 401)
    const sync = await syncFigures()
    t.equal(metricValue(sync, 'sync_maintenance_runs_total', { outcome: 'refused' }), 1)
    t.equal(metricValue(sync, 'sync_maintenance_runs_total', { outcome: 'done' }), 0, 'every outcome shown from the start, so an alert on none done can see 0')
  }).catch(t.threw)

  await t.test('every figure the alerts and the dashboard read is one the services serve', async (t) => {
    const served = new Set([...(await scrape(backendPort)).types.keys(), ...(await scrape(syncPort)).types.keys(), 'up'])
    // Served only with the email or billing block, which this stack has not: their own tests read them.
    const withOptionalBlocks = new Set(['email_sends', 'billing_webhooks_total'])
    const expressions = [
      ...[...readFileSync(new URL('../../monitoring/alerts.yml', import.meta.url), 'utf8').matchAll(/expr: (?:\|\n)?([\s\S]*?)\n {8}(?:for|labels):/g)].map((match) => match[1] ?? ''),
      ...(JSON.parse(readFileSync(new URL('../../monitoring/grafana/dashboards/calendar.json', import.meta.url), 'utf8')) as { panels: Array<{ targets?: Array<{ expr: string }> }> })
        .panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr))
    ]
    t.ok(expressions.length > 30, `${expressions.length} expressions`)
    const names = new Set(expressions.flatMap((expr) => [...expr.replace(/"[^"]*"/g, '').matchAll(/\b([a-z][a-z0-9_]*)\s*(?=[{[)\s]|$)/g)].map((match) => match[1] ?? ''))
      .filter((name) => name.includes('_') && name !== 'histogram_quantile')
      .map((name) => name.replace(/_(bucket|sum|count)$/, '')))
    t.ok(names.size >= 20, `${names.size} figures named`)
    for (const name of names) {
      if (withOptionalBlocks.has(name)) continue
      t.ok(served.has(name), `${name} is served`)
    }
  }).catch(t.threw)

  await t.test('labels stay bounded: no user, address, calendar or event in either text', async (t) => {
    const texts = [(await scrape(backendPort)).text, (await scrape(syncPort)).text]
    for (const text of texts) {
      for (const secret of [user.userId, user.email, 'c'.repeat(24), await primaryCalendarId(app, headers, 'google'), stack.google.url]) {
        t.notOk(text.includes(secret), `${secret.slice(0, 12)}... appears nowhere`)
      }
    }
  }).catch(t.threw)
})
