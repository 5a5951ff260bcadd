// Pure rules: connection transitions, the pull rule, the retry ladder and the self-heal sweep.
import { test } from 'tap'
import { transition } from '../../sync/lib/connections/state-machine.js'
import type { ConnectionEvent, ConnectionFacts } from '../../sync/lib/connections/state-machine.js'
import { appendsCalendarInvalidation } from '../../sync/lib/pull-rule.js'
import type { PullOutcome } from '../../sync/lib/pull-rule.js'
import {
  ATTEMPT_BUDGET, FAILED_JOB_COOLDOWN_MS, MAX_PROVIDER_RETRY_AFTER_MS, MAX_REQUEUES, providerRetryDelayMs, RETRY_JITTER, RETRY_LADDER_MS, retryDelayMs, sweepAction
} from '../../sync/lib/jobs/rules.js'
import type { ConnectionState } from '../../schemas/sync/index.js'

const now = new Date('2026-11-21T09:00:00.000Z')
const facts = (state: ConnectionState, reason: ConnectionFacts['reason'] = null): ConnectionFacts => ({ state, reason, lastReadFailureAt: null })
const ALL_STATES: ConnectionState[] = ['connecting', 'importing', 'catchingUp', 'healthy', 'delayed', 'actionRequired', 'disconnected']

test('importing -> catchingUp when the import finishes; catchingUp -> healthy on the first successful pull', async (t) => {
  t.match(transition(facts('importing'), { type: 'importFinished' }, now), { state: 'catchingUp', reason: null, changed: true })
  const healthy = transition(facts('catchingUp'), { type: 'pullSucceeded' }, now)
  t.match(healthy, { state: 'healthy', reason: null, changed: true })
  t.same(healthy?.set, { lastReadFailureAt: null, lastSyncedAt: now, lastHealthyAt: now })
  const again = transition(facts('healthy'), { type: 'pullSucceeded' }, now)
  t.equal(again?.changed, false, 'a further pull is no transition, so no invalidation')
  t.same(again?.set.lastSyncedAt, now, 'but it records the sync time')
  t.equal(transition(facts('importing'), { type: 'pullSucceeded' }, now), null, 'a pull cannot skip the import')
  t.equal(transition(facts('healthy'), { type: 'importFinished' }, now), null, 'a late import result changes nothing')
})

test('any state -> actionRequired (authorizationRevoked) with the credential discarded', async (t) => {
  for (const state of ALL_STATES) {
    const next = transition(facts(state), { type: 'grantRevoked' }, now)
    t.match(next, { state: 'actionRequired', reason: 'authorizationRevoked', discardCredential: true }, state)
  }
  t.equal(transition(facts('actionRequired', 'authorizationRevoked'), { type: 'grantRevoked' }, now)?.changed, false, 'already revoked: no second invalidation')
})

test('read failures mark lastReadFailureAt; a successful pull clears it and recovers', async (t) => {
  t.match(transition(facts('healthy'), { type: 'readFailed' }, now), { state: 'delayed', reason: 'readFailure', set: { lastReadFailureAt: now } })
  t.match(transition(facts('importing'), { type: 'readFailed' }, now), { state: 'importing', reason: 'readFailure', set: { lastReadFailureAt: now } })
  t.match(transition(facts('delayed', 'readFailure'), { type: 'pullSucceeded' }, now), { state: 'healthy', reason: null, set: { lastReadFailureAt: null } })
  t.equal(transition(facts('actionRequired', 'authorizationRevoked'), { type: 'readFailed' }, now), null)
  t.equal(transition(facts('disconnected', 'userDisconnected'), { type: 'pullSucceeded' }, now), null)
})

test('a new grant starts an import from any state; disconnecting discards the credential', async (t) => {
  const authorized: ConnectionEvent = { type: 'authorized' }
  for (const state of ALL_STATES) {
    t.match(transition(facts(state, 'readFailure'), authorized, now), { state: 'importing', reason: null, set: { lastReadFailureAt: null } }, state)
  }
  t.match(transition(facts('healthy'), { type: 'disconnected' }, now), { state: 'disconnected', reason: 'userDisconnected', discardCredential: true })
})

test('the pull rule: idle incremental pulls append no calendar invalidation', async (t) => {
  const base: PullOutcome = { operation: 'incremental', changed: 0, deleted: 0, expiryStreakCleared: false, generationPromoted: false }
  t.equal(appendsCalendarInvalidation(base), false, 'nothing changed')
  t.equal(appendsCalendarInvalidation({ ...base, changed: 1 }), true)
  t.equal(appendsCalendarInvalidation({ ...base, deleted: 2 }), true)
  t.equal(appendsCalendarInvalidation({ ...base, expiryStreakCleared: true }), true, 'cursor-expiry streak cleared')
  t.equal(appendsCalendarInvalidation({ ...base, generationPromoted: true }), true, 'generation promoted')
  for (const operation of ['initialImport', 'repair', 'bootstrapCatchUp'] as const) {
    t.equal(appendsCalendarInvalidation({ ...base, operation }), true, `${operation} always appends`)
  }
})

test('the retry ladder grows per attempt and spreads by the jitter', async (t) => {
  const middle = () => 0.5
  t.same(RETRY_LADDER_MS.map((_step, index) => retryDelayMs(index + 1, middle)), [...RETRY_LADDER_MS], 'no spread at the middle of the range')
  t.equal(retryDelayMs(1, () => 0), Math.round(RETRY_LADDER_MS[0] * (1 - RETRY_JITTER)))
  t.equal(retryDelayMs(1, () => 0.999999), Math.round(RETRY_LADDER_MS[0] * (1 + RETRY_JITTER * 0.999998)))
  t.equal(retryDelayMs(99, middle), RETRY_LADDER_MS[RETRY_LADDER_MS.length - 1], 'past the ladder the last rung holds')
  t.equal(ATTEMPT_BUDGET, RETRY_LADDER_MS.length + 1)
})

test('the self-heal sweep rules', async (t) => {
  const failedAt = new Date(now.getTime() - FAILED_JOB_COOLDOWN_MS)
  const job = { status: 'failed' as const, failedAt, requeueCount: 0 }
  t.equal(sweepAction(job, null, now), 'requeue', 'cooled down with requeues left')
  t.equal(sweepAction({ ...job, failedAt: new Date(failedAt.getTime() + 1) }, null, now), 'none', 'still cooling down')
  t.equal(sweepAction({ ...job, requeueCount: MAX_REQUEUES - 1 }, null, now), 'requeue')
  t.equal(sweepAction({ ...job, requeueCount: MAX_REQUEUES }, null, now), 'exhaust', 'failed again after three requeues')
  t.equal(sweepAction({ status: 'exhausted', failedAt, requeueCount: 3 }, { lastReadFailureAt: now }, now), 'remove')
  t.equal(sweepAction({ status: 'exhausted', failedAt, requeueCount: 3 }, { lastReadFailureAt: null }, now), 'none', 'kept for an operator')
  t.equal(sweepAction({ status: 'queued', failedAt: null, requeueCount: 0 }, { lastReadFailureAt: now }, now), 'none')
})

test('the provider\'s next try: 15 s doubling to at most a minute, never under half a step, or its longer Retry-After (at most an hour)', async (t) => {
  const lowest = () => 0
  const highest = () => 1
  t.same([1, 2, 3, 4, 10].map((streak) => providerRetryDelayMs(streak, null, lowest)), [7_500, 15_000, 30_000, 30_000, 30_000])
  t.same([1, 2, 3, 4, 10].map((streak) => providerRetryDelayMs(streak, null, highest)), [15_000, 30_000, 60_000, 60_000, 60_000])
  t.equal(providerRetryDelayMs(1, 120_000, highest), 120_000, 'a longer Retry-After is honoured')
  t.equal(providerRetryDelayMs(3, 1_000, highest), 60_000, 'a shorter one does not hurry the backoff')
  t.equal(providerRetryDelayMs(1, 30 * 24 * 3_600_000, lowest), MAX_PROVIDER_RETRY_AFTER_MS, 'a month is read as an hour')
})
