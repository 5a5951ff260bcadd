// Isolation of the Sync database, proved against dev/mongo with real SCRAM users and roles.
import { test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, writeFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { startMongo } from '../../dev/mongo/index.js'
import { SyncStartupError } from '../../sync/lib/isolation.js'
import { buildSyncApp, databaseUri, testConfig, freePort } from './helper.js'

const users = [
  { user: 'sync', password: 'sync-password-1', roles: [{ role: 'readWrite', db: 'calendar_sync' }] },
  { user: 'greedy', password: 'greedy-password-1', roles: [{ role: 'readWrite', db: 'calendar_sync' }, { role: 'read', db: 'calendar' }] }
]

test('least privilege: starts when the server denies the API database, refuses when the user can read it', async (t) => {
  const mongo = await startMongo({ users })
  t.teardown(() => mongo.close())
  const limited = testConfig(databaseUri(mongo.uri, 'calendar_sync', { user: 'sync', password: 'sync-password-1' }), { enforceLeastPrivilege: true, apiDatabase: 'calendar' })
  const built = await buildSyncApp(t, mongo.uri, { config: limited })
  const ready = await built.app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 200, 'a user limited to its own database starts')

  const greedy = testConfig(databaseUri(mongo.uri, 'calendar_sync', { user: 'greedy', password: 'greedy-password-1' }), { enforceLeastPrivilege: true, apiDatabase: 'calendar' })
  await t.rejects(buildSyncApp(t, mongo.uri, { config: greedy }), {
    name: 'SyncStartupError',
    message: 'the Sync database user can read the API database "calendar"; give it a user limited to its own database or turn off sync.enforceLeastPrivilege'
  })

  const unchecked = testConfig(databaseUri(mongo.uri, 'calendar_sync', { user: 'greedy', password: 'greedy-password-1' }), { apiDatabase: 'calendar' })
  const starts = await buildSyncApp(t, mongo.uri, { config: unchecked })
  t.equal((await starts.app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200, 'without enforceLeastPrivilege the check is not made')
})

test('the Sync database is never the API database', async (t) => {
  const mongo = await startMongo()
  t.teardown(() => mongo.close())
  const sameAsApi = testConfig(databaseUri(mongo.uri, 'calendar'), { apiDatabase: 'calendar' })
  await t.rejects(buildSyncApp(t, mongo.uri, { config: sameAsApi }), SyncStartupError)
  const viaDatabaseUri = { ...testConfig(databaseUri(mongo.uri, 'calendar')), database: { uri: databaseUri(mongo.uri, 'calendar') } }
  await t.rejects(buildSyncApp(t, mongo.uri, { config: viaDatabaseUri }), { message: /names the API database "calendar"/ })
  const nothingToCheck = testConfig(databaseUri(mongo.uri, 'calendar_sync'), { enforceLeastPrivilege: true })
  await t.rejects(buildSyncApp(t, mongo.uri, { config: nothingToCheck }), { message: /no API database is named/ })
})

async function runServer (configFile: string): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'sync/server.ts', '--config', configFile], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: { ...process.env, HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, stderr }
}

test('sync/server.ts exits 1 with one line for a bad configuration or a refused isolation check', async (t) => {
  const mongo = await startMongo({ users })
  t.teardown(() => mongo.close())
  const dir = await mkdtemp(join(tmpdir(), 'sync-config-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))

  const config = testConfig(databaseUri(mongo.uri, 'calendar_sync', { user: 'greedy', password: 'greedy-password-1' }), { enforceLeastPrivilege: true, apiDatabase: 'calendar', port: await freePort() })
  const { internalAuthToken: _token, ...withoutToken } = config.sync
  await writeFile(join(dir, 'missing.yaml'), stringify({ ...config, sync: withoutToken }))
  const missing = await runServer(join(dir, 'missing.yaml'))
  t.equal(missing.code, 1)
  t.equal(missing.stderr, 'config: sync.internalAuthToken is required\n')

  await writeFile(join(dir, 'greedy.yaml'), stringify(config))
  const greedy = await runServer(join(dir, 'greedy.yaml'))
  t.equal(greedy.code, 1)
  t.equal(greedy.stderr, 'sync: the Sync database user can read the API database "calendar"; give it a user limited to its own database or turn off sync.enforceLeastPrivilege\n')
})
