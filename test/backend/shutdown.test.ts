import { test } from 'tap'
import { stringify } from 'yaml'
import { authFields, freePort, startDependencies, testConfig, uniqueEmail } from '../helper.js'
import { startScript, waitFor, writeTempFile } from '../processes.js'

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal} stops the backend process cleanly with status 0`, { timeout: 60_000 }, async (t) => {
    const deps = await startDependencies(t)
    const config = testConfig(deps, { logLevel: 'info' })
    const port = await freePort()
    const path = await writeTempFile('config.yaml', stringify({ ...config, backend: { ...config.backend, port } }))

    const server = startScript(t, 'server.ts', ['--config', path])
    const healthy = await waitFor(
      () => fetch(`http://127.0.0.1:${port}/api/health`).then((response) => response.ok, () => false),
      20_000,
      () => server.child.exitCode !== null
    )
    t.ok(healthy, 'the server answered its health check')

    server.child.kill(signal)
    t.equal(await server.exited, 0, 'exit status 0')
    t.match(server.output(), `"signal":"${signal}"`, 'the shutdown is logged with its signal')
    const refused = await fetch(`http://127.0.0.1:${port}/api/health`).then(() => false, () => true)
    t.ok(refused, 'the port no longer accepts connections')
  })
}

// close-with-grace's delay in server.ts: past it the process is ended with status 1.
const SHUTDOWN_GRACE_MS = 10_000

test('SIGTERM ends the backend within the shutdown grace while range reads are running', { timeout: 120_000 }, async (t) => {
  const deps = await startDependencies(t)
  const config = testConfig(deps, { logLevel: 'info' })
  const port = await freePort()
  const path = await writeTempFile('config.yaml', stringify({ ...config, backend: { ...config.backend, port } }))
  const server = startScript(t, 'server.ts', ['--config', path])
  const base = `http://127.0.0.1:${port}`
  t.ok(await waitFor(() => fetch(`${base}/api/health`).then((response) => response.ok, () => false), 20_000, () => server.child.exitCode !== null))

  const signedUp = await fetch(`${base}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', rid: 'emailpassword' },
    body: JSON.stringify(authFields({ name: 'Sigterm', email: uniqueEmail('sigterm'), password: 'pw-for-sigterm-1' }))
  })
  t.equal(signedUp.status, 200, 'signed up')
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${signedUp.headers.get('sx-access-token') ?? ''}` }
  const post = async (body: unknown) => (await fetch(`${base}/api/event`, { method: 'POST', headers, body: JSON.stringify(body) })).status
  // The series that used to hold the process for ever, and a hundred that make every read work.
  t.equal(await post({ title: 'x', startDate: '1970-01-01T00:00:00Z', endDate: '1970-01-01T00:00:01Z', recurrence: { rule: ['RRULE:FREQ=SECONDLY'] } }), 400)
  t.equal(await post(Array.from({ length: 100 }, (_, index) => ({ title: `Series ${index}`, startDate: '2026-01-01T00:00:00Z', endDate: '2026-01-01T00:30:00Z', recurrence: { rule: ['RRULE:FREQ=HOURLY'] } }))), 204)

  const reading = { on: true }
  const readers = Array.from({ length: 4 }, async () => {
    while (reading.on) {
      await fetch(`${base}/api/event?start=2026-11-30T00:00:00Z&end=2027-01-04T00:00:00Z`, { headers }).then(async (response) => await response.arrayBuffer(), () => undefined)
    }
  })
  await new Promise((resolve) => setTimeout(resolve, 500))
  const signalled = Date.now()
  server.child.kill('SIGTERM')
  const status = await server.exited
  const tookMs = Date.now() - signalled
  reading.on = false
  await Promise.all(readers)
  t.comment(`exited ${tookMs} ms after SIGTERM`)
  t.equal(status, 0, 'a clean exit, not the grace running out')
  t.ok(tookMs < SHUTDOWN_GRACE_MS, `within the grace (${tookMs} ms)`)
})
