// The rules of lib/production-config.ts and lib/stack-steps.ts, without processes.
import { test } from 'tap'
import { parse } from 'yaml'
import { parseConfig } from '../../lib/config.js'
import { checkAnswers, composeEnvironment, defaultApiUrl, defaultWebUrl, environmentDrift, generateSecrets, productionConfig, renderConfigYaml, renderEnvFile, variableNameOf } from '../../lib/production-config.js'
import { parseMongoUri, rootConnection, selfHostFindings, stackFiles, syncConfigDocument, syncDatabaseUser } from '../../lib/stack-steps.js'
import type { Config } from '../../schemas/config.js'

const answers = { webUrl: 'https://calendar.example.org', apiUrl: 'https://calendar.example.org/api', version: 'latest', webPort: 9080, backendPort: 3000 }

function generated (patch: (document: Record<string, Record<string, unknown>>) => void = () => {}): { text: string, config: Config, document: Record<string, unknown> } {
  const document = productionConfig(answers, generateSecrets())
  patch(document)
  const text = renderConfigYaml(document, new Date('2026-01-02T00:00:00Z'))
  return { text, config: parseConfig(text, 'backend').config, document: parse(text) as Record<string, unknown> }
}

test('the generated configuration is dated and needs nothing from the stack rules', async (t) => {
  const { text, config } = generated()
  t.match(text, /^# Production configuration of the calendar service, written by `npm run setup` on 2026-01-02\./)
  t.same(selfHostFindings(config), [])
})

test('each self-host rule names its key', async (t) => {
  const cases: Array<[string, (document: Record<string, Record<string, unknown>>) => void, RegExp]> = [
    ['no root user', (d) => { delete d.database?.username }, /^database\.username is required by the self-host stack/],
    ['no root password', (d) => { delete d.database?.password }, /^database\.password is required/],
    ['no replica set key', (d) => { delete d.database?.replicaSetKey }, /^database\.replicaSetKey is required/],
    ['a keyfile mongod refuses', (d) => { if (d.database) d.database.replicaSetKey = 'not base64!' }, /^database\.replicaSetKey must be 6 to 1024 base64 characters/],
    ['a URI for another user', (d) => { if (d.database) d.database.uri = String(d.database.uri).replace('root:', 'admin:') }, /^database\.uri must carry database\.username and database\.password/],
    ['a cluster URI', (d) => { if (d.database) d.database.uri = 'mongodb+srv://root:pw@cluster.example.net/calendar' }, /^database\.uri must be a mongodb:\/\/ URI/],
    ['root outside admin', (d) => { if (d.database) d.database.uri = String(d.database.uri).replace('authSource=admin', 'authSource=calendar') }, /^database\.uri must say authSource=admin/],
    ['another replica set', (d) => { if (d.database) d.database.uri = String(d.database.uri).replace('replicaSet=rs0', 'replicaSet=rs1') }, /^database\.uri must say replicaSet=rs0/],
    ['Sync without credentials', (d) => { if (d.sync) d.sync.databaseUri = 'mongodb://mongo:27017/sync?replicaSet=rs0' }, /^sync\.databaseUri must be a mongodb:\/\/ URI with the Sync service's own user/],
    ['Sync as root', (d) => { if (d.sync) d.sync.databaseUri = String(d.sync.databaseUri).replace('sync:', 'root:') }, /^sync\.databaseUri must use a user of its own/],
    ['Sync without a password', (d) => { if (d.sync) d.sync.databaseUri = String(d.sync.databaseUri).replace(/sync:[^@]+@/, 'sync:@') }, /^sync\.databaseUri must carry a password/],
    ['Sync on other hosts', (d) => { if (d.sync) d.sync.databaseUri = String(d.sync.databaseUri).replace('mongo:27017', 'elsewhere:27017') }, /^sync\.databaseUri must name the same MongoDB hosts/],
    ['Sync outside rs0', (d) => { if (d.sync) d.sync.databaseUri = String(d.sync.databaseUri).replace('&replicaSet=rs0', '') }, /^sync\.databaseUri must say replicaSet=rs0/],
    ['a core key the core refuses', (d) => { if (d.sessions) d.sessions.key = 'short_key' }, /^sessions\.key must be at least 20 letters/],
    ['no session database user', (d) => { delete (d.sessions?.db as Record<string, unknown>).user }, /^sessions\.db\.user is required by the self-host stack/],
    ['a session database name SQL would quote', (d) => { (d.sessions?.db as Record<string, unknown>).database = 'Sessions-DB' }, /^sessions\.db\.database is required by the self-host stack: lowercase/],
    ['a session database password the core\'s YAML would misread', (d) => { (d.sessions?.db as Record<string, unknown>).password = 'pass: word' }, /^sessions\.db\.password is required by the self-host stack: letters, digits/]
  ]
  for (const [name, patch, expected] of cases) {
    const { config } = generated(patch)
    const [first] = selfHostFindings(config)
    t.match(`${first?.key} ${first?.rule}`, expected, name)
  }
})

test('connection strings are read into their parts', async (t) => {
  const parsed = parseMongoUri('mongodb://us%40er:p%3Ass@a:1,b:2/calendar?authSource=admin&replicaSet=rs0')
  t.same(parsed?.credentials, { user: 'us@er', password: 'p:ss' })
  t.equal(parsed?.hosts, 'a:1,b:2')
  t.equal(parsed?.database, 'calendar')
  t.equal(parsed?.params.get('replicaSet'), 'rs0')
  t.equal(parseMongoUri('mongodb://mongo')?.credentials, undefined)
  t.equal(parseMongoUri('postgres://x'), undefined)
})

test('the database step reaches the first host directly as root and names it as the only member', async (t) => {
  const { config } = generated()
  const connection = rootConnection(config)
  t.match(connection.uri, /^mongodb:\/\/root:[A-Za-z0-9_-]+@mongo:27017\/\?authSource=admin&directConnection=true$/)
  t.equal(connection.member, 'mongo:27017')
  t.equal(connection.replicaSet, 'rs0')
  t.equal(rootConnection({ ...config, database: { ...config.database, uri: 'mongodb://root:x@mongo/calendar' } }).member, 'mongo:27017', 'the default port')
  t.throws(() => rootConnection({ ...config, database: { uri: config.database.uri } }), /database\.username and database\.password are required/)

  const sync = syncDatabaseUser(config)
  t.same({ ...sync, password: typeof sync.password }, { user: 'sync', password: 'string', authSource: 'sync', database: 'sync' })
  t.throws(() => syncDatabaseUser({ ...config, sync: { ...config.sync, databaseUri: 'mongodb://mongo/sync' } }), /carries no credentials/)
})

test('the Sync copy keeps its own blocks and the backend\'s address, not the root database or the session core', async (t) => {
  const { config, document } = generated((d) => {
    d.email = { provider: 'log' }
    if (d.sync) delete d.sync.apiDatabase
  })
  const copy = syncConfigDocument(document, config)
  t.same(Object.keys(copy).sort(), ['backend', 'runtime', 'sync', 'web'])
  t.equal((copy.sync as Record<string, unknown>).apiDatabase, 'calendar', 'derived from database.uri when absent')
  const files = stackFiles('text', document, config)
  t.ok(files.every((file) => file.mode === 0o400), 'every secret file is readable by its owner only')
})

test('.env: each configuration key in capitals, quoted when it must be, never a quote or a line break', async (t) => {
  t.equal(variableNameOf('runtime.version'), 'RUNTIME_VERSION')
  t.equal(variableNameOf('backend.apiUrl'), 'BACKEND_API_URL')
  t.equal(renderEnvFile({ A: 'plain-1.2', B: 'with space', C: '' }).split('\n').slice(2).join('\n'), "A=plain-1.2\nB='with space'\nC=\n")
  t.throws(() => renderEnvFile({ A: "it's" }), /A cannot be written to \.env/)
  t.throws(() => renderEnvFile({ A: 'two\nlines' }), /A cannot be written to \.env/)
})

test('a stale .env is told apart from a current one', async (t) => {
  const { config } = generated()
  const env = composeEnvironment(config)
  t.same(environmentDrift(config, env), [])
  t.same(environmentDrift(config, { ...env, RUNTIME_VERSION: '0.9' }), ['config: .env gives RUNTIME_VERSION another value than runtime.version in config.yaml; run `npm run setup -- --env-only` and start again'])
  t.equal(environmentDrift(config, {}).length, 4, 'without .env, every non-empty value differs')
})

test('answers: local defaults from the ports, same-origin API behind a proxy', async (t) => {
  t.equal(defaultWebUrl(8080), 'http://localhost:8080')
  t.equal(defaultApiUrl('http://localhost:8080', 3000), 'http://localhost:3000/api')
  t.equal(defaultApiUrl('https://calendar.example.org/', 3000), 'https://calendar.example.org/api')
  t.equal(defaultApiUrl('not a url', 3001), 'http://localhost:3001/api')
  t.same(checkAnswers(answers), [])
  t.same(checkAnswers({ ...answers, apiUrl: 'https://calendar.example.org/api/' }), [], 'a trailing slash is fine')
  t.same(checkAnswers({ ...answers, webPort: Number.NaN }), ['--web-port must be a port number from 1 to 65535'])
})
