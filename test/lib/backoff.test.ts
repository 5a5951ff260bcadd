import { test } from 'tap'
import { backoffDelay, retryAfterMs } from '../../lib/backoff.js'

test('backoff grows exponentially with full jitter and a ceiling', async (t) => {
  const policy = { baseMs: 500, capMs: 60_000 }
  t.equal(backoffDelay(0, policy, () => 1), 500)
  t.equal(backoffDelay(3, policy, () => 1), 4000)
  t.equal(backoffDelay(3, policy, () => 0.5), 2000)
  t.equal(backoffDelay(20, policy, () => 1), 60_000)
  t.equal(backoffDelay(2, policy, () => 0), 1, 'never zero: a retry is never immediate')
  t.equal(backoffDelay(-1, policy, () => 1), 500, 'a negative attempt counts as the first')
})

test('equal jitter never goes below half the ceiling', async (t) => {
  const policy = { baseMs: 15_000, capMs: 60_000, jitter: 'equal' as const }
  t.equal(backoffDelay(0, policy, () => 0), 7_500)
  t.equal(backoffDelay(0, policy, () => 1), 15_000)
  t.equal(backoffDelay(1, policy, () => 0.5), 22_500)
  t.equal(backoffDelay(9, policy, () => 0), 30_000, 'half of the cap')
  t.equal(backoffDelay(9, policy, () => 1), 60_000, 'never above the cap')
})

test('Retry-After: seconds or an HTTP date, nothing else', async (t) => {
  const now = new Date('2026-11-25T10:00:00Z')
  t.equal(retryAfterMs('120', now), 120_000)
  t.equal(retryAfterMs(' 0 ', now), 0)
  t.equal(retryAfterMs('Wed, 25 Nov 2026 10:01:30 GMT', now), 90_000)
  t.equal(retryAfterMs('Wed, 25 Nov 2026 09:00:00 GMT', now), 0, 'a date already past asks for no wait')
  t.equal(retryAfterMs(null, now), null)
  t.equal(retryAfterMs(undefined, now), null)
  t.equal(retryAfterMs('', now), null)
  t.equal(retryAfterMs('-5', now), null)
  t.equal(retryAfterMs('1.5', now), null)
  t.equal(retryAfterMs('soon', now), null)
})
