import { test } from 'tap'
import {
  ProviderAuthorizationRevokedError, ProviderCursorExpiredError, ProviderNotFoundError, ProviderRejectedError, ProviderUnavailableError,
  ProviderVersionConflictError, providerError
} from '../../sync/lib/providers/port.js'

test('each kind of provider failure is the port\'s error for it, named and explained for the log', async (t) => {
  const failure = { who: 'Google', detail: 'insert: 403 requiredAccessLevel', status: 403 }
  const revoked = providerError({ ...failure, kind: 'revoked' })
  t.type(revoked, ProviderAuthorizationRevokedError)
  t.equal(revoked.message, 'Google refused the stored credential (insert: 403 requiredAccessLevel)')
  t.type(providerError({ ...failure, kind: 'cursorExpired' }), ProviderCursorExpiredError)
  t.type(providerError({ ...failure, kind: 'notFound' }), ProviderNotFoundError)
  t.type(providerError({ ...failure, kind: 'conflict' }), ProviderVersionConflictError)
  const rejected = providerError({ ...failure, kind: 'rejected' })
  t.type(rejected, ProviderRejectedError)
  t.equal((rejected as ProviderRejectedError).status, 403, 'a refusal keeps its status (403 on a write: a calendar that may only be read)')
})

test('an unavailable provider keeps its status and the wait it asked for', async (t) => {
  const waited = providerError({ kind: 'unavailable', who: 'Microsoft', detail: 'delta: 429', status: 429, retryAfterMs: 30_000 })
  t.type(waited, ProviderUnavailableError)
  t.match(waited, { status: 429, retryAfterMs: 30_000, message: 'Microsoft is unavailable for now (delta: 429, retry after 30 s)' })
  const silent = providerError({ kind: 'unavailable', who: 'the CalDAV server', detail: 'REPORT: 503', status: 503 })
  t.match(silent, { status: 503, retryAfterMs: null, message: 'the CalDAV server is unavailable for now (REPORT: 503)' })
})
