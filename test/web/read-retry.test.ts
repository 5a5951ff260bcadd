// When a range read fails, the cache reads again only when that can help: when the server named a
// wait, after it; after no answer or a server error, once; after a refusal, never.
import { test } from 'tap'
import { MAX_READ_WAIT_MS, READ_RETRIES_WHEN_ASKED, readRetryWait } from '../../web/src/lib/retry-after.js'

const now = Date.parse('2026-03-02T10:00:00Z')

test('a 429 or a 503 naming a wait is read again when the server said', async (t) => {
  const shed = { status: 503, code: 'OVERLOADED', retryAfter: '5' }
  t.equal(readRetryWait(0, shed, now), 5000, 'the service shedding load: after its 5 s')
  t.equal(readRetryWait(0, { status: 503, code: 'DATABASE_UNAVAILABLE', retryAfter: 'Mon, 02 Mar 2026 10:00:02 GMT' }, now), 2000, 'an HTTP date')
  t.equal(readRetryWait(0, { status: 429, retryAfter: '30' }, now), 30_000)
  t.equal(readRetryWait(READ_RETRIES_WHEN_ASKED - 1, shed, now), 5000)
  t.equal(readRetryWait(READ_RETRIES_WHEN_ASKED, shed, now), null, `after ${READ_RETRIES_WHEN_ASKED} waits the failure is shown`)
  t.equal(readRetryWait(0, { status: 429, retryAfter: String(MAX_READ_WAIT_MS / 1000 + 1) }, now), null, 'a longer wait than a reader keeps to is shown at once')
  t.equal(readRetryWait(0, { status: 503, code: 'MAINTENANCE', retryAfter: '30' }, now), null, 'maintenance is not waited out')
})

test('no answer, or a server error naming no wait: once, after a second; a refusal: never', async (t) => {
  t.equal(readRetryWait(0, { status: null, retryAfter: null }, now), 1000)
  t.equal(readRetryWait(1, { status: null, retryAfter: null }, now), null)
  t.equal(readRetryWait(0, { status: 502, retryAfter: null }, now), 1000)
  t.equal(readRetryWait(1, { status: 502, retryAfter: null }, now), null)
  t.equal(readRetryWait(0, { status: 429, retryAfter: null }, now), null, 'a 429 without a wait is shown')
  for (const status of [400, 401, 403, 404]) t.equal(readRetryWait(0, { status, retryAfter: null }, now), null, `${status}: asking again gets the same answer`)
})
