import { createServer } from 'node:http'
import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import { stringify } from 'yaml'
import { MongoClient } from 'mongodb'
import { authFields, buildApp, freePort, startDependencies, testConfig, uniqueEmail } from '../helper.js'
import { fetchPatiently, startScript, waitFor, waitUntil, writeTempFile } from '../processes.js'
import { startSyncService } from './sync-service.js'
import { OUTBOX_LEASES_COLLECTION } from '../../stores/outbox.js'
import { decodeJwt } from 'jose'

// A backend process killed (kill -9) while it delivers a report holds that user's outbox lease;
// a restarted backend must take the report over within seconds, not after a long lease.
test('a backend killed mid-delivery: the restarted one delivers the report within a few seconds', { timeout: 90_000 }, async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const sync = await startSyncService(t, deps.databaseUri(`sync_${randomBytes(4).toString('hex')}`))

  // Where the first process sends its reports: a server that takes each request and never answers,
  // so the delivery is in flight when the process dies.
  const inFlight: string[] = []
  const silent = createServer((request) => { inFlight.push(request.url ?? '') })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { silent.closeAllConnections(); silent.close() })
  const silentPort = (silent.address() as { port: number }).port

  const config = testConfig(deps, { syncUrl: `http://127.0.0.1:${silentPort}`, internalAuthToken: sync.internalAuthToken })
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const path = await writeTempFile('config.yaml', stringify({ ...config, backend: { ...config.backend, port } }))
  const first = startScript(t, 'server.ts', ['--config', path])
  const healthy = await waitFor(() => fetch(`${base}/api/health`).then((response) => response.ok, () => false), 30_000, () => first.child.exitCode !== null)
  t.ok(healthy, `the first backend started: ${healthy ? '' : first.output()}`)

  const signUp = await fetchPatiently(`${base}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', rid: 'emailpassword', 'sx-auth-mode': 'header' },
    body: JSON.stringify(authFields({ name: 'Crash', email: uniqueEmail('crash'), password: 'pw-for-crash-1' }))
  })
  t.equal(signUp.status, 200, `signed up${signUp.status === 200 ? '' : `: ${await signUp.clone().text()}`}`)
  const accessToken = signUp.headers.get('sx-access-token') ?? ''
  const userId = (decodeJwt(accessToken) as { sub: string }).sub
  const write = await fetch(`${base}/api/event`, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ _id: randomBytes(12).toString('hex'), title: 'Run', startDate: '2026-05-01T07:00:00Z', endDate: '2026-05-01T08:00:00Z' })
  })
  t.equal(write.status, 204)
  await waitUntil(() => inFlight.length > 0, 'the report to be in flight', 15_000)

  const reader = new MongoClient(deps.mongoUri)
  await reader.connect()
  t.teardown(() => reader.close())
  const leases = reader.db(new URL(config.database.uri).pathname.slice(1)).collection(OUTBOX_LEASES_COLLECTION)
  t.equal(await leases.countDocuments({ _id: userId as never }), 1, 'the first process holds the user\'s lease')
  first.child.kill('SIGKILL')
  await first.exited
  const crashedAt = Date.now()

  // The restart, with Sync reachable.
  const second = await buildApp(t, deps, {}, () => ({ ...config, sync: { ...config.sync, serviceUrl: sync.url } }))
  t.ok(second.app.outbox, 'the second backend runs')
  await waitUntil(async () => (await sync.reports(userId)).length === 1, 'the report to reach Sync', 45_000)
  const took = Date.now() - crashedAt
  // The lease (5 s) lapses and the next sweep (every 2 s) takes the report over; 30-60 s before.
  t.ok(took < 10_000, `the report reached Sync ${took} ms after the crash`)
})
