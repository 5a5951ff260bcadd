import { test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { freePort, startDependencies, testConfig } from '../helper.js'

const root = new URL('../../', import.meta.url).pathname

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal} stops the backend process cleanly with status 0`, { timeout: 60_000 }, async (t) => {
    const deps = await startDependencies(t)
    const config = testConfig(deps, { logLevel: 'info' })
    const port = await freePort()
    const dir = await mkdtemp(join(tmpdir(), 'calendar-shutdown-'))
    const path = join(dir, 'config.yaml')
    await writeFile(path, stringify({ ...config, backend: { ...config.backend, port } }))

    const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts', '--config', path], {
      cwd: root,
      env: { ...process.env, CONFIG_FILE: '' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let output = ''
    child.stdout.on('data', (chunk) => { output += chunk })
    child.stderr.on('data', (chunk) => { output += chunk })
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })

    let healthy = false
    for (let attempt = 0; attempt < 200 && !healthy && child.exitCode === null; attempt += 1) {
      healthy = await fetch(`http://127.0.0.1:${port}/api/health`).then((response) => response.ok, () => false)
      if (!healthy) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    t.ok(healthy, 'the server answered its health check')

    child.kill(signal)
    t.equal(await exited, 0, 'exit status 0')
    t.match(output, `"signal":"${signal}"`, 'the shutdown is logged with its signal')
    const refused = await fetch(`http://127.0.0.1:${port}/api/health`).then(() => false, () => true)
    t.ok(refused, 'the port no longer accepts connections')
  })
}
