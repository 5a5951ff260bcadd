import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { PeriodicTask } from '../../lib/periodic-task.js'
import { waitUntil } from '../processes.js'

/** A promise and the function that settles it. */
function deferred (): { promise: Promise<void>, resolve: () => void } {
  let settle = () => {}
  const promise = new Promise<void>((resolve) => { settle = resolve })
  return { promise, resolve: settle }
}

test('one run at a time, each an interval after the last ended, even when a run outlasts the interval', async (t) => {
  let active = 0
  let most = 0
  const ends: number[] = []
  const starts: number[] = []
  const task = new PeriodicTask({
    intervalMs: 20,
    run: async () => {
      starts.push(Date.now())
      active += 1
      most = Math.max(most, active)
      await sleep(60)
      active -= 1
      ends.push(Date.now())
    },
    onError: (error) => { throw error }
  })
  task.start(0)
  await waitUntil(() => ends.length >= 3, 'three runs', 5000)
  await task.stop()
  t.equal(most, 1, 'never two at once')
  for (let index = 1; index < 3; index += 1) t.ok((starts[index] as number) - (ends[index - 1] as number) >= 15, `run ${index + 1} began an interval after run ${index} ended`)
})

test('a failed run is reported and the next one still comes', async (t) => {
  const failures: unknown[] = []
  let runs = 0
  const task = new PeriodicTask({
    intervalMs: 5,
    run: async () => {
      runs += 1
      if (runs === 1) throw new Error('the database is away')
    },
    onError: (error) => failures.push(error)
  })
  task.start(0)
  await waitUntil(() => runs >= 3, 'runs after the failure', 5000)
  await task.stop()
  t.equal(failures.length, 1)
  t.match(failures[0], { message: 'the database is away' })
})

test('stop waits for the run under way, and no run starts after it', async (t) => {
  const release = deferred()
  let runs = 0
  let ended = false
  const task = new PeriodicTask({ intervalMs: 1, run: async () => { runs += 1; await release.promise; ended = true }, onError: () => {} })
  task.start(0)
  await waitUntil(() => runs === 1, 'the first run', 5000)
  let stopped = false
  const stopping = task.stop().then(() => { stopped = true })
  await sleep(30)
  t.notOk(stopped, 'stop is still waiting while the run is under way')
  release.resolve()
  await stopping
  t.ok(ended, 'the run ended before stop resolved')
  await sleep(30)
  t.equal(runs, 1, 'nothing ran after the stop')
})

test('runNow joins a run under way instead of starting a second', async (t) => {
  const release = deferred()
  let runs = 0
  const task = new PeriodicTask({ intervalMs: 60_000, run: async () => { runs += 1; await release.promise }, onError: () => {} })
  const first = task.runNow()
  const second = task.runNow()
  release.resolve()
  await Promise.all([first, second])
  t.equal(runs, 1)
  await task.runNow()
  t.equal(runs, 2, 'a later call runs again')
})

test('a stop and a start while a run is under way leave one loop, not two', async (t) => {
  const release = deferred()
  let active = 0
  let most = 0
  let runs = 0
  const task = new PeriodicTask({
    intervalMs: 5,
    run: async () => {
      runs += 1
      active += 1
      most = Math.max(most, active)
      if (runs === 1) await release.promise
      else await sleep(5)
      active -= 1
    },
    onError: () => {}
  })
  task.start(0)
  await waitUntil(() => runs === 1, 'the first run', 5000)
  const stopping = task.stop()
  task.start(0)
  await sleep(20)
  release.resolve()
  await stopping
  await waitUntil(() => runs >= 5, 'the loop goes on', 5000)
  await task.stop()
  t.equal(most, 1, 'never two at once')
})
