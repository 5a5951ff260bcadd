import { test } from 'tap'
import { createMetricsRegistry, observedGauge, sharedRead } from '../../lib/metrics.js'

test('gauges that show parts of one answer cost one read per scrape', async (t) => {
  const registry = createMetricsRegistry('sync', '1.0.0', 'latest')
  let reads = 0
  const backlog = sharedRead(async () => {
    reads++
    await new Promise((resolve) => setTimeout(resolve, 10))
    return { due: 3, oldestAgeSeconds: 42 }
  })
  observedGauge(registry, 'queue_due', 'due', async () => (await backlog()).due)
  observedGauge(registry, 'queue_oldest_age_seconds', 'age', async () => (await backlog()).oldestAgeSeconds)

  const first = await registry.metrics()
  t.match(first, /^queue_due\{service="sync"\} 3$/m)
  t.match(first, /^queue_oldest_age_seconds\{service="sync"\} 42$/m)
  t.equal(reads, 1, 'one read for both gauges')
  await registry.metrics()
  t.equal(reads, 2, 'and a fresh read at the next scrape, never a stale answer')
})
