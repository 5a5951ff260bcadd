// Runs the tap suite under c8 and ends with one plain summary line ("tests: N passed, N failed"),
// which any CI reader understands, while keeping tap's own output intact. c8 collects the
// coverage of every process the tests start; the report afterwards fails the run when it falls
// below the floors in .c8rc.json (which only go up).
//
// The suite runs in two stages. Most files run several at a time: they wait on sockets and child
// processes far more than they compute, and each keeps its own ports, databases and users. The
// few that must see the production deadlines and real-time thresholds (a database call given
// 2.5 s, a shed request, a shutdown's grace) run afterwards one at a time, on a machine nothing
// else is loading. Each stage's duration and the slowest files are printed at the end.
//
// `tsx test/run.ts FILE...` runs only the given files (in the stage each belongs to).
import { spawn } from 'node:child_process'
import { generateKeyPair } from 'node:crypto'
import { readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, resolve, sep } from 'node:path'
import { promisify } from 'node:util'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { dropMinorityCompilations } from './coverage-variants.js'
import { RSA_KEY_POOL_VARIABLE } from '../dev/rsa-keys.js'
import { SCRYPT_COST_VARIABLE } from '../dev/session-core/passwords.js'

/** The heap c8 merges the suite's coverage in (the machine has 24 GiB; the default stops near 4). */
const COVERAGE_HEAP_MB = 16_384
/** Files side by side in the first stage: on two cores, four keep both busy while each mostly waits. */
const PARALLEL_JOBS = 4
/** Files that hold the production deadlines to account: run alone, after the others. */
export const SERIAL_FILES = [
  'test/backend/database-faults.test.ts',
  'test/sync/database-faults.test.ts',
  'test/backend/session-core-faults.test.ts',
  'test/events/bounded-cost.test.ts',
  'test/backend/shutdown.test.ts'
]
const SLOWEST_SHOWN = 10
/**
 * The session-core stand-in's password hashing cost in the run: the suite makes thousands of
 * accounts, and at the default (32 MiB per hash) each sign-up or sign-in costs about 100 ms of a
 * core, several seconds on a loaded machine. The work an unknown email costs stays equal to a wrong
 * password's at any cost (test/backend/auth-limits.test.ts).
 */
const TEST_SCRYPT_COST = 1024
/** RSA keys the stand-ins of every file take their signing keys from (dev/rsa-keys.ts), made once per run. */
const RSA_KEY_POOL_SIZE = 32

const root = fileURLToPath(new URL('..', import.meta.url))

// c8 reads every process's coverage into one heap when it merges, past Node's default limit; its
// own process gets room for it (the tests' processes keep their defaults).
const C8 = [`--max-old-space-size=${COVERAGE_HEAP_MB}`, fileURLToPath(import.meta.resolve('c8/bin/c8.js'))]
const summaryPattern = /^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?/
const filePattern = /^(?:not )?ok \d+ - (\S+\.test\.ts) # time=([\d.]+)ms/
const failurePattern = /^\s*not ok \d+ - /
/** Failed files, subtests and assertions repeated at the end, so a CI log cut to its tail still names them. */
const FAILURES_SHOWN = 40

interface Summary { total: number, pass: number, fail: number }
interface StageResult { name: string, files: number, seconds: number, code: number | null, summary: Summary | undefined, times: Array<[string, number]>, failures: string[] }

async function testFiles (directory: string): Promise<string[]> {
  const found: string[] = []
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) found.push(...await testFiles(path))
    else if (entry.name.endsWith('.test.ts')) found.push(relative(root, path).split(sep).join('/'))
  }
  return found.sort()
}

/** One tap run under c8 over `files`; the coverage of a later stage is added to the earlier one's. */
async function runStage (name: string, files: string[], jobs: number, first: boolean): Promise<StageResult> {
  const began = Date.now()
  const child = spawn(process.execPath, [...C8, '--check-coverage=false', '--reporter=none', `--clean=${first}`, 'tap', `--jobs=${jobs}`, ...files], { cwd: root, stdio: ['inherit', 'pipe', 'inherit'] })
  let summary: Summary | undefined
  const times: Array<[string, number]> = []
  const failures: string[] = []
  createInterface({ input: child.stdout }).on('line', (line) => {
    process.stdout.write(line + '\n')
    const match = summaryPattern.exec(line)
    if (match) summary = { total: Number(match[1]), pass: Number(match[2] ?? 0), fail: Number(match[3] ?? 0) }
    const file = filePattern.exec(line)
    if (file) times.push([file[1] as string, Number(file[2]) / 1000])
    if (failurePattern.test(line)) failures.push(line)
  })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { name, files: files.length, seconds: (Date.now() - began) / 1000, code, summary, times, failures }
}

async function coverageReport (): Promise<number> {
  const { 'temp-directory': directory } = JSON.parse(await readFile(join(root, '.c8rc.json'), 'utf8')) as { 'temp-directory': string }
  for (const [url, processes] of await dropMinorityCompilations(join(root, directory), root)) {
    process.stdout.write(`# coverage: ${processes} process(es) compiled ${url} differently; their coverage of it is left out\n`)
  }
  const report = spawn(process.execPath, [...C8, 'report'], { cwd: root, stdio: 'inherit' })
  return await new Promise((resolve) => report.on('close', (code) => { resolve(code ?? 1) }))
}

/** Writes the run's pool of stand-in signing keys and names it to every process the run starts. */
async function keyPool (): Promise<string> {
  const file = join(tmpdir(), `calendar-test-keys-${process.pid}.json`)
  const keys = await Promise.all(Array.from({ length: RSA_KEY_POOL_SIZE }, async () =>
    (await promisify(generateKeyPair)('rsa', { modulusLength: 2048 })).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()))
  await writeFile(file, JSON.stringify(keys), { mode: 0o600 })
  process.env[RSA_KEY_POOL_VARIABLE] = file
  return file
}

const pool = await keyPool()
process.env[SCRYPT_COST_VARIABLE] ??= String(TEST_SCRYPT_COST)
const asked = process.argv.slice(2)
const files = asked.length > 0 ? asked.map((file) => relative(root, resolve(process.cwd(), file)).split(sep).join('/')) : await testFiles(join(root, 'test'))
const serial = files.filter((file) => SERIAL_FILES.includes(file))
const parallel = files.filter((file) => !SERIAL_FILES.includes(file))
const stages: StageResult[] = []
const filesNamed = (count: number): string => `${count} file${count === 1 ? '' : 's'}`
if (parallel.length > 0) stages.push(await runStage(`${filesNamed(parallel.length)}, ${PARALLEL_JOBS} at a time`, parallel, PARALLEL_JOBS, true))
if (serial.length > 0) stages.push(await runStage(`${filesNamed(serial.length)} that keep production deadlines, one at a time`, serial, 1, stages.length === 0))
await rm(pool, { force: true })

const total = stages.reduce((sum, stage) => sum + (stage.summary?.total ?? 0), 0)
const pass = stages.reduce((sum, stage) => sum + (stage.summary?.pass ?? 0), 0)
const fail = stages.reduce((sum, stage) => sum + (stage.summary?.fail ?? 0), 0)
for (const stage of stages) process.stdout.write(`# stage: ${stage.name}: ${Math.round(stage.seconds)} s, exit ${stage.code ?? 'signal'}\n`)
const slowest = stages.flatMap((stage) => stage.times).sort((a, b) => b[1] - a[1]).slice(0, SLOWEST_SHOWN)
const failures = stages.flatMap((stage) => stage.failures)
if (failures.length > 0) process.stdout.write(`# failed (each assertion, then the tests around it and its file):\n${failures.slice(0, FAILURES_SHOWN).map((line) => `#   ${line}\n`).join('')}`)
process.stdout.write(`# slowest files:\n${slowest.map(([file, seconds]) => `#   ${seconds.toFixed(1).padStart(6)} s  ${file}\n`).join('')}`)
if (total === 0) {
  process.stdout.write('tests: 0 passed, 1 failed (no test ran)\n')
  process.exit(1)
}
const coverageBegan = Date.now()
let coverage: number
try {
  coverage = await coverageReport()
} catch (error) {
  process.stdout.write(`coverage report failed: ${String(error)}\ntests: ${pass} passed, 1 failed\n`)
  process.exit(1)
}
process.stdout.write(`# stage: coverage report: ${Math.round((Date.now() - coverageBegan) / 1000)} s\n`)
const stagesFailed = stages.some((stage) => stage.code !== 0 || stage.summary === undefined)
const failed = fail > 0 ? fail : (!stagesFailed && coverage === 0 ? 0 : 1)
process.stdout.write(`tests: ${pass} passed, ${failed} failed\n`)
process.exit(failed === 0 ? 0 : 1)
