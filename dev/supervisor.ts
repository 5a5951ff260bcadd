// Keeps one child process of the local stack running the way a container restart policy
// (`restart: unless-stopped`) does: a child that exits without being asked to is started again
// after a delay from the code base's one backoff function, and the attempt count starts over once
// a child has stayed up for a stable period, so a crash an hour later waits briefly again. A child
// that keeps dying is restarted forever at the capped delay: the stack never gives up on it, and
// never exits because of it.
import { backoffDelay, type BackoffPolicy } from '../lib/backoff.js'

/** What the supervisor needs of a child process; node's ChildProcess has it. */
export interface SupervisedChild {
  readonly pid?: number | undefined
  kill (signal?: NodeJS.Signals): boolean
  once (event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown
  on (event: 'error', listener: (err: Error) => void): unknown
}

/** Time as the supervisor sees it; tests pass a manual clock. */
export interface SupervisorClock {
  now (): number
  setTimeout (callback: () => void, ms: number): unknown
  clearTimeout (handle: unknown): void
}

const systemClock: SupervisorClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => { clearTimeout(handle as NodeJS.Timeout) }
}

export interface SupervisorOptions {
  /** Used in every log line, e.g. "Sync service". */
  name: string
  /** Starts one instance of the child. Called again for every restart. */
  start: () => SupervisedChild
  /** Restart delays; by default at most 0.5 s first, doubling up to 30 s. */
  backoff?: BackoffPolicy
  /** A child that ran this long before it exited restarts as if for the first time. */
  stableAfterMs?: number
  /** stop() sends SIGTERM, then SIGKILL after this long (a container runtime's grace period). */
  killAfterMs?: number
  log?: (line: string) => void
  clock?: SupervisorClock
  random?: () => number
}

export interface Supervisor {
  readonly name: string
  /** The running instance's pid; undefined while waiting to restart or once stopped. */
  readonly pid: number | undefined
  /** Restarts since the last stable period (0 while the first instance runs). */
  readonly attempt: number
  /** From now on an exit is final, and a pending restart is cancelled; the running instance is left alone. */
  stopRestarting (): void
  /** Stops supervising and ends the running instance; resolves once it has exited. */
  stop (): Promise<void>
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 500, capMs: 30_000 }
const DEFAULT_STABLE_AFTER_MS = 30_000
const DEFAULT_KILL_AFTER_MS = 10_000

function describeExit (child: SupervisedChild, code: number | null, signal: NodeJS.Signals | null): string {
  const pid = child.pid === undefined ? '' : ` (pid ${child.pid})`
  return `${pid} exited with ${signal !== null ? `signal ${signal}` : `exit code ${code ?? 'unknown'}`}`
}

function errorMessage (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

export function supervise (options: SupervisorOptions): Supervisor {
  const clock = options.clock ?? systemClock
  const backoff = options.backoff ?? DEFAULT_BACKOFF
  const stableAfterMs = options.stableAfterMs ?? DEFAULT_STABLE_AFTER_MS
  const killAfterMs = options.killAfterMs ?? DEFAULT_KILL_AFTER_MS
  const log = options.log ?? ((line: string) => { process.stderr.write(`${line}\n`) })
  const random = options.random ?? Math.random

  let child: SupervisedChild | undefined
  let exited: Promise<void> = Promise.resolve()
  let restartTimer: unknown
  let attempt = 0
  let restarting = true
  let stopping: Promise<void> | undefined

  function launch (restart: boolean): void {
    restartTimer = undefined
    const startedAt = clock.now()
    let instance: SupervisedChild
    try {
      instance = options.start()
    } catch (err) {
      scheduleRestart(` could not be started (${errorMessage(err)})`, 0)
      return
    }
    child = instance
    let ended = false
    exited = new Promise<void>((resolve) => {
      const end = (reason: string) => {
        if (ended) return
        ended = true
        if (child === instance) child = undefined
        resolve()
        if (restarting) scheduleRestart(reason, clock.now() - startedAt)
      }
      instance.once('exit', (code, signal) => { end(describeExit(instance, code, signal)) })
      // A child that could not be started at all reports an error and never an exit; other
      // errors (a failed kill) change nothing about whether it runs.
      instance.on('error', (err) => {
        if (instance.pid === undefined) end(` could not be started (${err.message})`)
      })
    })
    if (restart && instance.pid !== undefined) log(`local stack: ${options.name} started again (pid ${instance.pid})`)
  }

  // `reason` completes "<name>...", e.g. " (pid 7) exited with signal SIGKILL".
  function scheduleRestart (reason: string, uptimeMs: number): void {
    if (uptimeMs >= stableAfterMs) attempt = 0
    const delay = backoffDelay(attempt, backoff, random)
    attempt += 1
    log(`local stack: ${options.name}${reason}; restarting in ${delay} ms (attempt ${attempt})`)
    restartTimer = clock.setTimeout(() => { launch(true) }, delay)
  }

  function stopRestarting (): void {
    restarting = false
    if (restartTimer !== undefined) {
      clock.clearTimeout(restartTimer)
      restartTimer = undefined
    }
  }

  function stop (): Promise<void> {
    stopping ??= terminate()
    return stopping
  }

  async function terminate (): Promise<void> {
    stopRestarting()
    const running = child
    if (running === undefined) return
    const done = exited
    running.kill('SIGTERM')
    const escalate = clock.setTimeout(() => {
      log(`local stack: ${options.name} did not stop within ${killAfterMs} ms; killing it`)
      running.kill('SIGKILL')
    }, killAfterMs)
    await done
    clock.clearTimeout(escalate)
  }

  launch(false)
  return {
    name: options.name,
    get pid () { return child?.pid },
    get attempt () { return attempt },
    stopRestarting,
    stop
  }
}
