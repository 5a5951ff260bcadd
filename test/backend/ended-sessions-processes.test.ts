// Two real backend processes over one database and one session core, as behind a load balancer:
// a sign-out served by one ends the session on the other within a few seconds, REST and stream.
import { test } from 'tap'
import { stringify } from 'yaml'
import { authFields, freePort, startDependencies, testConfig, uniqueEmail } from '../helper.js'
import { fetchPatiently, startScript, waitFor, writeTempFile } from '../processes.js'
import { RawSseReader } from '../realtime/sse-reader.js'

test('sign-out through process A: process B refuses the access token and closes its stream within a few seconds', { timeout: 120_000 }, async (t) => {
  const deps = await startDependencies(t)
  const shared = testConfig(deps, { apiDatabase: `calendar_two_processes_${Date.now()}` })
  const bases: string[] = []
  for (const name of ['a', 'b']) {
    const port = await freePort()
    const path = await writeTempFile(`config-${name}.yaml`, stringify({ ...shared, backend: { ...shared.backend, port } }))
    const server = startScript(t, 'server.ts', ['--config', path])
    const base = `http://127.0.0.1:${port}`
    const healthy = await waitFor(() => fetch(`${base}/api/health`).then((response) => response.ok, () => false), 30_000, () => server.child.exitCode !== null)
    t.ok(healthy, `process ${name} answers its health check`)
    if (!healthy) t.comment(server.output())
    bases.push(base)
  }
  const [a, b] = bases as [string, string]

  // Each process has just started on a machine busy with other tests: a shed request is tried
  // again, as a client does, except where the test measures how soon B refuses.
  const signedUp = await fetchPatiently(`${a}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', rid: 'emailpassword' },
    body: JSON.stringify(authFields({ name: 'Two', email: uniqueEmail('two-processes'), password: 'pw-for-two-processes-1' }))
  })
  t.equal(signedUp.status, 200)
  const headers = { authorization: `Bearer ${String(signedUp.headers.get('sx-access-token'))}` }
  const profileOnB = async () => (await fetch(`${b}/api/user/profile`, { headers })).status
  t.equal((await fetchPatiently(`${b}/api/user/profile`, { headers })).status, 200, 'the access token works on B')
  const stream = await RawSseReader.openPatiently(`${b}/api/events/stream`, headers)
  t.teardown(() => stream.close())
  t.equal(stream.status, 200, 'a stream is open on B')
  await stream.until((reader) => reader.text.startsWith('retry:'))

  const signedOut = await fetchPatiently(`${a}/api/auth/signout`, { method: 'POST', headers: { ...headers, 'sx-auth-mode': 'header', rid: 'session' } })
  t.equal(signedOut.status, 200, 'signed out through A')
  const started = Date.now()
  t.ok(await waitFor(async () => await profileOnB() === 401, 5000), 'B refuses the access token')
  const refusedAfter = Date.now() - started
  await stream.untilEnded(5000)
  const closedAfter = Date.now() - started
  t.ok(stream.ended, 'B closed the stream opened with the session')
  t.comment(`B refused the token ${refusedAfter} ms and closed the stream ${closedAfter} ms after the sign-out through A`)
  const reopened = await RawSseReader.openPatiently(`${b}/api/events/stream`, headers)
  t.teardown(() => reopened.close())
  t.equal(reopened.status, 401, 'B opens no new stream with it')
})
