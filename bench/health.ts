// GET /api/health of the full backend app against a bare node:http handler that does the same
// work (one database ping through the same driver, the same JSON and response headers),
// alternating, no pipelining.
// The ratio is the cost of the framework, plugins and hooks. Target: at least 0.9.
// The servers under test, the database and the load generator each run in their own process.
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { compare, measure } from './load.js'
import { startMongoProcess } from './backend-process.js'

const root = fileURLToPath(new URL('..', import.meta.url))

const { process: mongo, uri: mongoUri } = await startMongoProcess()

const target = fork(fileURLToPath(new URL('health-target.ts', import.meta.url)), [], {
  cwd: root,
  execArgv: ['--import', 'tsx', ...(process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [])],
  env: { ...process.env, BENCH_MONGO_URI: mongoUri }
})
const ports = await new Promise<{ backend: number, bare: number }>((resolve) => target.once('message', (message) => resolve(message as { backend: number, bare: number })))
const backendOrigin = `http://127.0.0.1:${ports.backend}`
const bareOrigin = `http://127.0.0.1:${ports.bare}`

// Warm both paths before measuring.
await measure(bareOrigin, '/', { durationMs: 500 })
await measure(backendOrigin, '/api/health', { durationMs: 500 })

const result = await compare(5, () => measure(bareOrigin, '/'), () => measure(backendOrigin, '/api/health'))
console.log(`health: bare node:http ${result.baseline.toFixed(0)} req/s, backend ${result.subject.toFixed(0)} req/s, ratio ${result.ratio.toFixed(2)} (target >= 0.90)`)

target.disconnect()
await new Promise((resolve) => target.once('exit', resolve))
mongo.kill('SIGINT')
