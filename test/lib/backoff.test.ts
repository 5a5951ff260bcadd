import { test } from 'tap'
import { backoffDelay } from '../../lib/backoff.js'

test('backoff grows exponentially with full jitter and a ceiling', async (t) => {
  const policy = { baseMs: 500, capMs: 60_000 }
  t.equal(backoffDelay(0, policy, () => 1), 500)
  t.equal(backoffDelay(3, policy, () => 1), 4000)
  t.equal(backoffDelay(3, policy, () => 0.5), 2000)
  t.equal(backoffDelay(20, policy, () => 1), 60_000)
  t.equal(backoffDelay(2, policy, () => 0), 1, 'never zero: a retry is never immediate')
  t.equal(backoffDelay(-1, policy, () => 1), 500, 'a negative attempt counts as the first')
})
