import { test } from 'tap'
import { planOccurrenceDelete } from '../../../lib/events/apply-to.js'
import { occurrenceAt } from '../../../lib/events/range.js'
import type { EventRecord } from '../../../lib/events/record.js'
import { instance, series } from './fixtures.js'

const NOW = new Date('2026-02-01T12:00:00.000Z')
const base = series({ _id: 'a'.repeat(24), recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10'] } })
const third = occurrenceAt(base, '20260316T080000Z') as EventRecord
const first = occurrenceAt(base, '20260302T080000Z') as EventRecord

test('applyTo all removes the series and every stored occurrence', async (t) => {
  const result = planOccurrenceDelete(base, { stored: null, expanded: third }, 'all', NOW)
  t.same(result, {
    ok: true,
    plan: {
      writes: [{ kind: 'delete', eventId: base._id }, { kind: 'deleteInstances', seriesId: base._id }],
      report: { eventId: base._id, operation: 'delete' }
    }
  })
})

test('applyTo this cancels one occurrence, stored or not', async (t) => {
  const tombstoneId = 'f'.repeat(24)
  const unedited = planOccurrenceDelete(base, { stored: null, expanded: { ...third, _id: tombstoneId } }, 'this', NOW)
  t.same(unedited, {
    ok: true,
    plan: {
      writes: [{ kind: 'insert', event: { ...third, _id: tombstoneId, status: 'cancelled', lastUpdated: NOW.toISOString() } }],
      report: { eventId: tombstoneId, operation: 'delete' }
    }
  })
  const edited = instance(base, { originalStartDate: third.originalStartDate, title: 'moved' })
  const result = planOccurrenceDelete(base, { stored: edited, expanded: third }, 'this', NOW)
  t.ok(result.ok)
  if (result.ok) t.same(result.plan.writes, [{ kind: 'replace', event: { ...edited, status: 'cancelled', lastUpdated: NOW.toISOString() } }])
})

test('applyTo thisAndFollowing ends the series before the occurrence', async (t) => {
  const result = planOccurrenceDelete(base, { stored: null, expanded: third }, 'thisAndFollowing', NOW)
  t.same(result, {
    ok: true,
    plan: {
      writes: [
        {
          kind: 'replace',
          event: { ...base, recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO;UNTIL=20260316T075959Z'] }, lastUpdated: NOW.toISOString() }
        },
        { kind: 'deleteInstances', seriesId: base._id, fromOriginalStart: new Date('2026-03-16T08:00:00Z') }
      ],
      report: { eventId: base._id, operation: 'update' }
    }
  })
})

test('applyTo thisAndFollowing on the first occurrence removes the whole series', async (t) => {
  const result = planOccurrenceDelete(base, { stored: null, expanded: first }, 'thisAndFollowing', NOW)
  t.ok(result.ok)
  if (result.ok) t.same(result.plan.writes, [{ kind: 'delete', eventId: base._id }, { kind: 'deleteInstances', seriesId: base._id }])
})

test('a series stored before its rule was refused cannot be cut, and says why', async (t) => {
  const legacy = series({ _id: 'b'.repeat(24), recurrence: { rule: ['RRULE:FREQ=SECONDLY'] } })
  const stored = instance(legacy, { _id: 'c'.repeat(24), originalStartDate: '2026-03-02T09:00:05+01:00' })
  t.same(planOccurrenceDelete(legacy, { stored, expanded: stored }, 'thisAndFollowing', NOW), {
    ok: false,
    reason: 'the series cannot be cut: FREQ=SECONDLY is not allowed: a series repeats at most hourly'
  })
})
