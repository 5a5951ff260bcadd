import { test, type Test } from 'tap'
import { startScript, writeTempFile } from '../processes.js'
import { exampleWith } from './fixtures.js'

async function runServer (t: Test, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null, stderr: string }> {
  const server = startScript(t, 'server.ts', args, env)
  const code = await server.exited
  return { code, stderr: server.stderr() }
}

const configFile = (text: string) => writeTempFile('config.yaml', text)
// The example's internal metrics ports are fixed (9464, 9465): a process started here takes free
// ones, so another test's process on those ports cannot make its start fail for the wrong reason.
const FREE_METRICS_PORTS = { 'backend.metricsPort': 0, 'sync.metricsPort': 0 }

const secret = 'super-secret-internal-token-value'
const cases: Array<[string, Record<string, unknown>, RegExp]> = [
  ['without sync.serviceUrl', { 'sync.serviceUrl': undefined }, /^config: sync\.serviceUrl is required$/],
  ['without sync.internalAuthToken', { 'sync.internalAuthToken': undefined }, /^config: sync\.internalAuthToken is required$/],
  ['with only one Google key', { 'extprovider.clientSecret': secret }, /^config: extprovider\.clientId must be set together with the other extprovider key/],
  ['with an incomplete mailer block', { 'email.provider': 'mailer', 'email.apiKey': secret }, /^config: email\.from is required when email\.provider is mailer$/],
  ['with fast email schedule in production', { 'email.provider': 'log', 'email.scheduleProfile': 'fast' }, /^config: email\.scheduleProfile fast is refused/]
]

for (const [name, patch, expected] of cases) {
  test(`the backend process exits 1 ${name}`, async (t) => {
    const path = await configFile(exampleWith({ ...FREE_METRICS_PORTS, ...patch }))
    const { code, stderr } = await runServer(t, ['--config', path])
    t.equal(code, 1)
    const lines = stderr.trim().split('\n')
    t.equal(lines.length, 1, 'one line')
    t.match(lines[0], expected)
    t.notOk(stderr.includes(secret), 'no secret value printed')
  })
}

test('CONFIG_FILE names the file when --config is absent', async (t) => {
  const path = await configFile(exampleWith({ ...FREE_METRICS_PORTS, 'runtime.timezone': 'America/New_York' }))
  const { code, stderr } = await runServer(t, [], { CONFIG_FILE: path })
  t.equal(code, 1)
  t.equal(stderr.trim(), 'config: runtime.timezone must be one of Etc/UTC, UTC')
})

test('a missing configuration file exits 1 with a clear line', async (t) => {
  const { code, stderr } = await runServer(t, ['--config', '/nonexistent/config.yaml'])
  t.equal(code, 1)
  t.equal(stderr.trim(), 'config: cannot read /nonexistent/config.yaml (pass --config FILE or set CONFIG_FILE)')
})

test('an unreachable database stops the backend with status 1 and one line', { timeout: 30_000 }, async (t) => {
  // Development: a production configuration refuses loopback databases before trying them.
  const path = await configFile(exampleWith({ ...FREE_METRICS_PORTS, 'runtime.nodeEnv': 'development', 'database.uri': 'mongodb://127.0.0.1:9/calendar', 'sync.databaseUri': 'mongodb://127.0.0.1:9/sync' }))
  const { code, stderr } = await runServer(t, ['--config', path])
  t.equal(code, 1)
  const lines = stderr.trim().split('\n')
  t.equal(lines.length, 1, 'one line')
  t.match(lines[0], /^startup: .*127\.0\.0\.1:9/)
})
