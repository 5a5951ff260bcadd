// A backend app in this process for benchmarks that measure the process itself (memory, event
// loop), with the MongoDB stand-in in a process of its own so that its work and data are not
// counted, and a session core in memory. Sync is absent: reports wait in the outbox.
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'yaml'
import app, { initSessionLibrary, serverOptions } from '../app.js'
import { parseConfig } from '../lib/config.js'
import { startSessionCore } from '../dev/session-core/index.js'

export interface BenchBackend {
  backend: FastifyInstance
  /** The database's process, for benchmarks that stop it (SIGSTOP) as a hung server. */
  database: ChildProcess
  /** Signs up a user; the headers a native client sends for them. */
  user: (email: string) => Promise<Record<string, string>>
  close: () => Promise<void>
}

/**
 * The MongoDB stand-in in a process of its own, so that its work is not counted as the backend's
 * (and so that a benchmark can stop it); `replicaSet` for a service that runs transactions.
 */
export async function startMongoProcess (options: { replicaSet?: boolean } = {}): Promise<{ process: ChildProcess, uri: string }> {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const mongo = spawn(process.execPath, ['--import', 'tsx', 'dev/mongo/cli.ts', ...(options.replicaSet === true ? ['--replica-set', 'rs0'] : [])], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
  const uri = await new Promise<string>((resolve, reject) => {
    let output = ''
    mongo.stdout.on('data', (chunk) => {
      output += chunk
      const match = /mongodb:\/\/\S+/.exec(output)
      if (match) resolve(match[0])
    })
    mongo.once('exit', () => reject(new Error(`the MongoDB stand-in stopped: ${output}`)))
  })
  return { process: mongo, uri }
}

export async function startBenchBackend (database: string): Promise<BenchBackend> {
  const { process: mongo, uri: mongoUri } = await startMongoProcess()
  const core = await startSessionCore({ apiKey: 'bench-session-core-api-key' })
  const withDatabase = (name: string) => {
    const url = new URL(mongoUri)
    url.pathname = `/${name}`
    return url.toString()
  }
  const { config } = parseConfig(stringify({
    runtime: { nodeEnv: 'test', timezone: 'UTC', logLevel: 'error' },
    web: { url: 'http://localhost:9080' },
    backend: { apiUrl: 'http://localhost:3000/api', originsAllowed: ['http://localhost:9080'], serviceToken: 'bench-service-token' },
    database: { uri: withDatabase(database) },
    sessions: { uri: core.uri, key: 'bench-session-core-api-key' },
    sync: { databaseUri: withDatabase(`sync_${database}`), internalAuthToken: 'bench-internal-auth-token-0123456789', callbackBaseUrl: 'http://localhost:3010', postConnectRedirectUrl: 'http://localhost:9080', serviceUrl: 'http://127.0.0.1:9' }
  }), 'backend')
  const backend = Fastify({ ...serverOptions(config), logger: { level: 'fatal' } })
  // What is measured is the work of a request, not whether a busy machine sheds it.
  initSessionLibrary(config, backend.log)
  await backend.register(fp(app), { config, loadShedding: { maxEventLoopDelayMs: 10_000 } })
  await backend.ready()
  return {
    backend,
    database: mongo,
    user: async (email) => {
      const signUp = await backend.inject({
        method: 'POST',
        url: '/api/auth/signup',
        headers: { 'sx-auth-mode': 'header' },
        payload: { formFields: [{ id: 'email', value: email }, { id: 'password', value: 'bench password 1' }, { id: 'name', value: 'Bench' }] }
      })
      return { authorization: `Bearer ${String(signUp.headers['sx-access-token'])}` }
    },
    close: async () => {
      await backend.close()
      await core.close()
      mongo.kill('SIGINT')
    }
  }
}
