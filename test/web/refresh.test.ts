// Focus refresh and the refresh coordinator against a controlled clock, and the 5-second
// coalescing of stream wake-ups against controlled timers.
import { test } from 'tap'
import { createFocusRefresh, createRefreshCoordinator, FOCUS_HIDDEN_THRESHOLD_MS, type RefreshOptions } from '../../web/src/lib/focus-refresh.js'
import { createCoalescer, COALESCE_WINDOW_MS, type Timers } from '../../web/src/lib/coalesce.js'

class FakeClock implements Timers {
  ms = 1_000_000
  #timers: Array<{ at: number, callback: () => void, id: number }> = []
  #next = 1
  now = () => this.ms
  setTimeout = (callback: () => void, ms: number) => {
    const id = this.#next++
    this.#timers.push({ at: this.ms + ms, callback, id })
    return id
  }

  clearTimeout = (id: unknown) => { this.#timers = this.#timers.filter((timer) => timer.id !== id) }
  advance (ms: number): void {
    const until = this.ms + ms
    for (;;) {
      const due = this.#timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at)[0]
      if (due === undefined) break
      this.#timers = this.#timers.filter((timer) => timer !== due)
      this.ms = due.at
      due.callback()
    }
    this.ms = until
  }
}

/** A refresh that stays in flight until the test settles it. */
function controlledRefresh () {
  const calls: RefreshOptions[] = []
  let settle: () => void = () => {}
  const refresh = (options: RefreshOptions) => {
    calls.push(options)
    return new Promise<void>((resolve) => { settle = resolve })
  }
  return { calls, refresh, settle: async () => { settle(); await new Promise((resolve) => setImmediate(resolve)) } }
}

test('the coordinator runs one refresh at a time; requests while one runs join it', async (t) => {
  const { calls, refresh, settle } = controlledRefresh()
  const coordinator = createRefreshCoordinator(refresh)
  const first = coordinator.run({ silent: true })
  const manual = coordinator.run({ silent: false })
  t.equal(first, manual, 'the manual click joins the silent refresh in flight')
  t.equal(coordinator.inFlight, true)
  t.equal(calls.length, 1)
  await settle()
  await manual
  t.equal(coordinator.inFlight, false)
  coordinator.run({ silent: false }).catch(() => {})
  t.same(calls, [{ silent: true }, { silent: false }], 'after it ends, the next request starts a new one')
  await settle()

  const failing = createRefreshCoordinator(async () => { throw new Error('down') })
  await t.rejects(failing.run({ silent: false }), /down/, 'a manual caller sees the failure')
  t.equal(failing.inFlight, false, 'and the coordinator is free again')
})

test('on mount: one silent refresh when a refreshable connection appears, not before, not twice', async (t) => {
  const clock = new FakeClock()
  const { calls, refresh, settle } = controlledRefresh()
  const focus = createFocusRefresh({ coordinator: createRefreshCoordinator(refresh), clock })
  focus.connectionStatus(null)
  focus.connectionStatus('IMPORTING')
  focus.connectionStatus('SYNCING')
  t.same(calls, [], 'no refreshable connection yet')
  focus.connectionStatus('HEALTHY')
  t.same(calls, [{ silent: true }])
  await settle()
  focus.connectionStatus('ATTENTION')
  focus.connectionStatus('HEALTHY')
  t.equal(calls.length, 1, 'the mount refresh happens once')

  const attention = controlledRefresh()
  createFocusRefresh({ coordinator: createRefreshCoordinator(attention.refresh), clock }).connectionStatus('ATTENTION')
  t.same(attention.calls, [{ silent: true }], 'ATTENTION is refreshable too')
  const revoked = controlledRefresh()
  const reconnect = createFocusRefresh({ coordinator: createRefreshCoordinator(revoked.refresh), clock })
  reconnect.connectionStatus('RECONNECT_REQUIRED')
  reconnect.connectionStatus('DISCONNECTED')
  t.same(revoked.calls, [], 'a connection that needs reconnecting is not refreshed')
})

test('visible again after at least 30 s hidden: a silent refresh; shorter absences: none', async (t) => {
  const clock = new FakeClock()
  const { calls, refresh, settle } = controlledRefresh()
  const focus = createFocusRefresh({ coordinator: createRefreshCoordinator(refresh), clock })
  focus.connectionStatus('HEALTHY')
  await settle()
  calls.length = 0

  focus.visibility('hidden')
  clock.advance(FOCUS_HIDDEN_THRESHOLD_MS - 1)
  focus.visibility('visible')
  t.same(calls, [], '29.999 s hidden is not enough')

  focus.visibility('hidden')
  clock.advance(10_000)
  focus.visibility('hidden')
  clock.advance(20_000)
  focus.visibility('visible')
  t.same(calls, [{ silent: true }], 'hidden counts from the first hidden event: 30 s in all')

  focus.visibility('hidden')
  clock.advance(60_000)
  focus.visibility('visible')
  t.equal(calls.length, 1, 'while one refresh is in flight, another focus joins it')
  await settle()

  focus.visibility('visible')
  t.equal(calls.length, 1, 'visible without having been hidden: nothing')

  focus.connectionStatus('RECONNECT_REQUIRED')
  focus.visibility('hidden')
  clock.advance(60_000)
  focus.visibility('visible')
  t.equal(calls.length, 1, 'not for a connection that is neither HEALTHY nor ATTENTION')
  focus.connectionStatus(null)
  focus.visibility('hidden')
  clock.advance(60_000)
  focus.visibility('visible')
  t.equal(calls.length, 1, 'not without a connection')
})

test('a silent refresh that fails shows nothing; its error goes to the log hook', async (t) => {
  const errors: unknown[] = []
  const focus = createFocusRefresh({
    coordinator: createRefreshCoordinator(async () => { throw new Error('offline') }),
    clock: new FakeClock(),
    onSilentError: (error) => errors.push(error)
  })
  focus.connectionStatus('HEALTHY')
  await new Promise((resolve) => setImmediate(resolve))
  t.match(errors, [{ message: 'offline' }])
})

test('stream wake-ups: the first runs at once, later ones within 5 s are merged into one at the window end', async (t) => {
  const clock = new FakeClock()
  const runs: Array<{ at: number, ids: string[] }> = []
  const coalescer = createCoalescer<string[]>({
    timers: clock,
    merge: (a, b) => [...new Set([...a, ...b])],
    run: (ids) => runs.push({ at: clock.ms, ids })
  })
  const start = clock.ms
  coalescer.push(['a'])
  t.same(runs, [{ at: start, ids: ['a'] }], 'a quiet tab reacts at once')
  clock.advance(1000)
  coalescer.push(['b'])
  clock.advance(1000)
  coalescer.push(['c'])
  coalescer.push(['b'])
  t.equal(runs.length, 1, 'nothing more within the window')
  clock.advance(3000)
  t.same(runs[1], { at: start + COALESCE_WINDOW_MS, ids: ['b', 'c'] }, 'one merged run at the end of the window')
  clock.advance(COALESCE_WINDOW_MS * 3)
  t.equal(runs.length, 2, 'idle: no wake-ups at all')
  coalescer.push(['d'])
  t.equal(runs.length, 3, 'after a quiet window, at once again')
  coalescer.push(['e'])
  coalescer.cancel()
  clock.advance(COALESCE_WINDOW_MS * 2)
  t.equal(runs.length, 3, 'cancel drops what waits')
})
