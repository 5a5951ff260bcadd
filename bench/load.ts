import { Pool } from 'undici'

// A small closed-loop load generator: `connections` clients, one request in flight each (no
// pipelining), for `durationMs`. Returns requests per second and latency percentiles.
export interface LoadResult {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  errors: number
}

export async function measure (origin: string, path: string, options: { connections?: number, durationMs?: number, headers?: Record<string, string>, method?: 'GET' | 'POST', body?: string } = {}): Promise<LoadResult> {
  const connections = options.connections ?? 8
  const durationMs = options.durationMs ?? 2000
  const pool = new Pool(origin, { connections, pipelining: 1 })
  const latencies: number[] = []
  let errors = 0
  const started = performance.now()
  const deadline = started + durationMs
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < deadline) {
      const before = performance.now()
      try {
        const response = await pool.request({ origin, path, method: options.method ?? 'GET', headers: options.headers, body: options.body })
        await response.body.dump()
        if (response.statusCode >= 400) errors += 1
      } catch {
        errors += 1
      }
      latencies.push(performance.now() - before)
    }
  }))
  const elapsed = performance.now() - started
  await pool.close()
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
  return { requestsPerSecond: latencies.length / (elapsed / 1000), p50Ms: at(0.5), p99Ms: at(0.99), errors }
}

// Alternates the two targets so drift on a noisy machine hits both alike; returns the medians.
export async function compare (rounds: number, baseline: () => Promise<LoadResult>, subject: () => Promise<LoadResult>) {
  const base: number[] = []
  const measured: number[] = []
  for (let round = 0; round < rounds; round += 1) {
    base.push((await baseline()).requestsPerSecond)
    measured.push((await subject()).requestsPerSecond)
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
  return { baseline: median(base), subject: median(measured), ratio: median(measured) / median(base) }
}
