import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test, type Test } from 'tap'
import type { TSchema } from '@sinclair/typebox'
import { parse, stringify } from 'yaml'
import { parseConfig } from '../../lib/config.js'
import { isKeyPair } from '../../lib/maintenance-token.js'
import { COMPOSE_VARIABLES, composeEnvironment, variableNameOf } from '../../lib/production-config.js'
import { selfHostFindings, syncConfigDocument, syncDatabaseUser } from '../../lib/stack-steps.js'
import { ConfigSchema } from '../../schemas/config.js'
import { startScript, temporaryDirectory, waitUntil } from '../processes.js'

const root = new URL('../../', import.meta.url).pathname

async function freshDir (): Promise<string> {
  return await temporaryDirectory('calendar-setup-')
}

async function setup (t: Test, args: string[]) {
  const run = startScript(t, 'bin/setup.ts', args)
  const code = await run.exited
  return { code, stdout: run.stdout(), stderr: run.stderr() }
}

export function parseEnvFile (text: string): Record<string, string> {
  const entries = text.split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const [name = '', ...rest] = line.split('=')
      const value = rest.join('=')
      return [name, value.startsWith("'") ? value.slice(1, -1) : value] as const
    })
  return Object.fromEntries(entries)
}

/** Every key the configuration schema marks as a secret, dotted. */
function secretKeys (schema: TSchema, prefix = ''): string[] {
  const properties = (schema as { properties?: Record<string, TSchema> }).properties ?? {}
  return Object.entries(properties).flatMap(([name, child]) => {
    const key = prefix === '' ? name : `${prefix}.${name}`
    return (child as { secret?: boolean }).secret === true ? [key] : secretKeys(child, key)
  })
}

function at (document: unknown, key: string): unknown {
  return key.split('.').reduce<unknown>((node, part) => node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined, document)
}

function randomBytesIn (value: string): number {
  if (/^[0-9a-f]+$/.test(value)) return value.length / 2
  return Buffer.from(value, /[+/=]/.test(value) ? 'base64' : 'base64url').length
}

test('setup writes a production configuration both services and the stack accept, with a fresh secret for every secret key', async (t) => {
  const dir = await freshDir()
  const { code, stdout, stderr } = await setup(t, ['--dir', dir, '--web-url', 'https://calendar.example.org/', '--api-url', 'https://calendar.example.org/api', '--version', '1.4.0'])
  t.equal(code, 0, stderr)
  t.match(stdout, /next steps:/)
  t.match(stdout, /docker compose up -d/)
  t.match(stdout, /the welcome mails are off\. To send them through Resend, add an `email` block/)
  t.match(stdout, /a Resend webhook pointed at https:\/\/calendar\.example\.org\/api\/email\/webhooks\/resend\n/, 'the webhook address, built as the backend serves it')
  t.equal(stderr, '')

  const configPath = join(dir, 'config.yaml')
  const text = await readFile(configPath, 'utf8')
  t.equal((await stat(configPath)).mode & 0o777, 0o600, 'config.yaml is readable by its owner only')

  const backend = parseConfig(text, 'backend')
  t.same(backend.warnings, [], 'the backend accepts it without a warning')
  t.same(parseConfig(text, 'sync').warnings, [], 'so does the Sync service')
  t.same(selfHostFindings(backend.config), [], 'and the stack')
  const document = parse(text) as Record<string, unknown>
  const syncCopy = parseConfig(stringify(syncConfigDocument(document, backend.config)), 'sync')
  t.same(syncCopy.warnings, [], 'the Sync service\'s narrower copy passes its checks')
  t.equal(syncCopy.config.database, undefined, 'and holds no root database credentials')
  t.equal(syncCopy.config.sessions, undefined)
  t.equal(syncCopy.config.scheduler, undefined, 'nor the scheduler\'s private key')

  const { config } = backend
  t.equal(config.runtime.nodeEnv, 'production')
  t.equal(config.runtime.version, '1.4.0')
  t.equal(config.web.url, 'https://calendar.example.org')
  t.same(config.backend.originsAllowed, ['https://calendar.example.org'])
  t.equal(config.sync.callbackBaseUrl, 'https://calendar.example.org/sync')
  t.equal(config.sync.postConnectRedirectUrl, config.web.url)
  t.equal(config.sync.enforceLeastPrivilege, true)
  t.match(config.database.uri, /^mongodb:\/\/root:[^@]+@mongo:27017\/calendar\?authSource=admin&replicaSet=rs0$/)

  // The scheduler's key pair: the private half for the scheduler, the public half for the Sync
  // service, which then accepts what the scheduler signs (test/deploy/build.test.ts makes the call).
  const signingKey = config.scheduler?.signingKey
  t.ok(signingKey !== undefined && isKeyPair(signingKey, syncCopy.config.sync.maintenanceKey ?? { kty: 'OKP', crv: 'Ed25519', x: '' }), 'setup writes the scheduler\'s signing key and the Sync service\'s copy holds its public half')
  t.equal(syncCopy.config.sync.maintenanceCaller, 'scheduler@calendar.invalid', 'with the caller its tokens name')
  t.equal(syncCopy.config.sync.maintenanceIssuer, undefined)

  // Every secret setup writes (the list is exact); an optional one a person adds later (a webhook's URL) is not setup's to make.
  const keys = secretKeys(ConfigSchema).filter((key) => at(document, key) !== undefined)
  t.same(keys.sort(), ['backend.serviceToken', 'database.password', 'database.replicaSetKey', 'scheduler.signingKey.d', 'sessions.db.password', 'sessions.key', 'sync.credentialEncryptionKey', 'sync.internalAuthToken'])
  const secrets = [...keys.map((key) => String(at(document, key))), syncDatabaseUser(config).password]
  for (const [index, value] of secrets.entries()) {
    t.ok(randomBytesIn(value) >= 32, `secret ${keys[index] ?? 'sync database password'} holds at least 32 random bytes`)
    t.notOk(stdout.includes(value) || stderr.includes(value), 'and is never printed')
  }
  t.equal(new Set(secrets).size, secrets.length, 'no two secrets are the same')

  const env = parseEnvFile(await readFile(join(dir, '.env'), 'utf8'))
  t.same(Object.keys(env), COMPOSE_VARIABLES.map(variableNameOf), '.env holds exactly what compose.yaml reads')
  t.same(env, composeEnvironment(config))
  for (const value of secrets) t.notOk(Object.values(env).includes(value))
})

test('two runs never share a secret', async (t) => {
  const [a, b] = [await freshDir(), await freshDir()]
  for (const dir of [a, b]) t.equal((await setup(t, ['--dir', dir])).code, 0)
  const values = async (dir: string) => {
    const document = parse(await readFile(join(dir, 'config.yaml'), 'utf8'))
    return secretKeys(ConfigSchema).map((key) => at(document, key)).filter((value) => value !== undefined)
  }
  const [first, second] = [await values(a), await values(b)]
  t.equal(first.length, 8)
  for (const value of first) t.notOk(second.includes(value))
})

test('without a terminal setup asks nothing and takes the local URLs of the published ports', async (t) => {
  const dir = await freshDir()
  const { code } = await setup(t, ['--dir', dir, '--web-port', '8080', '--backend-port', '8081'])
  t.equal(code, 0)
  const { config } = parseConfig(await readFile(join(dir, 'config.yaml'), 'utf8'), 'backend')
  t.equal(config.web.url, 'http://localhost:8080')
  t.equal(config.backend.apiUrl, 'http://localhost:8081/api')
  t.equal(config.web.port, 8080)
  t.equal(config.backend.port, 8081)
  t.equal(config.sync.backendUrl, 'http://backend:8081')
})

test('on a terminal setup asks for the public URLs, offering defaults', { skip: existsSync('/usr/bin/script') ? false : 'needs script(1) for a terminal' }, async (t) => {
  const dir = await freshDir()
  // script(1) gives the command a pseudo-terminal and forwards what is written to its input.
  const child = spawn('script', ['-qec', `${process.execPath} --import tsx bin/setup.ts --dir ${dir}`, '/dev/null'], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  let output = ''
  child.stdout.on('data', (chunk) => { output += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  await waitUntil(() => output.includes('(web.url) [http://localhost:9080]'), 'the first question', 20_000)
  child.stdin.write('https://cal.example.net\n')
  await waitUntil(() => output.includes('(backend.apiUrl) [https://cal.example.net/api]'), 'the second question, its default from the first answer', 10_000)
  child.stdin.write('\n')
  await waitUntil(() => output.includes('next steps:'), 'the next steps', 10_000)
  child.stdin.end()
  await exited
  const { config } = parseConfig(await readFile(join(dir, 'config.yaml'), 'utf8'), 'backend')
  t.equal(config.web.url, 'https://cal.example.net')
  t.equal(config.backend.apiUrl, 'https://cal.example.net/api')
})

test('setup never overwrites a configuration or an .env', async (t) => {
  const dir = await freshDir()
  t.equal((await setup(t, ['--dir', dir])).code, 0)
  const before = await readFile(join(dir, 'config.yaml'), 'utf8')
  const again = await setup(t, ['--dir', dir, '--web-url', 'https://other.example.org'])
  t.equal(again.code, 1)
  t.match(again.stderr.trim(), /^setup: .*config\.yaml already exists and setup never overwrites it/)
  t.equal(again.stderr.trim().split('\n').length, 1, 'one line')
  t.equal(await readFile(join(dir, 'config.yaml'), 'utf8'), before, 'the configuration is untouched')

  const envOnly = await freshDir()
  await writeFile(join(envOnly, '.env'), 'SOMETHING=else\n')
  const refused = await setup(t, ['--dir', envOnly])
  t.equal(refused.code, 1)
  t.match(refused.stderr, /\.env already exists/)
  t.notOk(existsSync(join(envOnly, 'config.yaml')), 'nothing was written')
})

test('--env-only rewrites .env from an edited config.yaml, and needs one', async (t) => {
  const dir = await freshDir()
  t.equal((await setup(t, ['--dir', dir])).code, 0)
  const configPath = join(dir, 'config.yaml')
  const document = parse(await readFile(configPath, 'utf8')) as { runtime: { version: string }, extprovider?: unknown, sync: Record<string, unknown> }
  document.runtime.version = '2.0.1'
  document.extprovider = { clientId: '1234.apps.googleusercontent.com', clientSecret: 'a-real-google-secret' }
  await writeFile(configPath, stringify(document))
  const { code, stdout } = await setup(t, ['--dir', dir, '--env-only'])
  t.equal(code, 0)
  t.match(stdout, /rewrote .*\.env/)
  const env = parseEnvFile(await readFile(join(dir, '.env'), 'utf8'))
  t.equal(env.RUNTIME_VERSION, '2.0.1')
  t.equal(env.EXTPROVIDER_CLIENT_ID, '1234.apps.googleusercontent.com')
  t.notOk(Object.values(env).includes('a-real-google-secret'), 'the client secret stays in config.yaml')

  const missing = await setup(t, ['--dir', await freshDir(), '--env-only'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^setup: there is no .*config\.yaml to read/)

  document.runtime.version = 'not a tag'
  await writeFile(configPath, stringify({ ...document, database: { uri: 'mongodb://mongo/calendar' } }))
  const broken = await setup(t, ['--dir', dir, '--env-only'])
  t.equal(broken.code, 1)
  t.match(broken.stderr, /^config: database\./, 'a configuration the stack refuses is named by its key')
})

test('setup refuses answers the configuration would refuse, writing nothing', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['--api-url', 'https://calendar.example.org/v1'], /^setup: --api-url must be an http\(s\) URL ending in \/api$/],
    [['--web-url', 'calendar.example.org'], /^setup: --web-url must be an http\(s\) URL$/],
    [['--web-port', '3000'], /^setup: --web-port and --backend-port must differ$/],
    [['--backend-port', '70000'], /^setup: --backend-port must be a port number from 1 to 65535$/],
    [['--version', 'a tag with spaces'], /^setup: --version must be an image tag/],
    [['--colour', 'blue'], /^setup: Unknown option '--colour'/]
  ]
  for (const [args, expected] of cases) {
    const dir = await freshDir()
    const { code, stderr } = await setup(t, ['--dir', dir, ...args])
    t.equal(code, 1, args.join(' '))
    t.match(stderr.trim(), expected)
    t.notOk(existsSync(join(dir, 'config.yaml')) || existsSync(join(dir, '.env')), 'nothing was written')
  }
})
