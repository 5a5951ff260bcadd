// `npm start`. With a configuration file (--config FILE, CONFIG_FILE or ./config.yaml) it runs the
// backend alone against the services named there. Without one it runs the whole system on this
// machine: the MongoDB and session-core stand-ins (data under .data/), the Sync service and the
// backend, with a generated development configuration; Ctrl-C stops everything.
// DEV_DATA_DIR and DEV_{MONGO,SESSION_CORE,SYNC,BACKEND}_PORT move it when the defaults are taken.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stringify } from 'yaml'
import { startMongo } from './mongo/index.js'
import { startSessionCore } from './session-core/index.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
const configGiven = args.some((arg) => arg === '--config' || arg.startsWith('--config=')) ||
  (process.env.CONFIG_FILE !== undefined && process.env.CONFIG_FILE !== '') ||
  existsSync(resolve('config.yaml'))

interface DevSecrets {
  rootPassword: string
  apiPassword: string
  syncPassword: string
  sessionsPassword: string
  sessionsKey: string
  internalAuthToken: string
  serviceToken: string
  credentialEncryptionKey: string
}

const PORTS = {
  mongo: Number(process.env.DEV_MONGO_PORT ?? 27117),
  sessionCore: Number(process.env.DEV_SESSION_CORE_PORT ?? 3567),
  sync: Number(process.env.DEV_SYNC_PORT ?? 3010),
  backend: Number(process.env.DEV_BACKEND_PORT ?? 3000),
  web: 9080
}

// Secrets are made once and kept with the data, so restarting keeps everyone signed in.
async function devSecrets (dataDir: string): Promise<DevSecrets> {
  const path = join(dataDir, 'dev-secrets.json')
  if (existsSync(path)) return JSON.parse(await readFile(path, 'utf8')) as DevSecrets
  // Hex only: the session core accepts letters, digits, '=' and '-' in its API key.
  const token = () => randomBytes(24).toString('hex')
  const secrets: DevSecrets = {
    rootPassword: token(),
    apiPassword: token(),
    syncPassword: token(),
    sessionsPassword: token(),
    sessionsKey: token(),
    internalAuthToken: token(),
    serviceToken: token(),
    credentialEncryptionKey: randomBytes(32).toString('base64')
  }
  await writeFile(path, JSON.stringify(secrets, null, 2), { mode: 0o600 })
  return secrets
}

function mongoUri (user: string, password: string, database: string, authSource: string): string {
  return `mongodb://${user}:${encodeURIComponent(password)}@127.0.0.1:${PORTS.mongo}/${database}?authSource=${authSource}&replicaSet=rs0`
}

function developmentConfig (secrets: DevSecrets, sessionsUri: string) {
  const webUrl = `http://localhost:${PORTS.web}`
  return {
    runtime: { nodeEnv: 'development', timezone: 'UTC', logLevel: process.env.LOG_LEVEL ?? 'info' },
    web: { port: PORTS.web, url: webUrl },
    backend: {
      port: PORTS.backend,
      apiUrl: `http://localhost:${PORTS.backend}/api`,
      originsAllowed: [webUrl],
      serviceToken: secrets.serviceToken
    },
    database: { uri: mongoUri('calendar', secrets.apiPassword, 'calendar', 'calendar') },
    sessions: { uri: sessionsUri, key: secrets.sessionsKey },
    sync: {
      port: PORTS.sync,
      databaseUri: mongoUri('sync', secrets.syncPassword, 'sync', 'sync'),
      internalAuthToken: secrets.internalAuthToken,
      callbackBaseUrl: `http://localhost:${PORTS.sync}`,
      postConnectRedirectUrl: webUrl,
      serviceUrl: `http://127.0.0.1:${PORTS.sync}`,
      enforceLeastPrivilege: true,
      apiDatabase: 'calendar',
      credentialEncryptionKey: secrets.credentialEncryptionKey
    }
  }
}

function run (name: string, script: string, configPath: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script, '--config', configPath], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, CONFIG_FILE: '' }
  })
  child.on('exit', (code, signal) => {
    if (!stopping) {
      process.stderr.write(`local stack: ${name} stopped (${signal ?? `exit ${code}`}); stopping everything\n`)
      stop(1).catch(() => {})
    }
  })
  return child
}

async function waitForHealth (url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url)
      if (response.ok) return
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`)
}

let stopping = false
let stop: (code: number) => Promise<void> = async (code) => { process.exit(code) }

async function startLocalStack (): Promise<void> {
  const dataDir = resolve(root, process.env.DEV_DATA_DIR ?? '.data')
  await mkdir(join(dataDir, 'mongo'), { recursive: true })
  const secrets = await devSecrets(dataDir)

  const mongo = await startMongo({
    port: PORTS.mongo,
    replicaSet: 'rs0',
    dataDir: join(dataDir, 'mongo'),
    users: [
      { user: 'root', password: secrets.rootPassword, db: 'admin', roles: [{ role: 'root', db: 'admin' }] },
      { user: 'calendar', password: secrets.apiPassword, db: 'calendar', roles: [{ role: 'readWrite', db: 'calendar' }] },
      // The Sync service's user can read and write its own database only.
      { user: 'sync', password: secrets.syncPassword, db: 'sync', roles: [{ role: 'readWrite', db: 'sync' }] },
      { user: 'sessions', password: secrets.sessionsPassword, db: 'sessions', roles: [{ role: 'readWrite', db: 'sessions' }] }
    ]
  })
  const sessionCore = await startSessionCore({
    port: PORTS.sessionCore,
    apiKey: secrets.sessionsKey,
    mongoUri: mongoUri('sessions', secrets.sessionsPassword, 'sessions', 'sessions')
  })

  const configPath = join(dataDir, 'config.dev.yaml')
  await writeFile(configPath, stringify(developmentConfig(secrets, sessionCore.uri)), { mode: 0o600 })

  const children = [run('Sync service', 'sync/server.ts', configPath)]
  await waitForHealth(`http://127.0.0.1:${PORTS.sync}/health/live`, 30_000)
  children.push(run('backend', 'server.ts', configPath))

  stop = async (code: number) => {
    if (stopping) return
    stopping = true
    await Promise.all(children.map((child) => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      child.once('exit', () => resolve())
      child.kill('SIGTERM')
    })))
    await sessionCore.close()
    await mongo.close()
    process.exit(code)
  }
  process.on('SIGINT', () => { stop(0).catch(() => {}) })
  process.on('SIGTERM', () => { stop(0).catch(() => {}) })

  await waitForHealth(`http://127.0.0.1:${PORTS.backend}/api/health`, 60_000)
  process.stdout.write([
    '',
    'Local stack is up:',
    `  backend API     http://localhost:${PORTS.backend}/api   (health: /api/health)`,
    `  event stream    http://localhost:${PORTS.backend}/api/events/stream`,
    `  Sync service    http://127.0.0.1:${PORTS.sync}`,
    `  session core    ${sessionCore.uri}`,
    `  MongoDB         mongodb://127.0.0.1:${PORTS.mongo}/?replicaSet=rs0 (data in ${join(dataDir, 'mongo')})`,
    `  configuration   ${configPath}`,
    'Press Ctrl-C to stop.',
    ''
  ].join('\n'))
}

if (configGiven) {
  await import('../server.js')
} else {
  await startLocalStack()
}
