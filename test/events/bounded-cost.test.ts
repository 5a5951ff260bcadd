import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type InjectOptions } from 'fastify'
import fp from 'fastify-plugin'
import { test, type Test } from 'tap'
import app, { initSessionLibrary, serverOptions, type AppOptions } from '../../app.js'
import { captureLog, IN_PROCESS_LOAD_SHEDDING, signUp, startDependencies, testConfig, uniqueEmail } from '../helper.js'

// What one user can ask of the backend costs what the answer is worth, never what the data
// holds: hostile series and huge ranges are refused or answered without holding the event loop,
// and everyone else (here the health probe) keeps being answered meanwhile.

// The target is about 100 ms (a range read gives the loop back every 10 ms of work); the bound
// is generous because the test machine runs many test processes on two cores, where a process
// waiting for a core sees its loop late. Unbounded, these cases held the loop for seconds to forever.
const MAX_LOOP_BLOCK_MS = 500
const HEALTH_ANSWER_MS = 1000

async function build (t: Test, options: Partial<AppOptions> = {}) {
  const deps = await startDependencies(t)
  const config = testConfig(deps)
  const { stream, log } = captureLog()
  const base = serverOptions(config)
  const instance = Fastify({ ...base, logger: { ...(base.logger as object), transport: undefined, stream } })
  initSessionLibrary(config, instance.log)
  await instance.register(fp(app), { config, ...options })
  await instance.ready()
  t.teardown(() => instance.close())
  return { app: instance, log }
}

test('hostile series and ranges neither stall the event loop nor the health probe', { timeout: 240_000 }, async (t) => {
  // The loop's delays are measured here, not shed: a busy machine would shed the requests measured.
  const { app } = await build(t, { loadShedding: IN_PROCESS_LOAD_SHEDDING })
  const user = await signUp(app, { email: uniqueEmail('hostile'), password: 'pw-for-hostile-1' })
  // Each request's time is reported beside the test's output, for the figures in docs/limits-and-faults.md.
  const timed = async <T>(what: string, request: () => Promise<T>): Promise<T> => {
    const started = performance.now()
    const answer = await request()
    t.comment(`${what}: ${(performance.now() - started).toFixed(0)} ms`)
    return answer
  }
  const post = async (payload: InjectOptions['payload']) => await timed('POST', async () => await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload }))
  const read = async (start: string, end: string) => await timed(`GET ${start}..${end}`, async () => await app.inject({ method: 'GET', url: `/api/event?start=${start}&end=${end}`, headers: user.headers }))

  // The probe runs beside the hostile requests, as another client would.
  const probing = { on: true }
  const healthTimes: number[] = []
  const probe = (async () => {
    while (probing.on) {
      const started = performance.now()
      const answer = await app.inject({ method: 'GET', url: '/api/health' })
      healthTimes.push(answer.statusCode === 200 ? performance.now() - started : Infinity)
      await sleep(20)
    }
  })()
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()

  const secondly = await post({ title: 'x', startDate: '1970-01-01T00:00:00Z', endDate: '1970-01-01T00:00:01Z', recurrence: { rule: ['RRULE:FREQ=SECONDLY'] } })
  t.equal(secondly.statusCode, 400, 'SECONDLY is refused')
  t.match(secondly.json(), { code: 'RRULE_FREQUENCY_NOT_ALLOWED', message: /recurrence\/rule .*FREQ=SECONDLY is not allowed/ })
  t.equal((await post({ title: 'x', startDate: '1970-01-01T00:00:00Z', endDate: '1970-01-01T00:01:00Z', recurrence: { rule: ['RRULE:FREQ=MINUTELY'] } })).json().code, 'RRULE_FREQUENCY_NOT_ALLOWED')

  const never = await post({ title: 'x', startDate: '1970-01-01T00:00:00Z', endDate: '1970-01-01T01:00:00Z', recurrence: { rule: ['RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30'] } })
  t.equal(never.statusCode, 400, 'a rule that never matches is refused')
  t.match(never.json(), { code: 'RRULE_NO_OCCURRENCE', message: /no occurrence within \d+ periods/ })
  const tooMany = await post({ title: 'x', startDate: '2026-01-01T00:00:00Z', endDate: '2026-01-01T01:00:00Z', recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=999999'] } })
  t.match(tooMany.json(), { code: 'RRULE_COUNT_TOO_LARGE', message: /UNTIL/ })

  // An hourly series begun in 1970, read over five weeks of 2026-27 and edited one occurrence at a time.
  const hourlyId = 'a'.repeat(24)
  t.equal((await post({ _id: hourlyId, title: 'Hourly', startDate: '1970-01-01T00:00:00Z', endDate: '1970-01-01T00:30:00Z', recurrence: { rule: ['RRULE:FREQ=HOURLY'] } })).statusCode, 204)
  const weeks = await read('2026-11-30T00:00:00Z', '2027-01-04T00:00:00Z')
  t.equal(weeks.statusCode, 200)
  t.equal(weeks.json().length, 35 * 24, 'every hour of the five weeks')
  const occurrence = `${hourlyId}_20261201T050000Z`
  const one = await timed('GET one occurrence', async () => await app.inject({ method: 'GET', url: `/api/event/${occurrence}`, headers: user.headers }))
  t.equal(one.json().startDate, '2026-12-01T05:00:00Z', one.body)
  t.equal((await timed('PUT one occurrence', async () => await app.inject({ method: 'PUT', url: `/api/event/${occurrence}`, headers: user.headers, payload: { title: 'Moved', startDate: '2026-12-01T05:10:00Z', endDate: '2026-12-01T05:40:00Z' } }))).statusCode, 204)
  t.equal((await timed('DELETE one occurrence', async () => await app.inject({ method: 'DELETE', url: `/api/event/${hourlyId}_20261201T060000Z?applyTo=this`, headers: user.headers }))).statusCode, 204)
  const day = (await read('2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z')).json() as Array<{ title: string }>
  t.equal(day.length, 23, 'one occurrence deleted')
  t.equal(day.filter((event) => event.title === 'Moved').length, 1, 'one occurrence edited')

  // 100 hourly series over 400 days would be 960,000 items: refused with a code, not built.
  const many = Array.from({ length: 100 }, (_, index) => ({ title: `Series ${index}`, description: 'd'.repeat(1024), startDate: '2026-01-01T00:00:00Z', endDate: '2026-01-01T00:30:00Z', recurrence: { rule: ['RRULE:FREQ=HOURLY'] } }))
  t.equal((await post(many)).statusCode, 204)
  const huge = await read('2026-01-01T00:00:00Z', '2027-02-05T00:00:00Z')
  t.equal(huge.statusCode, 400)
  t.match(huge.json(), { code: 'RANGE_TOO_LARGE', message: /narrow the range/ })
  const oneDay = await read('2026-06-01T00:00:00Z', '2026-06-01T01:00:00Z')
  t.equal(oneDay.json().length, 101, 'a narrower range is answered')

  // Series that rarely match (29 February at 03:00, by an hourly rule) cost walking without
  // adding to the answer: each is bounded, and so is their total in one read (EVENT_LIMITS.rangePeriods).
  const other = await signUp(app, { email: uniqueEmail('sparse'), password: 'pw-for-sparse-1' })
  const leapDays = Array.from({ length: 12 }, (_, index) => ({
    title: `Leap ${index}`,
    startDate: `2024-02-29T03:${String(index).padStart(2, '0')}:00Z`,
    endDate: `2024-02-29T04:${String(index).padStart(2, '0')}:00Z`,
    recurrence: { rule: ['RRULE:FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=3'] }
  }))
  t.equal((await timed('POST 12 sparse series', async () => await app.inject({ method: 'POST', url: '/api/event', headers: other.headers, payload: leapDays }))).statusCode, 204)
  const costly = await timed('GET 400 days of 12 sparse series', async () => await app.inject({ method: 'GET', url: '/api/event?start=2026-03-01T00:00:00Z&end=2027-04-05T00:00:00Z', headers: other.headers }))
  t.equal(costly.statusCode, 400, 'refused though it would hold nothing')
  t.match(costly.json(), { code: 'RANGE_TOO_LARGE', message: /steps of their rules.*narrow the range/ })
  const leapDay = await timed('GET the leap day of 12 sparse series', async () => await app.inject({ method: 'GET', url: '/api/event?start=2028-02-29T00:00:00Z&end=2028-03-01T00:00:00Z', headers: other.headers }))
  t.equal(leapDay.json().length, 12, 'a narrower range is answered, every series in it')

  loop.disable()
  probing.on = false
  await probe
  const longestBlockMs = loop.max / 1e6
  const slowestHealthMs = Math.max(...healthTimes)
  t.comment(`event loop: longest block ${longestBlockMs.toFixed(0)} ms, mean ${(loop.mean / 1e6).toFixed(1)} ms; health: ${healthTimes.length} probes, slowest ${slowestHealthMs.toFixed(0)} ms`)
  t.ok(longestBlockMs < MAX_LOOP_BLOCK_MS, `the event loop was never held ${MAX_LOOP_BLOCK_MS} ms (longest ${longestBlockMs.toFixed(0)} ms)`)
  t.ok(healthTimes.length > 10, 'the probe kept running')
  t.ok(slowestHealthMs < HEALTH_ANSWER_MS, `health answered within ${HEALTH_ANSWER_MS} ms every time (slowest ${slowestHealthMs.toFixed(0)} ms)`)
})

test('an overloaded event loop sheds requests with 503 and Retry-After, but not the health probe', async (t) => {
  const { app, log } = await build(t, { loadShedding: { maxEventLoopDelayMs: 50, sampleIntervalMs: 100 } })
  const user = await signUp(app, { email: uniqueEmail('shed'), password: 'pw-for-shed-1' })
  const range = { method: 'GET', url: '/api/event?start=2026-01-01T00:00:00Z&end=2026-01-02T00:00:00Z', headers: user.headers } as const
  const held = new Int32Array(new SharedArrayBuffer(4))
  let [shed, health] = [await app.inject(range), await app.inject({ method: 'GET', url: '/api/health' })]
  // The loop is held, as an overload would hold it, before every try: the sample after it sees the
  // delay, and a busy machine that answers a try late only costs that try, not the test.
  for (let tries = 0; shed.statusCode !== 503 && tries < 20; tries++) {
    Atomics.wait(held, 0, 0, 300)
    await sleep(10)
    // Asked in the same turn of the loop, both meet the same verdict.
    ;[shed, health] = await Promise.all([app.inject(range), app.inject({ method: 'GET', url: '/api/health' })])
  }
  t.equal(shed.statusCode, 503)
  t.equal(shed.headers['retry-after'], '5')
  t.match(shed.json(), { code: 'OVERLOADED', message: /overloaded/ })
  t.equal(health.statusCode, 200, 'the health probe is never shed')
  t.ok(log.lines().some((line) => line.msg === 'request shed: the service is overloaded'), 'shedding is logged')
  // Once the loop is free again, so is the service.
  await sleep(350)
  t.equal((await app.inject({ method: 'GET', url: '/api/event?start=2026-01-01T00:00:00Z&end=2026-01-02T00:00:00Z', headers: user.headers })).statusCode, 200)
})
