import { test } from 'tap'
import { stringify } from 'yaml'
import { freePort, startDependencies, testConfig } from '../helper.js'
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
