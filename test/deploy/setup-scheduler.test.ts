// The watch-maintenance scheduler's key pair in config.yaml: how setup adds it to a configuration
// written before the scheduler existed, and the rules that keep its two halves together.
// (test/deploy/setup.test.ts checks that a fresh setup writes it; build.test.ts makes the call.)
import { randomBytes } from 'node:crypto'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test, type Test } from 'tap'
import { parse, parseDocument, stringify } from 'yaml'
import { parseConfig } from '../../lib/config.js'
import { ed25519KeyPair, isKeyPair } from '../../lib/maintenance-token.js'
import { generateSecrets, productionConfig, renderConfigYaml } from '../../lib/production-config.js'
import { schedulerFindings, stackFiles } from '../../lib/stack-steps.js'
import { startScript, temporaryDirectory } from '../processes.js'

const answers = { webUrl: 'https://calendar.example.org', apiUrl: 'https://calendar.example.org/api', version: 'latest', webPort: 9080, backendPort: 3000 }

async function setup (t: Test, args: string[]) {
  const run = startScript(t, 'bin/setup.ts', args)
  const code = await run.exited
  return { code, stdout: run.stdout(), stderr: run.stderr() }
}

test('--add-scheduler-key gives an older config.yaml the scheduler\'s key pair, once, keeping its comments', async (t) => {
  const dir = await temporaryDirectory('calendar-setup-')
  const configPath = join(dir, 'config.yaml')
  // As setup wrote it before the scheduler existed.
  const older = parseDocument(renderConfigYaml(productionConfig(answers, generateSecrets()), new Date()))
  older.delete('scheduler')
  older.deleteIn(['sync', 'maintenanceKey'])
  older.deleteIn(['sync', 'maintenanceCaller'])
  await writeFile(configPath, older.toString({ lineWidth: 0 }), { mode: 0o600 })
  const refused = parseConfig(await readFile(configPath, 'utf8'), 'backend').config
  t.match(schedulerFindings(refused), [{ key: 'scheduler.signingKey', rule: /--add-scheduler-key/ }], 'the stack refuses it, naming the command')

  const { code, stdout, stderr } = await setup(t, ['--dir', dir, '--add-scheduler-key'])
  t.equal(code, 0, stderr)
  t.match(stdout, /^added scheduler\.signingKey, sync\.maintenanceKey and sync\.maintenanceCaller to /)
  const text = await readFile(configPath, 'utf8')
  t.match(text, /^# Production configuration of the calendar service/, 'the comments stay')
  t.equal((await stat(configPath)).mode & 0o777, 0o600)
  const { config } = parseConfig(text, 'backend')
  t.same(schedulerFindings(config), [], 'the stack accepts it')
  t.ok(config.scheduler !== undefined && config.sync.maintenanceKey !== undefined && isKeyPair(config.scheduler.signingKey, config.sync.maintenanceKey), 'a key pair')
  t.notOk(stdout.includes(config.scheduler?.signingKey.d ?? '-'), 'the private key is not printed')

  const again = await setup(t, ['--dir', dir, '--add-scheduler-key'])
  t.equal(again.code, 1)
  t.match(again.stderr, /already has scheduler\.signingKey; nothing was changed/)
  t.equal(await readFile(configPath, 'utf8'), text, 'the file is untouched')

  const withIssuer = parseDocument(text)
  withIssuer.delete('scheduler')
  withIssuer.deleteIn(['sync', 'maintenanceKey'])
  withIssuer.setIn(['sync', 'maintenanceIssuer'], 'https://accounts.google.com')
  await writeFile(configPath, withIssuer.toString())
  const issuer = await setup(t, ['--dir', dir, '--add-scheduler-key'])
  t.equal(issuer.code, 1)
  t.match(issuer.stderr, /sync\.maintenanceIssuer is set/)

  // A caller already named is kept.
  withIssuer.deleteIn(['sync', 'maintenanceIssuer'])
  withIssuer.setIn(['sync', 'maintenanceCaller'], 'ops@example.org')
  await writeFile(configPath, withIssuer.toString())
  t.equal((await setup(t, ['--dir', dir, '--add-scheduler-key'])).code, 0)
  t.equal(parseConfig(await readFile(configPath, 'utf8'), 'backend').config.sync.maintenanceCaller, 'ops@example.org')

  const missing = await setup(t, ['--dir', await temporaryDirectory('calendar-setup-'), '--add-scheduler-key'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^setup: there is no .*config\.yaml to read/)
})

test('without a scheduler block the stack writes no scheduler file, and the backend reads config.yaml as it is', async (t) => {
  const { scheduler: _dropped, ...document } = productionConfig(answers, generateSecrets())
  const text = renderConfigYaml({ ...document, sync: { ...document.sync, maintenanceKey: undefined, maintenanceIssuer: 'https://accounts.google.com' } }, new Date())
  const { config } = parseConfig(text, 'backend')
  const files = stackFiles(text, parse(text) as Record<string, unknown>, config)
  t.same(files.filter((file) => file.volume === 'scheduler'), [])
  t.equal(files.find((file) => file.volume === 'backend')?.content, text)
})

test('the scheduler\'s key and the Sync service\'s half must belong together, and the key is an alternative to the issuer', async (t) => {
  const document = productionConfig(answers, generateSecrets()) as { sync: Record<string, unknown>, scheduler: { signingKey: Record<string, string> } }
  t.doesNotThrow(() => parseConfig(stringify(document), 'backend'), 'as setup writes it')
  const other = ed25519KeyPair(randomBytes(32)).publicJwk
  const refusals: Array<[unknown, RegExp]> = [
    [{ ...document, sync: { ...document.sync, maintenanceKey: other } }, /^config: scheduler\.signingKey must be the private half of sync\.maintenanceKey/],
    [{ ...document, scheduler: { signingKey: { ...document.scheduler.signingKey, x: other.x } } }, /^config: scheduler\.signingKey must be the private half/],
    [{ ...document, sync: { ...document.sync, maintenanceIssuer: 'https://accounts.google.com' } }, /^config: sync\.maintenanceKey is an alternative to sync\.maintenanceIssuer/],
    [{ ...document, sync: { ...document.sync, maintenanceCaller: undefined } }, /^config: sync\.maintenanceCaller is required with sync\.maintenanceKey/]
  ]
  for (const [changed, expected] of refusals) t.throws(() => parseConfig(stringify(changed), 'backend'), expected)

  // A scheduler of the operator's own (an OpenID Connect issuer) instead of the stack's.
  const { scheduler: _dropped, ...outside } = document
  const withIssuer = parseConfig(stringify({ ...outside, sync: { ...document.sync, maintenanceKey: undefined, maintenanceIssuer: 'https://accounts.google.com' } }), 'backend').config
  t.same(schedulerFindings(withIssuer), [], 'the stack accepts an outside scheduler\'s issuer instead of the key')
  const neither = parseConfig(stringify({ ...outside, sync: { ...document.sync, maintenanceKey: undefined } }), 'backend').config
  t.match(schedulerFindings(neither), [{ key: 'scheduler.signingKey' }], 'and refuses a stack with no maintenance caller at all')
  t.throws(() => parseConfig(stringify({ ...outside, sync: { ...document.sync, maintenanceCaller: undefined } }), 'sync'), /sync\.maintenanceCaller is required/, 'the Sync service checks its own half')
})
