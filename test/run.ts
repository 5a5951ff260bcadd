// Runs the tap suite with V8 coverage and ends with one plain summary line ("tests: N passed, N
// failed"), which any CI reader understands, while keeping tap's own output: each file's TAP as a
// subtest, then its `ok`/`not ok` line. Most files share a process with a few others, one after
// another (test/batch.ts), so the app's modules are loaded once per batch; the longest and a few
// others run alone (`node --import=tsx FILE`, as `npx tap FILE` runs it). Every process has
// `NODE_V8_COVERAGE` set, so every process the tests start writes
// its coverage; the report afterwards (c8) fails the run when it falls below the floors in
// .c8rc.json (which only go up). The runner is this file rather than tap's, which adds a process-
// tracking loader to every process the tests start (for a coverage mode this suite does not use)
// and runs files in name order; here the longest files start first, so none of them is left to run
// alone at the end.
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
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, resolve, sep } from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserServer } from 'playwright-core'
import { parse } from 'yaml'
import { dropMinorityCompilations } from './coverage-variants.js'
import { FILE_END_PREFIX } from './batch-marks.js'
import { RSA_KEY_POOL_VARIABLE } from '../dev/rsa-keys.js'
import { SCRYPT_COST_VARIABLE } from '../dev/session-core/passwords.js'
import { BROWSER_ENDPOINT_VARIABLE, CHROMIUM, CHROMIUM_ARGS } from './web/chromium.js'

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
  'test/backend/shutdown.test.ts',
  // Two backends and two Sync processes with the production deadlines, through a connect.
  'test/e2e/two-of-each.test.ts',
  // How long a parse holds Sync's event loop, which a loaded machine stretches by itself.
  'test/sync/caldav/hostile-servers.test.ts'
]
const SLOWEST_SHOWN = 10
/**
 * Files that take minutes (each starts whole stacks or builds the images' code), or a minute
 * among short ones: started first, alone, then the end-to-end and browser files, so that the last
 * processes to start are short ones.
 */
const LONGEST_FILES = [
  'test/dev/local-stack.test.ts', 'test/dev/backup-restore.test.ts', 'test/deploy/build.test.ts', 'test/deploy/setup.test.ts',
  'test/sync/microsoft/writes.test.ts', 'test/config/startup.test.ts'
]
const LONG_DIRECTORIES = ['test/e2e/', 'test/web/']
/**
 * Files that share a process (test/batch.ts), this many to one: each process first spends several
 * seconds of a core loading the app's modules, more than most files' own tests take. The long
 * files (whole stacks, a browser) share in smaller batches, so that no batch is left running
 * alone at the end.
 */
const BATCH_SIZE = 12
const LONG_BATCH_SIZE = 5
/**
 * Files that keep a process to themselves: the longest, and those that need the session core of
 * the process to have other token lifetimes (test/helper.ts starts one per process).
 */
const ALONE_FILES = [
  'test/backend/token-expiry.test.ts',
  'test/client/session.test.ts',
  'test/dev/session-core/startup.test.ts'
]
// The deploy files run the production build and its compiled processes; beside build and setup
// (among the longest) the rest are few and have not been tried in a batch.
const ALONE_DIRECTORIES = ['test/deploy/']

function runsAlone (file: string): boolean {
  return LONGEST_FILES.includes(file) || ALONE_FILES.includes(file) || SERIAL_FILES.includes(file) || ALONE_DIRECTORIES.some((prefix) => file.startsWith(prefix))
}

function batchesOf (files: string[], size: number): string[][] {
  return Array.from({ length: Math.ceil(files.length / size) }, (_, index) => files.slice(index * size, (index + 1) * size))
}

/** The processes of a stage: the files that run alone, one each; the others in batches, neighbours together. */
function jobsOf (files: string[]): string[][] {
  const shared = files.filter((file) => !runsAlone(file)).sort()
  const long = (file: string): boolean => LONG_DIRECTORIES.some((prefix) => file.startsWith(prefix))
  return [
    ...files.filter(runsAlone).map((file) => [file]),
    ...batchesOf(shared.filter(long), LONG_BATCH_SIZE),
    ...batchesOf(shared.filter((file) => !long(file)), BATCH_SIZE)
  ]
}

function startRank (file: string): number {
  const long = LONGEST_FILES.indexOf(file)
  if (long >= 0) return long
  const directory = LONG_DIRECTORIES.findIndex((prefix) => file.startsWith(prefix))
  return LONGEST_FILES.length + (directory >= 0 ? directory : LONG_DIRECTORIES.length)
}
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
const BATCH_SCRIPT = 'test/batch.ts'
/** A file's time limit: `timeout` in .taprc, the one `npx tap FILE` keeps to. */
const FILE_TIMEOUT_SECONDS = (parse(await readFile(join(root, '.taprc'), 'utf8')) as { timeout: number }).timeout
/** Where every process of the run writes its V8 coverage, and c8 reads it from (`temp-directory` in .c8rc.json). */
const coverageDirectory = join(root, (JSON.parse(await readFile(join(root, '.c8rc.json'), 'utf8')) as { 'temp-directory': string })['temp-directory'])

// c8 reads every process's coverage into one heap when it merges, past Node's default limit; its
// own process gets room for it (the tests' processes keep their defaults).
const C8 = [`--max-old-space-size=${COVERAGE_HEAP_MB}`, fileURLToPath(import.meta.resolve('c8/bin/c8.js'))]
const failurePattern = /^\s*not ok \d+ - /
/** Failed files, subtests and assertions repeated at the end, so a CI log cut to its tail still names them. */
const FAILURES_SHOWN = 40

interface Summary { total: number, pass: number, fail: number }
interface StageResult { name: string, files: number, seconds: number, ok: boolean, summary: Summary, times: Array<[string, number]>, failures: string[] }

async function testFiles (directory: string): Promise<string[]> {
  const found: string[] = []
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) found.push(...await testFiles(path))
    else if (entry.name.endsWith('.test.ts')) found.push(relative(root, path).split(sep).join('/'))
  }
  return found.sort()
}

/** Counts of one file's root test, as its process prints them (`# { total: 3, pass: 2, fail: 1 }`). */
function countsOf (output: string): Summary | undefined {
  const line = /^# \{ (total: \d+[^}]*)\}$/m.exec(output)?.[1]
  if (line === undefined) return undefined
  const count = (key: string): number => Number(new RegExp(`\\b${key}: (\\d+)`).exec(line)?.[1] ?? 0)
  return { total: count('total'), pass: count('pass') + count('skip') + count('todo'), fail: count('fail') }
}

interface FileResult { file: string, seconds: number, ok: boolean, output: string }
interface JobResult { files: FileResult[], counts: Summary }

/** A top-level test's line in a process's TAP: `ok 3 - name # time=12.5ms`. */
const topLevelLine = /^(not )?ok \d+ - (.*?)(?: # time=([\d.]+)ms)?$/

/**
 * Splits a batch's TAP into its files' parts at the test that ends each file (test/batch.ts). A
 * file's time is its tests' own; a file with a failed test, or whose end never came (the process
 * died first), failed.
 */
function filesOf (files: string[], output: string, began: number, processOk: boolean, ending: string): FileResult[] {
  if (files.length === 1) return [{ file: files[0] as string, seconds: (Date.now() - began) / 1000, ok: processOk, output }]
  const results: FileResult[] = []
  let lines: string[] = []
  let seconds = 0
  let ok = true
  for (const line of output.split('\n')) {
    const match = topLevelLine.exec(line)
    const ended = match?.[2]?.startsWith(FILE_END_PREFIX) === true ? match[2].slice(FILE_END_PREFIX.length) : undefined
    if (match !== null) {
      seconds += Number(match[3] ?? 0) / 1000
      if (match[1] !== undefined) ok = false
    }
    if (ended === undefined) {
      lines.push(line)
      continue
    }
    // The ending test's own lines are the runner's, not the file's, unless it failed (a file that did not load).
    const header = lines.lastIndexOf(`# Subtest: ${FILE_END_PREFIX}${ended}`)
    if (match?.[1] === undefined && header >= 0) lines = lines.slice(0, header)
    else lines.push(line)
    results.push({ file: ended, seconds, ok, output: `${lines.join('\n')}\n` })
    lines = []
    seconds = 0
    ok = true
  }
  const unfinished = files.slice(results.length)
  const rest = lines.join('\n')
  for (const [index, file] of unfinished.entries()) {
    results.push({ file, seconds: 0, ok: false, output: `${index === 0 ? rest : ''}\nnot ok 1 - ${file} did not finish: the process it shared ${ending}\n` })
  }
  return results
}

/**
 * One process: a file alone, as `npx tap FILE` would run it, or several in a batch
 * (test/batch.ts). tap's own timeout ends a process that outlives it with its TAP intact; one that
 * does not end after that is killed.
 */
async function runJob (files: string[]): Promise<JobResult> {
  const began = Date.now()
  const timeoutSeconds = FILE_TIMEOUT_SECONDS * files.length
  const child = spawn(process.execPath, ['--import=tsx', ...(files.length === 1 ? files : [BATCH_SCRIPT, ...files])], {
    cwd: root,
    env: { ...process.env, TAP_TIMEOUT: String(timeoutSeconds), NODE_V8_COVERAGE: coverageDirectory },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  const backstop = setTimeout(() => { try { process.kill(-(child.pid ?? 0), 'SIGKILL') } catch {} }, (timeoutSeconds + 60) * 1000)
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (exitCode, exitSignal) => { resolve([exitCode, exitSignal]) }))
  clearTimeout(backstop)
  const reported = countsOf(output)
  // The tests that end a batch's files hold no assertion of their own.
  const ends = output.split('\n').filter((line) => topLevelLine.exec(line)?.[2]?.startsWith(FILE_END_PREFIX) === true && line.startsWith('ok ')).length
  const ok = code === 0 && reported !== undefined && reported.fail === 0 && reported.total > ends
  let counts = reported === undefined ? { total: 0, pass: 0, fail: 0 } : { ...reported, total: reported.total - ends, pass: reported.pass - ends }
  const ending = `ended with ${signal ?? `exit code ${String(code)}`}${reported === undefined ? ' before its counts' : ''}`
  if (!ok && counts.fail === 0) {
    // A process that crashed, outlived its time or printed no counts is a failure, whatever its assertions said.
    counts = { ...counts, total: counts.total + 1, fail: 1 }
    output += `not ok ${counts.total} - the process ${ending}\n`
  }
  const results = filesOf(files, output, began, ok, ending)
  if (!ok && results.every((result) => result.ok)) results[results.length - 1] = { ...results[results.length - 1] as FileResult, ok: false }
  return { files: results, counts }
}

/** The files of a stage, `jobs` processes at a time, the longest first; each file's TAP is printed as it ends. */
async function runStage (name: string, files: string[], jobs: number): Promise<StageResult> {
  const began = Date.now()
  const queue = jobsOf(files).sort((a, b) => startRank(a[0] as string) - startRank(b[0] as string) || (a[0] as string).localeCompare(b[0] as string))
  const results: FileResult[] = []
  let summary: Summary = { total: 0, pass: 0, fail: 0 }
  process.stdout.write(`TAP version 14\n1..${files.length}\n`)
  const worker = async (): Promise<void> => {
    for (let job = queue.shift(); job !== undefined; job = queue.shift()) {
      const result = await runJob(job)
      summary = { total: summary.total + result.counts.total, pass: summary.pass + result.counts.pass, fail: summary.fail + result.counts.fail }
      for (const file of result.files) {
        results.push(file)
        const body = file.output.split('\n').map((line) => line === '' ? '' : `    ${line}`).join('\n')
        process.stdout.write(`# Subtest: ${file.file}\n${body}${body.endsWith('\n') ? '' : '\n'}${file.ok ? 'ok' : 'not ok'} ${results.length} - ${file.file} # time=${(file.seconds * 1000).toFixed(3)}ms\n\n`)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(jobs, queue.length) }, worker))
  process.stdout.write(`# { total: ${summary.total}, pass: ${summary.pass}, fail: ${summary.fail} }\n`)
  const failures = results.filter((result) => !result.ok).flatMap((result) => [
    ...result.output.split('\n').filter((line) => failurePattern.test(line)).map((line) => `    ${line}`),
    `not ok - ${result.file}`
  ])
  return { name, files: files.length, seconds: (Date.now() - began) / 1000, ok: results.every((result) => result.ok), summary, times: results.map((result) => [result.file, result.seconds]), failures }
}

async function coverageReport (): Promise<number> {
  for (const [url, processes] of await dropMinorityCompilations(coverageDirectory, root)) {
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

/**
 * One Chromium for the run, when it holds browser files: each process connects to it and opens
 * contexts of its own (test/web/browser.ts), instead of starting a browser per process.
 */
async function sharedBrowser (runFiles: string[]): Promise<BrowserServer | undefined> {
  if (!runFiles.some((file) => file.startsWith('test/web/'))) return undefined
  const server = await chromium.launchServer({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true })
  process.env[BROWSER_ENDPOINT_VARIABLE] = server.wsEndpoint()
  return server
}

const pool = await keyPool()
process.env[SCRYPT_COST_VARIABLE] ??= String(TEST_SCRYPT_COST)
const asked = process.argv.slice(2)
const files = asked.length > 0 ? asked.map((file) => relative(root, resolve(process.cwd(), file)).split(sep).join('/')) : await testFiles(join(root, 'test'))
const serial = files.filter((file) => SERIAL_FILES.includes(file))
const parallel = files.filter((file) => !SERIAL_FILES.includes(file))
const stages: StageResult[] = []
const filesNamed = (count: number): string => `${count} file${count === 1 ? '' : 's'}`
await rm(coverageDirectory, { recursive: true, force: true })
await mkdir(coverageDirectory, { recursive: true })
const browser = await sharedBrowser(files)
if (parallel.length > 0) stages.push(await runStage(`${filesNamed(parallel.length)}, ${PARALLEL_JOBS} at a time`, parallel, PARALLEL_JOBS))
if (serial.length > 0) stages.push(await runStage(`${filesNamed(serial.length)} that keep production deadlines, one at a time`, serial, 1))
await rm(pool, { force: true })
await browser?.close()

const total = stages.reduce((sum, stage) => sum + stage.summary.total, 0)
const pass = stages.reduce((sum, stage) => sum + stage.summary.pass, 0)
const fail = stages.reduce((sum, stage) => sum + stage.summary.fail, 0)
for (const stage of stages) process.stdout.write(`# stage: ${stage.name}: ${Math.round(stage.seconds)} s, ${stage.ok ? 'passed' : 'failed'}\n`)
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
const stagesFailed = stages.some((stage) => !stage.ok)
const failed = fail > 0 ? fail : (!stagesFailed && coverage === 0 ? 0 : 1)
process.stdout.write(`tests: ${pass} passed, ${failed} failed\n`)
process.exit(failed === 0 ? 0 : 1)
