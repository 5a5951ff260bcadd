import { test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../helper.js'

const root = new URL('../../', import.meta.url).pathname

// `npm start` with no configuration, as a newcomer runs it: the whole stack comes up, the health
// endpoint answers 200, a user can sign up, and Ctrl-C stops everything with status 0.
test('npm start brings up the local stack', { timeout: 90_000 }, async (t) => {
  const ports = { mongo: await freePort(), core: await freePort(), sync: await freePort(), backend: await freePort() }
  const dataDir = await mkdtemp(join(tmpdir(), 'calendar-stack-'))
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
    cwd: root,
    env: {
      ...process.env,
      CONFIG_FILE: '',
      DEV_DATA_DIR: dataDir,
      DEV_MONGO_PORT: String(ports.mongo),
      DEV_SESSION_CORE_PORT: String(ports.core),
      DEV_SYNC_PORT: String(ports.sync),
      DEV_BACKEND_PORT: String(ports.backend),
      LOG_LEVEL: 'warn'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout.on('data', (chunk) => { output += chunk })
  child.stderr.on('data', (chunk) => { output += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })

  const deadline = Date.now() + 60_000
  while (!output.includes('Local stack is up') && Date.now() < deadline && child.exitCode === null) {
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  t.match(output, 'Local stack is up', 'the stack reports its URLs')
  t.match(output, `http://localhost:${ports.backend}/api`)

  const health = await fetch(`http://127.0.0.1:${ports.backend}/api/health`)
  t.equal(health.status, 200)
  t.equal((await health.json() as { status: string }).status, 'ok')

  const signUp = await fetch(`http://127.0.0.1:${ports.backend}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header' },
    body: JSON.stringify({ formFields: [{ id: 'email', value: 'newcomer@example.com' }, { id: 'password', value: 'first-try-pw-1' }] })
  })
  t.equal(signUp.status, 200)
  t.equal((await signUp.json() as { status: string }).status, 'OK')
  t.ok(signUp.headers.get('sx-access-token'), 'a session was issued through the whole stack')

  child.kill('SIGINT')
  t.equal(await exited, 0, 'Ctrl-C stops everything cleanly')
})
