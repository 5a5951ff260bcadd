// The self-host stack's own steps, run from the backend image by compose.yaml:
//   node dist/bin/stack-steps.js files --config FILE --out DIR   derive every container's secret files from config.yaml
//   node dist/bin/stack-steps.js database                        initiate the replica set and create the Sync user
//   node dist/bin/stack-steps.js health backend|sync|scheduler   the containers' health checks
//   node dist/bin/stack-steps.js maintenance [--caller FILE] [--every-minutes N] [--once]
//                                                      the scheduler: POST /maintenance to the Sync
//                                                      service with an ID token it signs, every N minutes
// Each prints one line per thing it did and never a secret.
import { chown, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { Value } from '@sinclair/typebox/value'
import { MongoClient } from 'mongodb'
import { parse as parseYaml, stringify } from 'yaml'
import { ConfigError, parseConfig } from '../lib/config.js'
import { loadConfig } from '../stores/config-file.js'
import { environmentDrift } from '../lib/production-config.js'
import {
  maintainOrReport, maintenanceLoop, rootConnection, SCHEDULER_FILE, schedulerFindings, SchedulerFileSchema, selfHostFindings, stackFiles, syncConfigDocument,
  syncDatabaseUser, type MaintenanceLog, type SchedulerFile
} from '../lib/stack-steps.js'
import { DATABASE_DEADLINES } from '../stores/database.js'

class StackError extends Error {}

function say (line: string): void {
  process.stdout.write(`stack: ${line}\n`)
}

async function files (configPath: string, outDir: string, env: NodeJS.ProcessEnv): Promise<void> {
  let text: string
  try {
    text = await readFile(configPath, 'utf8')
  } catch {
    throw new ConfigError(`config: cannot read ${configPath} (compose mounts ./config.yaml there; run \`npm run setup\` first)`)
  }
  const { config } = parseConfig(text, 'backend')
  const problem = [...selfHostFindings(config), ...schedulerFindings(config)][0]
  if (problem !== undefined) throw new ConfigError(`config: ${problem.key} ${problem.rule}`)
  const drift = environmentDrift(config, env)[0]
  if (drift !== undefined) throw new ConfigError(drift)

  const document = parseYaml(text) as Record<string, unknown>
  // The Sync copy must pass the Sync service's own checks before any container reads it.
  parseConfig(stringify(syncConfigDocument(document, config)), 'sync')

  const asRoot = process.getuid?.() === 0
  const written = stackFiles(text, document, config)
  for (const file of written) {
    const dir = join(outDir, file.volume)
    await mkdir(dir, { recursive: true })
    const target = join(dir, file.name)
    const staging = `${target}.${process.pid}`
    await writeFile(staging, file.content, { mode: file.mode })
    // Only root can hand a file to another user; a test run as anyone else keeps its own.
    if (asRoot) await chown(staging, file.uid, file.uid)
    await rename(staging, target)
  }
  say(`wrote the secret files of ${[...new Set(written.map((file) => file.volume))].join(', ')}`)
}

async function sleep (ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

async function connectWithin (uri: string, deadlineMs: number): Promise<MongoClient> {
  const deadline = Date.now() + deadlineMs
  for (;;) {
    const client = new MongoClient(uri, { appName: 'calendar-stack', ...DATABASE_DEADLINES })
    try {
      await client.connect()
      await client.db('admin').command({ ping: 1 })
      return client
    } catch (error) {
      await client.close()
      if (Date.now() > deadline) throw error
      await sleep(1000)
    }
  }
}

const ALREADY_INITIALIZED = 23
const USER_EXISTS = 51003

async function database (env: NodeJS.ProcessEnv): Promise<void> {
  const { config } = loadConfig({ argv: [], env, service: 'backend' })
  const problem = selfHostFindings(config)[0]
  if (problem !== undefined) throw new ConfigError(`config: ${problem.key} ${problem.rule}`)
  const root = rootConnection(config)
  const client = await connectWithin(root.uri, 60_000)
  try {
    const admin = client.db('admin')
    const hello = await admin.command({ hello: 1 })
    if (typeof hello.setName === 'string') {
      if (hello.setName !== root.replicaSet) throw new StackError(`MongoDB belongs to replica set "${hello.setName}", database.uri names "${root.replicaSet}"`)
      say(`replica set ${root.replicaSet} already initiated`)
    } else {
      try {
        await admin.command({ replSetInitiate: { _id: root.replicaSet, members: [{ _id: 0, host: root.member }] } })
        say(`replica set ${root.replicaSet} initiated with member ${root.member}`)
      } catch (error) {
        if ((error as { code?: number }).code !== ALREADY_INITIALIZED) throw error
        say(`replica set ${root.replicaSet} already initiated`)
      }
    }
    const deadline = Date.now() + 60_000
    while ((await admin.command({ hello: 1 })).isWritablePrimary !== true) {
      if (Date.now() > deadline) throw new StackError('MongoDB did not become primary within 60 s')
      await sleep(500)
    }

    const sync = syncDatabaseUser(config)
    try {
      await client.db(sync.authSource).command({
        createUser: sync.user,
        pwd: sync.password,
        roles: [{ role: 'readWrite', db: sync.database }]
      })
      say(`created the Sync database user "${sync.user}" (readWrite on ${sync.database} only)`)
    } catch (error) {
      if ((error as { code?: number }).code !== USER_EXISTS) throw error
      // Its password is not changed here: see docs/self-hosting.md, "Change a database password".
      say(`the Sync database user "${sync.user}" exists`)
    }
  } finally {
    await client.close()
  }
}

// The scheduler's last call, for its health check; in the container's own /tmp, as it is no secret.
const SCHEDULER_STATUS = join(tmpdir(), 'calendar-scheduler-status.json')

interface SchedulerStatus { at: number, ok: boolean, everyMs: number }

async function readSchedulerFile (path: string): Promise<SchedulerFile> {
  let parsed: unknown
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'))
  } catch {
    throw new StackError(`cannot read ${path} (the config step writes it into the scheduler's volume)`)
  }
  if (!Value.Check(SchedulerFileSchema, parsed)) throw new StackError(`${path} is not a scheduler file; run the config step again`)
  return parsed
}

// The loop's lines, in the stack steps' own voice: its calls on stdout, its failures on stderr.
const MAINTENANCE_LOG: MaintenanceLog = {
  info: say,
  error: (line) => { process.stderr.write(`stack: ${line}\n`) }
}

async function maintenance (path: string, everyMinutes: number, once: boolean): Promise<void> {
  const caller = await readSchedulerFile(path)
  if (once) {
    await maintainOrReport(caller, MAINTENANCE_LOG)
    return
  }
  if (!Number.isFinite(everyMinutes) || everyMinutes < 1) throw new StackError('--every-minutes must be a number of minutes, at least 1')
  const everyMs = everyMinutes * 60_000
  await maintenanceLoop(caller, {
    everyMs,
    log: MAINTENANCE_LOG,
    afterRun: async (ok) => {
      const status: SchedulerStatus = { at: Date.now(), ok, everyMs }
      await writeFile(SCHEDULER_STATUS, JSON.stringify(status))
    }
  })
}

/** Healthy while the last call was accepted and the next one is not overdue. */
async function schedulerHealth (): Promise<void> {
  let status: SchedulerStatus
  try {
    status = JSON.parse(await readFile(SCHEDULER_STATUS, 'utf8')) as SchedulerStatus
  } catch {
    throw new StackError('the scheduler has made no call yet')
  }
  if (!status.ok) throw new StackError('the scheduler\'s last maintenance call was refused or failed')
  if (Date.now() - status.at > 2 * status.everyMs + 60_000) throw new StackError('the scheduler\'s calls are overdue')
}

async function health (service: string, env: NodeJS.ProcessEnv): Promise<void> {
  if (service === 'scheduler') {
    await schedulerHealth()
    return
  }
  const url = service === 'backend'
    ? `http://127.0.0.1:${loadConfig({ argv: [], env, service: 'backend' }).config.backend.port}/api/health`
    : service === 'sync'
      ? `http://127.0.0.1:${loadConfig({ argv: [], env, service: 'sync' }).config.sync.port}/health/ready`
      : undefined
  if (url === undefined) throw new StackError('health needs backend, sync or scheduler')
  const response = await fetch(url, { signal: AbortSignal.timeout(3000) })
  if (response.status !== 200) throw new StackError(`${service} answered ${response.status}`)
}

async function main (argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      out: { type: 'string' },
      caller: { type: 'string' },
      'every-minutes': { type: 'string' },
      once: { type: 'boolean' }
    }
  })
  const [command, service] = positionals
  if (command === 'files') {
    await files(resolve(values.config ?? env.CONFIG_FILE ?? 'config.yaml'), resolve(values.out ?? '/stack'), env)
  } else if (command === 'database') {
    await database(env)
  } else if (command === 'health') {
    await health(service ?? '', env)
  } else if (command === 'maintenance') {
    await maintenance(resolve(values.caller ?? `/run/calendar/${SCHEDULER_FILE}`), Number(values['every-minutes'] ?? '30'), values.once === true)
  } else {
    throw new StackError('usage: node dist/bin/stack-steps.js files [--config FILE] [--out DIR] | database | health backend|sync|scheduler | maintenance [--caller FILE] [--every-minutes N] [--once]')
  }
}

try {
  await main(process.argv.slice(2), process.env)
} catch (error) {
  const message = error instanceof ConfigError ? error.message : `stack: ${(error as Error).message.split('\n')[0]}`
  process.stderr.write(`${message}\n`)
  process.exitCode = 1
}
