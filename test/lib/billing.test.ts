// The billing rules (lib/billing.ts), cell by cell.
import { test } from 'tap'
import {
  checkoutTrialEnd, effectiveStatus, isBypassed, isReadOnlyStatus, isWholeRecord, newTrialRecord, shouldApplySubscription, statusView, subscriptionStatusOf
} from '../../lib/billing.js'

const NOW = new Date('2026-05-04T12:00:00Z')
const HOUR = 60 * 60 * 1000

test('the card-less trial: 7 days, then trial_expired', async (t) => {
  const record = newTrialRecord(NOW)
  t.equal(record.trialEndsAt.toISOString(), '2026-05-11T12:00:00.000Z')
  t.equal(effectiveStatus(record, NOW), 'trialing')
  t.equal(effectiveStatus(record, record.trialEndsAt), 'trial_expired', 'ends at its end, not after')
  t.ok(isWholeRecord(record))
  t.notOk(isWholeRecord(null))
  t.notOk(isWholeRecord({ customerId: 'cus_1' }), 'no trial end: not a record')
  t.notOk(isWholeRecord({ trialEndsAt: new Date(Number.NaN) }))
})

test('Stripe statuses: writable ones, read-only ones, unknown ones fail closed', async (t) => {
  for (const status of ['trialing', 'active', 'past_due'] as const) t.notOk(isReadOnlyStatus(status), status)
  for (const status of ['incomplete', 'incomplete_expired', 'unpaid', 'paused', 'canceled', 'trial_expired'] as const) t.ok(isReadOnlyStatus(status), status)
  t.equal(subscriptionStatusOf('active'), 'active')
  t.equal(subscriptionStatusOf('something_new'), 'unpaid')
  const base = { trialEndsAt: NOW, subscriptionId: 'sub_1', customerId: 'cus_1' }
  t.equal(effectiveStatus({ ...base, subscriptionStatus: 'active', paymentFailed: true }, NOW), 'past_due', 'a confirmed failed payment')
  t.equal(effectiveStatus({ ...base, subscriptionStatus: 'canceled', paymentFailed: true }, NOW), 'canceled')
})

test('the status answer', async (t) => {
  const trialEnd = new Date(NOW.getTime() + 5 * 24 * HOUR)
  t.same(statusView({ trialEndsAt: NOW, subscriptionId: 'sub_1', subscriptionStatus: 'trialing', subscriptionTrialEnd: trialEnd, currentPeriodEnd: trialEnd }, NOW, false), {
    subscriptionStatus: 'trialing',
    trialEndsAt: trialEnd.toISOString(),
    currentPeriodEnd: trialEnd.toISOString(),
    isReadOnly: false,
    cancelAtPeriodEnd: false,
    needsPaymentMethod: false,
    hasSubscription: true,
    bypass: false
  })
  t.match(statusView({ trialEndsAt: NOW, subscriptionId: 'sub_1', subscriptionStatus: 'trialing' }, NOW, false), { trialEndsAt: null, currentPeriodEnd: null })
  t.match(statusView({ trialEndsAt: NOW, subscriptionId: 'sub_1', subscriptionStatus: 'unpaid', cancelAtPeriodEnd: true }, NOW, false), { isReadOnly: true, needsPaymentMethod: true, cancelAtPeriodEnd: true, trialEndsAt: null })
  t.match(statusView({ trialEndsAt: NOW }, NOW, true), { subscriptionStatus: 'trial_expired', isReadOnly: false, bypass: true })
})

test('the trial a checkout keeps: the first subscription only, 48 hours or more', async (t) => {
  t.same(checkoutTrialEnd({ trialEndsAt: new Date(NOW.getTime() + 48 * HOUR) }, NOW), new Date(NOW.getTime() + 48 * HOUR))
  t.equal(checkoutTrialEnd({ trialEndsAt: new Date(NOW.getTime() + 47 * HOUR) }, NOW), undefined)
  t.equal(checkoutTrialEnd({ trialEndsAt: new Date(NOW.getTime() + 96 * HOUR), subscriptionId: 'sub_old' }, NOW), undefined)
})

test('bypass list and which subscription an event may write', async (t) => {
  t.ok(isBypassed([' Staff@Example.com '], 'staff@example.COM'))
  t.notOk(isBypassed(['staff@example.com'], undefined))
  t.notOk(isBypassed([], 'staff@example.com'))
  const live = { trialEndsAt: NOW, subscriptionId: 'sub_new', subscriptionStatus: 'active' as const }
  t.ok(shouldApplySubscription({ trialEndsAt: NOW }, { id: 'sub_x', status: 'canceled' }))
  t.ok(shouldApplySubscription(live, { id: 'sub_new', status: 'canceled' }), 'the live one itself')
  t.notOk(shouldApplySubscription(live, { id: 'sub_old', status: 'canceled' }), 'an ended earlier one never overwrites the live one')
  t.ok(shouldApplySubscription(live, { id: 'sub_other', status: 'active' }))
  t.ok(shouldApplySubscription({ ...live, subscriptionStatus: 'canceled' }, { id: 'sub_old', status: 'canceled' }))
})
