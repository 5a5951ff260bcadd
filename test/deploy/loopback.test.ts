import { writeFile } from 'node:fs/promises'
import { test } from 'tap'
import { ConfigError, parseConfig } from '../../lib/config.js'
import { loadConfig } from '../../stores/config-file.js'
import { configFingerprint, isLoopbackHost, LOOPBACK_TEST_OVERRIDE, loopbackOverride, mongoHostsOf } from '../../lib/loopback.js'
import { writeTempFile } from '../processes.js'
import { exampleWith } from '../config/fixtures.js'

const loopbackDatabase = {
  'database.uri': 'mongodb://root:pw@127.0.0.1:27017/calendar?authSource=admin&replicaSet=rs0',
  'sync.databaseUri': 'mongodb://sync:pw@localhost:27017/sync?authSource=sync&replicaSet=rs0',
  'sessions.uri': 'http://[::1]:3567'
}

test('loopback hosts are told from the others', async (t) => {
  for (const host of ['localhost', 'LOCALHOST.', 'db.localhost', '127.0.0.1', '127.1.2.3', '0.0.0.0', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::']) {
    t.ok(isLoopbackHost(host), `${host} is loopback`)
  }
  for (const host of ['mongo', 'session-core', '10.0.0.5', '192.168.1.2', 'calendar.example.com', '::ffff:10.0.0.1', '2001:db8::1', 'localhost.example.com']) {
    t.notOk(isLoopbackHost(host), `${host} is not loopback`)
  }
})

test('every host of a MongoDB connection string is read', async (t) => {
  t.same(mongoHostsOf('mongodb://root:p%40ss@mongo:27017,[::1]:27018,other/calendar?replicaSet=rs0'), ['mongo', '::1', 'other'])
  t.same(mongoHostsOf('mongodb+srv://user:pw@cluster0.example.net/calendar'), ['cluster0.example.net'])
  t.same(mongoHostsOf('mongodb://127.0.0.1'), ['127.0.0.1'])
  t.same(mongoHostsOf('postgres://x'), [])
})

test('production refuses loopback database and session-core addresses, each by its key', async (t) => {
  for (const [key, value] of Object.entries(loopbackDatabase)) {
    const patch = { [key]: value }
    const error = t.throws(() => parseConfig(exampleWith(patch), 'backend')) as Error
    t.type(error, ConfigError)
    t.equal(error.message, `config: ${key} points at a loopback address, which a production process refuses (in a container that is the container itself, and the development stand-ins listen only there)`)
  }
  t.throws(() => parseConfig(exampleWith({ 'sync.databaseUri': loopbackDatabase['sync.databaseUri'] }), 'sync'), /^config: sync\.databaseUri points at a loopback address/)
})

test('development and test configurations keep loopback addresses', async (t) => {
  for (const nodeEnv of ['development', 'test']) {
    const { config } = parseConfig(exampleWith({ ...loopbackDatabase, 'runtime.nodeEnv': nodeEnv }), 'backend')
    t.equal(config.runtime.nodeEnv, nodeEnv)
  }
})

test('the test-only override is bound to the exact configuration file', async (t) => {
  const text = exampleWith(loopbackDatabase)
  const fingerprint = configFingerprint(text)
  t.equal(loopbackOverride(undefined, text), 'unset')
  t.equal(loopbackOverride('', text), 'unset')
  t.equal(loopbackOverride(fingerprint, text), 'granted')
  t.equal(loopbackOverride(fingerprint.toUpperCase(), text), 'granted')
  t.equal(loopbackOverride('1', text), 'mismatch', 'a flag-like value is not enough')
  t.equal(loopbackOverride(fingerprint, text + '\n# edited\n'), 'mismatch', 'any change to the file invalidates it')
})

test('loading: no override refuses, a matching one accepts with a warning, another one refuses the start', async (t) => {
  const text = exampleWith(loopbackDatabase)
  const path = await writeTempFile('config.yaml', text)
  const argv = ['--config', path]

  t.throws(() => loadConfig({ argv, env: {}, service: 'backend' }), /^config: database\.uri points at a loopback address/)

  const { config, warnings } = loadConfig({ argv, env: { [LOOPBACK_TEST_OVERRIDE]: configFingerprint(text) }, service: 'backend' })
  t.equal(config.runtime.nodeEnv, 'production')
  t.same(warnings, [`config: ${LOOPBACK_TEST_OVERRIDE} accepts loopback addresses for database.uri, sync.databaseUri, sessions.uri in production; it is a test-only override, never set it in a deployment`])

  const other = exampleWith({ ...loopbackDatabase, 'runtime.logLevel': 'debug' })
  const error = t.throws(() => loadConfig({ argv, env: { [LOOPBACK_TEST_OVERRIDE]: configFingerprint(other) }, service: 'sync' })) as Error
  t.equal(error.message, `config: ${LOOPBACK_TEST_OVERRIDE} is a test-only override and does not match this configuration file; unset it`)

  // A real deployment's file with the variable left over from somewhere: refused, not ignored.
  const deployment = await writeTempFile('config.yaml', exampleWith({}))
  t.throws(() => loadConfig({ argv: ['--config', deployment], env: { [LOOPBACK_TEST_OVERRIDE]: configFingerprint(text) }, service: 'backend' }), /does not match this configuration file/)

  // Without loopback addresses a matching override changes nothing and says nothing.
  const plain = exampleWith({})
  await writeFile(deployment, plain)
  t.same(loadConfig({ argv: ['--config', deployment], env: { [LOOPBACK_TEST_OVERRIDE]: configFingerprint(plain) }, service: 'backend' }).warnings, [])
})
