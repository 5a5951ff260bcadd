import { EventEmitter } from 'node:events'
import { test } from 'tap'
import { backoffDelay } from '../../lib/backoff.js'
import { DEFAULT_BACKOFF, supervise, type SupervisedChild, type SupervisorClock } from '../../dev/supervisor.js'

// A child process that does nothing until the test makes it exit, or until it is killed.
class FakeChild extends EventEmitter implements SupervisedChild {
  readonly signals: NodeJS.Signals[] = []
  constructor (readonly pid: number | undefined, private readonly obeys: NodeJS.Signals[] = ['SIGTERM', 'SIGKILL']) {
    super()
  }

  kill (signal: NodeJS.Signals = 'SIGTERM'): boolean {
    this.signals.push(signal)
    if (this.obeys.includes(signal)) setImmediate(() => this.exit(null, signal))
    return true
  }

  exit (code: number | null, signal: NodeJS.Signals | null = null): void {
    this.emit('exit', code, signal)
  }
}

// Timers fire only when the test moves the time forward.
class ManualClock implements SupervisorClock {
  time = 1_000_000
  private timers: Array<{ at: number, callback: () => void }> = []
  now (): number { return this.time }
  setTimeout (callback: () => void, ms: number): unknown {
    const timer = { at: this.time + ms, callback }
    this.timers.push(timer)
    return timer
  }

  clearTimeout (handle: unknown): void {
    this.timers = this.timers.filter((timer) => timer !== handle)
  }

  get pending (): number { return this.timers.length }

  advance (ms: number): void {
    this.time += ms
    for (const timer of this.timers.filter((t) => t.at <= this.time)) {
      this.clearTimeout(timer)
      timer.callback()
    }
  }
}

function harness (options: { obeys?: NodeJS.Signals[], random?: () => number } = {}) {
  const clock = new ManualClock()
  const children: FakeChild[] = []
  const lines: string[] = []
  const random = options.random ?? (() => 0.5)
  const supervisor = supervise({
    name: 'Sync service',
    start: () => {
      const child = new FakeChild(100 + children.length, options.obeys)
      children.push(child)
      return child
    },
    clock,
    random,
    log: (line) => { lines.push(line) }
  })
  const latest = (): FakeChild => {
    const child = children.at(-1)
    if (child === undefined) throw new Error('no child started')
    return child
  }
  return { clock, children, lines, supervisor, latest, random }
}

const delay = (attempt: number) => backoffDelay(attempt, DEFAULT_BACKOFF, () => 0.5)

test('a child that exits by itself is restarted after the backoff delay, each time logged on one line', async (t) => {
  const { clock, children, lines, supervisor, latest } = harness()
  t.equal(children.length, 1)
  t.equal(supervisor.pid, 100)

  latest().exit(1)
  t.equal(supervisor.pid, undefined, 'no instance while waiting')
  t.same(lines, [`local stack: Sync service (pid 100) exited with exit code 1; restarting in ${delay(0)} ms (attempt 1)`])
  clock.advance(delay(0) - 1)
  t.equal(children.length, 1, 'not before the delay')
  clock.advance(1)
  t.equal(children.length, 2, 'restarted once the delay is over')
  t.equal(supervisor.pid, 101)
  t.equal(lines[1], 'local stack: Sync service started again (pid 101)')

  // Dying again at once: the delay grows (full jitter around a doubling ceiling).
  latest().exit(null, 'SIGKILL')
  t.equal(lines[2], `local stack: Sync service (pid 101) exited with signal SIGKILL; restarting in ${delay(1)} ms (attempt 2)`)
  t.ok(delay(1) > delay(0))
  clock.advance(delay(1))
  latest().exit(0)
  t.match(lines[4], /exit code 0; restarting in \d+ ms \(attempt 3\)$/, 'a clean exit that nobody asked for is restarted too')
  t.equal(supervisor.attempt, 3)
  clock.advance(delay(2))
  t.equal(children.length, 4)
  await supervisor.stop()
})

test('a child that keeps dying is restarted forever, never sooner than the cap allows, never later', async (t) => {
  const { clock, children, lines, supervisor, latest } = harness({ random: () => 0.999999 })
  for (let i = 0; i < 40; i++) {
    latest().exit(1)
    clock.advance(DEFAULT_BACKOFF.capMs)
  }
  t.equal(children.length, 41, 'every exit led to a restart')
  const delays = lines.filter((line) => line.includes('restarting')).map((line) => Number(/in (\d+) ms/.exec(line)?.[1]))
  t.ok(delays.every((ms) => ms <= DEFAULT_BACKOFF.capMs), 'no delay beyond the cap')
  t.equal(delays.at(-1), DEFAULT_BACKOFF.capMs)
  t.ok(lines.some((line) => line.endsWith('(attempt 40)')), 'the count goes on, the stack never gives up')
  await supervisor.stop()
})

test('stop() ends the running child with SIGTERM and nothing is restarted', async (t) => {
  const { clock, children, lines, supervisor, latest } = harness()
  const child = latest()
  await supervisor.stop()
  t.same(child.signals, ['SIGTERM'])
  t.equal(supervisor.pid, undefined)
  t.equal(clock.pending, 0, 'no restart and no kill timer left')
  clock.advance(60_000)
  t.equal(children.length, 1)
  t.same(lines, [], 'nothing logged for an exit that was asked for')
})

test('stop() while a restart is pending cancels it', async (t) => {
  const { clock, children, supervisor, latest } = harness()
  latest().exit(1)
  t.equal(clock.pending, 1)
  await supervisor.stop()
  t.equal(clock.pending, 0)
  clock.advance(60_000)
  t.equal(children.length, 1)
})

test('stop() kills a child that ignores SIGTERM after the grace period; calling it twice is one stop', async (t) => {
  const { clock, supervisor, latest, lines } = harness({ obeys: ['SIGKILL'] })
  const child = latest()
  const first = supervisor.stop()
  const second = supervisor.stop()
  t.equal(first, second)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(child.signals, ['SIGTERM'])
  clock.advance(10_000)
  await first
  t.same(child.signals, ['SIGTERM', 'SIGKILL'])
  t.match(lines, ['local stack: Sync service did not stop within 10000 ms; killing it'])
})

test('the attempt count starts over once a child stayed up for the stable period', async (t) => {
  const { clock, lines, supervisor, latest } = harness()
  latest().exit(1)
  clock.advance(delay(0))
  latest().exit(1)
  clock.advance(delay(1))
  latest().exit(1)
  t.match(lines.at(-1), /attempt 3\)$/)
  clock.advance(delay(2))

  clock.advance(29_999)
  latest().exit(1)
  t.match(lines.at(-1), /attempt 4\)$/, 'up for less than 30 s: still counting')
  clock.advance(delay(3))

  clock.advance(30_000)
  latest().exit(1)
  t.equal(lines.at(-1), `local stack: Sync service (pid 104) exited with exit code 1; restarting in ${delay(0)} ms (attempt 1)`,
    'up for 30 s: the first delay again')
  t.equal(supervisor.attempt, 1)
  await supervisor.stop()
})

test('a child that cannot be started is retried like one that died', async (t) => {
  const clock = new ManualClock()
  const lines: string[] = []
  let calls = 0
  const supervisor = supervise({
    name: 'backend',
    start: () => {
      calls += 1
      if (calls === 1) throw new Error('spawn EAGAIN')
      const child = new FakeChild(calls === 2 ? undefined : 300)
      if (calls === 2) setImmediate(() => child.emit('error', new Error('spawn ENOENT')))
      return child
    },
    clock,
    random: () => 0.5,
    log: (line) => { lines.push(line) }
  })
  t.match(lines[0], /^local stack: backend could not be started \(spawn EAGAIN\); restarting in \d+ ms \(attempt 1\)$/)
  clock.advance(DEFAULT_BACKOFF.capMs)
  await new Promise((resolve) => setImmediate(resolve))
  t.match(lines[1], /^local stack: backend could not be started \(spawn ENOENT\); restarting in \d+ ms \(attempt 2\)$/)
  clock.advance(DEFAULT_BACKOFF.capMs)
  t.equal(supervisor.pid, 300)
  await supervisor.stop()
})

test('after stopRestarting() an exit is final and a pending restart is cancelled', async (t) => {
  const { clock, children, lines, supervisor, latest } = harness()
  latest().exit(1)
  supervisor.stopRestarting()
  t.equal(clock.pending, 0, 'the pending restart is gone')
  clock.advance(60_000)
  t.equal(children.length, 1)

  const second = harness()
  second.supervisor.stopRestarting()
  second.latest().exit(0, null)
  t.equal(second.clock.pending, 0)
  t.equal(second.children.length, 1, 'a child that ends on its own (Ctrl-C in a terminal) is not started again')
  t.same(second.lines, [])
  t.equal(lines.length, 1)
  await supervisor.stop()
  await second.supervisor.stop()
})
