// What one user's hostile CalDAV servers cost another user, against a baseline measured in the same
// run without them. While the other user lists their calendars every 20 ms, the attacker connects,
// two at a time, to servers that answer: first 300 MB and a 100 MB flood of empty elements (both cut
// at the 10 MB answer limit), then 9.5 MB of small responses (under the limit: parsed, off the event
// loop) and 9.5 MB of empty elements (under the byte limit, past the element limit). Printed per
// phase: the other user's read latency, the event loop's delay (monitorEventLoopDelay, 10 ms
// resolution, included in the figures) and the process's RSS peak. Targets: loop delay p99 under
// 100 ms, RSS peak under about 300 MB. The servers (test/sync/caldav/hostile-dav.ts) run in a child
// process, so this process holds the CalDAV adapter alone, with its production transport (address
// guard, byte limit) allowed to reach `localhost`: its RSS is the adapter's and its parsing
// worker's, not a whole Sync's.
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { CalDavAdapter } from '../sync/providers/caldav/adapter.js'
import type { ProviderContext } from '../sync/lib/providers/port.js'
import { startHostileDav, type HostileMode } from '../test/sync/caldav/hostile-dav.js'

const MB = 1024 * 1024
const SERVERS = {
  normal: {},
  warmUp: { paddedHome: 128 * 1024 },
  answer300: { hugeHome: 300 * MB },
  flood100: { floodHome: Math.floor(100 * MB / 14) },
  parsed: { paddedHome: 9.5 * MB },
  elements: { floodHome: Math.floor(9.5 * MB / 14) }
} satisfies Record<string, HostileMode>
type Server = keyof typeof SERVERS
/** How long each phase lasts, at least: the baseline's reads, and the attacker's connects, repeated. */
const PHASE_MS = 8_000

if (process.argv[2] === 'serve') {
  const urls: Record<string, string> = {}
  const stops: Array<() => unknown> = []
  for (const [name, mode] of Object.entries(SERVERS)) {
    urls[name] = (await startHostileDav({ teardown: (stop: () => unknown) => stops.push(stop) } as never, mode)).url
  }
  process.send?.(urls)
  process.once('disconnect', () => process.exit(0))
} else {
  const servers = fork(fileURLToPath(import.meta.url), ['serve'], { execArgv: ['--import', 'tsx'] })
  const [urls] = await once(servers, 'message') as [Record<Server, string>]
  const adapter = new CalDavAdapter({ privateAddressAllowlist: ['localhost'] })
  const victim: ProviderContext = {
    connectionId: 'victim',
    userId: 'victim',
    credential: await adapter.verifyAccount({ serverUrl: `${urls.normal}/`, username: 'victim', password: 'the-victims-password' })
  }

  /** One connect of the attacker: answers how it ended and how long it took. */
  const attack = async (server: Server): Promise<{ server: Server, outcome: string, ms: number }> => {
    const started = performance.now()
    const outcome = await adapter.verifyAccount({ serverUrl: `${urls[server]}/`, username: 'mallory', password: 'pw' })
      .then(() => 'connected', (error: Error) => /\((\w+Error)\)/.exec(error.message)?.[1] ?? error.message)
    return { server, outcome, ms: performance.now() - started }
  }
  const quantile = (values: number[], q: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))] ?? 0

  /** The victim's reads every 20 ms while `load` runs (or for PHASE_MS without it), with the loop's delay and the RSS peak. */
  const phase = async <T>(load: (() => Promise<T>) | null) => {
    const delay = monitorEventLoopDelay({ resolution: 10 })
    delay.enable()
    let rssPeak = process.memoryUsage.rss()
    const sampler = setInterval(() => { rssPeak = Math.max(rssPeak, process.memoryUsage.rss()) }, 10)
    const reads: number[] = []
    const state = { running: true }
    const done = (load === null ? sleep(PHASE_MS).then(() => []) : load()).finally(() => { state.running = false })
    const started = performance.now()
    while (state.running) {
      const began = performance.now()
      await adapter.listCalendars(victim)
      reads.push(performance.now() - began)
      await sleep(20)
    }
    const result = await done
    clearInterval(sampler)
    delay.disable()
    return { result, seconds: (performance.now() - started) / 1000, reads, p50: quantile(reads, 0.5), p99: quantile(reads, 0.99), loopP99: delay.percentile(99) / 1e6, loopMax: delay.max / 1e6, rssPeak: rssPeak / MB }
  }

  /** Connects to each of two servers at once, one after another, for PHASE_MS at least. */
  const attacks = (one: Server, other: Server) => async () => {
    const until = performance.now() + PHASE_MS
    const outcomes = await Promise.all([one, other].map(async (server) => {
      const seen = [await attack(server)]
      while (performance.now() < until) seen.push(await attack(server))
      return seen
    }))
    return outcomes.flat()
  }

  // Warm-up: the reads, and the parsing worker started by an answer of 128 KB (under tsx it compiles its TypeScript then).
  const startRss = process.memoryUsage.rss() / MB
  await attack('warmUp')
  for (let read = 0; read < 20; read++) await adapter.listCalendars(victim)

  const baseline = await phase(null)
  const overLimit = await phase(attacks('answer300', 'flood100'))
  const underLimit = await phase(attacks('parsed', 'elements'))

  const ratio = (value: number, base: number): string => base > 0 ? `${(value / base).toFixed(2)}x` : 'n/a'
  const line = (what: string, figures: typeof baseline) =>
    `  ${what} (${figures.seconds.toFixed(1)} s, ${figures.reads.length} reads): read p50 ${figures.p50.toFixed(1)} ms, p99 ${figures.p99.toFixed(1)} ms; ` +
    `loop delay p99 ${figures.loopP99.toFixed(0)} ms, max ${figures.loopMax.toFixed(0)} ms; RSS peak ${figures.rssPeak.toFixed(0)} MB`
  console.log(`hostile-answers: another user's calendar listing, every 20 ms, while one user connects to hostile CalDAV servers, two at a time (RSS at start ${startRss.toFixed(0)} MB)`)
  console.log(line('baseline, no attacker', baseline))
  for (const [what, figures] of [['300 MB answer and 100 MB element flood', overLimit], ['9.5 MB of small responses and 9.5 MB of empty elements', underLimit]] as const) {
    console.log(line(what, figures))
    console.log(`    against the baseline: read p50 ${ratio(figures.p50, baseline.p50)}, read p99 ${ratio(figures.p99, baseline.p99)}, loop delay p99 ${ratio(figures.loopP99, baseline.loopP99)}, RSS peak ${ratio(figures.rssPeak, baseline.rssPeak)}; ` +
      `targets: loop delay p99 under 100 ms ${figures.loopP99 < 100 ? 'met' : 'OVER'}, RSS peak under about 300 MB ${figures.rssPeak < 300 ? 'met' : 'OVER'}`)
    const byServer = new Map<string, Array<{ outcome: string, ms: number }>>()
    for (const seen of figures.result) byServer.set(seen.server, [...(byServer.get(seen.server) ?? []), seen])
    for (const [server, seen] of byServer) {
      console.log(`    the attacker's ${server}: ${seen.length} connects, ${[...new Set(seen.map((one) => one.outcome))].join('; ')}, ${quantile(seen.map((one) => one.ms), 0.5).toFixed(0)} ms each (median)`)
    }
  }
  servers.disconnect()
  servers.kill()
}
