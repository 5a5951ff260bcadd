import { test } from 'tap'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../helper.js'
import { startScript, waitFor } from '../processes.js'

// `npm start` with no configuration, as a newcomer runs it: the whole stack comes up, the health
// endpoint answers 200, a user can sign up, and Ctrl-C stops everything with status 0.
test('npm start brings up the local stack', { timeout: 90_000 }, async (t) => {
  const ports = { mongo: await freePort(), core: await freePort(), sync: await freePort(), backend: await freePort() }
  const dataDir = await mkdtemp(join(tmpdir(), 'calendar-stack-'))
  const env = {
    DEV_DATA_DIR: dataDir,
    DEV_MONGO_PORT: String(ports.mongo),
    DEV_SESSION_CORE_PORT: String(ports.core),
    DEV_SYNC_PORT: String(ports.sync),
    DEV_BACKEND_PORT: String(ports.backend),
    LOG_LEVEL: 'warn'
  }
  const api = `http://127.0.0.1:${ports.backend}/api`
  const credentials = { formFields: [{ id: 'email', value: 'newcomer@example.com' }, { id: 'password', value: 'first-try-pw-1' }] }
  const authenticate = async (path: 'signup' | 'signin') => await fetch(`${api}/auth/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header' },
    body: JSON.stringify(credentials)
  })

  const stack = startScript(t, 'dev/start.ts', [], env)
  await waitFor(() => stack.output().includes('Local stack is up'), 60_000, () => stack.child.exitCode !== null)
  t.match(stack.output(), 'Local stack is up', 'the stack reports its URLs')
  t.match(stack.output(), `http://localhost:${ports.backend}/api`)

  const health = await fetch(`${api}/health`)
  t.equal(health.status, 200)
  t.equal((await health.json() as { status: string }).status, 'ok')

  const signUp = await authenticate('signup')
  t.equal(signUp.status, 200)
  t.equal((await signUp.json() as { status: string }).status, 'OK')
  t.ok(signUp.headers.get('sx-access-token'), 'a session was issued through the whole stack')

  stack.child.kill('SIGINT')
  t.equal(await stack.exited, 0, 'Ctrl-C stops everything cleanly')

  // The same data directory: the account is still there.
  const again = startScript(t, 'dev/start.ts', [], env)
  await waitFor(() => again.output().includes('Local stack is up'), 60_000, () => again.child.exitCode !== null)
  const signIn = await authenticate('signin')
  t.equal((await signIn.json() as { status: string }).status, 'OK', 'the account survived the restart')
  again.child.kill('SIGINT')
  t.equal(await again.exited, 0)
})
