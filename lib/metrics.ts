// What both services expose to an operator's Prometheus: each app has its own registry (a test
// process builds several apps, and one app's figures must not mix with another's), the process
// figures prom-client collects (event-loop delay, heap, handles), and the build it runs.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { ServiceName } from '../schemas/config.js'

export { Counter, Gauge, Histogram, Registry }

/** A registry holding the process's own figures and `calendar_build_info{service, version, image}` = 1. */
export function createMetricsRegistry (service: ServiceName, version: string, image: string): Registry {
  const registry = new Registry()
  registry.setDefaultLabels({ service })
  collectDefaultMetrics({ register: registry })
  const build = new Gauge({ name: 'calendar_build_info', help: 'The running build: its package version and image tag', labelNames: ['version', 'image'], registers: [registry] })
  build.set({ version, image }, 1)
  return registry
}

/** Seconds since a moment, for an "oldest age" gauge: 0 when there is none. */
export function ageSeconds (since: Date | null | undefined, now = Date.now()): number {
  return since == null ? 0 : Math.max(0, (now - since.getTime()) / 1000)
}

/** Request latency buckets, in seconds: from a cached read (a few ms) to a deadline (10 s). */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** Work that takes longer (a provider request, a job, an import): up to ten minutes. */
export const WORK_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600]

/** A read for a scrape may wait this long (a database query); Prometheus' own timeout is 10 s. */
const SCRAPE_READ_DEADLINE_MS = 3_000

/**
 * The read's value, or undefined when it failed or took too long: one unanswered query keeps its
 * gauge at the last value instead of failing the whole scrape (the database's own figures say why).
 */
async function readForScrape<T> (read: () => T | Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), SCRAPE_READ_DEADLINE_MS) })
  try {
    return await Promise.race([Promise.resolve().then(read).catch(() => undefined), late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A read shared by the callers that ask while it is out: the gauges of one scrape that show parts
 * of the same answer are collected together, and cost one read.
 */
export function sharedRead<T> (read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined
  return async () => {
    pending ??= read().finally(() => { pending = undefined })
    return await pending
  }
}

/** A gauge read when scraped (a count held elsewhere: open streams, a queue's depth). */
export function observedGauge (registry: Registry, name: string, help: string, read: () => number | Promise<number>): Gauge {
  return new Gauge({
    name,
    help,
    registers: [registry],
    async collect () {
      const value = await readForScrape(read)
      if (value !== undefined) this.set(value)
    }
  })
}

/** One count of an observedCounts gauge: its label values, and the count. */
export interface LabelledCount { labels: Record<string, string>, count: number }

/** Every combination of the domains' values, as label sets. */
function combinations (domains: Record<string, readonly string[]>): Array<Record<string, string>> {
  return Object.entries(domains).reduce<Array<Record<string, string>>>(
    (sets, [label, values]) => sets.flatMap((set) => values.map((value) => ({ ...set, [label]: value }))), [{}])
}

/**
 * A gauge of counts by labels whose values are known (`domains`), read when scraped. Every
 * combination is set, to 0 when the read has none, so a state that empties shows 0 rather than
 * its last count; a value outside the domains is not shown.
 */
export function observedCounts (registry: Registry, name: string, help: string, domains: Record<string, readonly string[]>, read: () => Promise<LabelledCount[]>): Gauge {
  const labelNames = Object.keys(domains)
  const keyOf = (labels: Record<string, string>): string => labelNames.map((label) => labels[label]).join('\u0000')
  const all = combinations(domains)
  return new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect () {
      const counts = await readForScrape(read)
      if (counts === undefined) return
      const byKey = new Map(counts.map(({ labels, count }) => [keyOf(labels), count]))
      for (const labels of all) this.set(labels, byKey.get(keyOf(labels)) ?? 0)
    }
  })
}
