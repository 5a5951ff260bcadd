import { spawn, type ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

const root = new URL('../', import.meta.url).pathname

export interface RunningProcess {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  // Both streams, in arrival order.
  output: () => string
  exited: Promise<number | null>
}

// A TypeScript entry point of this repository run as its own Node process, the way a user runs it.
// It is killed when the test ends, if it is still running.
export function startScript (t: Test, script: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): RunningProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: root,
    env: { ...process.env, CONFIG_FILE: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  let output = ''
  child.stdout?.on('data', (chunk) => { stdout += chunk; output += chunk })
  child.stderr?.on('data', (chunk) => { stderr += chunk; output += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return { child, stdout: () => stdout, stderr: () => stderr, output: () => output, exited }
}

const temporaryDirectories: string[] = []
process.once('exit', () => {
  for (const directory of temporaryDirectories) rmSync(directory, { recursive: true, force: true })
})

/** A new directory under the system's temporary one, removed when this test process ends. */
export async function temporaryDirectory (prefix = 'calendar-test-'): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), prefix))
  temporaryDirectories.push(directory)
  return directory
}

export async function writeTempFile (name: string, text: string): Promise<string> {
  const dir = await temporaryDirectory()
  const path = join(dir, name)
  await writeFile(path, text)
  return path
}

export async function waitFor (condition: () => boolean | Promise<boolean>, timeoutMs: number, stopEarly: () => boolean = () => false): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline && !stopEarly()) {
    if (await condition()) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return await condition()
}

/** Like waitFor, for conditions a test cannot go on without: fails the test with what it waited for. */
export async function waitUntil (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  if (!await waitFor(condition, timeoutMs)) throw new Error(`gave up waiting for ${what}`)
}

/**
 * fetch as a client does against a process that just started on a loaded machine: a 503 (a shed
 * request, with its Retry-After) is tried again after the wait it names, for up to `patienceMs`.
 * Any other answer, or a 503 past the patience, is returned as it came.
 */
export async function fetchPatiently (url: string, init: RequestInit, patienceMs = 30_000): Promise<Response> {
  const until = Date.now() + patienceMs
  for (;;) {
    const answer = await fetch(url, init)
    // Seconds, as this service sends it; anything else (an HTTP date) is taken as one second.
    const seconds = Number(answer.headers.get('retry-after'))
    const wait = (Number.isFinite(seconds) && seconds > 0 ? seconds : 1) * 1000
    if (answer.status !== 503 || Date.now() + wait > until) return answer
    await answer.body?.cancel()
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}
