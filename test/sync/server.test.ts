// sync/server.ts as a process: it listens on sync.port, answers, and shuts down cleanly on SIGTERM.
import { test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { databaseUri, startDatabase, testConfig, freePort } from './helper.js'

test('the Sync server listens on sync.port and closes on SIGTERM', async (t) => {
  const server = await startDatabase(t)
  const port = await freePort()
  const dir = await mkdtemp(join(tmpdir(), 'sync-server-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'config.yaml')
  const config = testConfig(databaseUri(server, 'sync_server_test'), { port, execution: 'active' })
  await writeFile(file, stringify({ ...config, runtime: { ...config.runtime, logLevel: 'warn' } }))

  const child = spawn(process.execPath, ['--import', 'tsx', 'sync/server.ts', '--config', file], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: { ...process.env, HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })

  // Wait for the port to answer (start-up time varies with the machine; nothing here is timed).
  let ready: Response | undefined
  while (!ready && child.exitCode === null) {
    ready = await fetch(`http://127.0.0.1:${port}/health/ready`).catch(async () => {
      await new Promise((resolve) => setTimeout(resolve, 100))
      return undefined
    })
  }
  t.equal(ready?.status, 200, output)
  t.match(await ready?.json(), { status: 'ok' })
  const unsigned = await fetch(`http://127.0.0.1:${port}/internal/changes?userId=aaaaaaaaaaaaaaaaaaaaaaaa`)
  t.equal(unsigned.status, 401)

  child.kill('SIGTERM')
  t.equal(await exited, 0, 'graceful shutdown')
})
