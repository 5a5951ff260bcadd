import { test } from 'tap'
import {
  AFTER_STATES, BEFORE_STATES, TRANSITIONS, planTransition, stateOf,
  type AfterState, type BeforeState, type OwnWrite, type ReportOperation
} from '../../../lib/events/transition.js'
import type { EventRecord } from '../../../lib/events/record.js'
import { instance, series, standalone } from './fixtures.js'

const NOW = new Date('2026-02-01T12:00:00.000Z')

function eventIn (state: BeforeState | AfterState, id: string, base: EventRecord): EventRecord | null {
  switch (state) {
    case 'absent': return null
    case 'standalone.confirmed': return standalone({ _id: id })
    case 'standalone.cancelled': return standalone({ _id: id, status: 'cancelled' })
    case 'base.confirmed': return series({ _id: id })
    case 'base.cancelled': return series({ _id: id, status: 'cancelled' })
    case 'instance.confirmed': return instance(base, { _id: id })
    case 'instance.cancelled': return instance(base, { _id: id, status: 'cancelled' })
  }
}

type Expected =
  | { refused: true }
  | { writes: (before: EventRecord | null, after: EventRecord | null) => OwnWrite[], report: ReportOperation | null }

const refused: Expected = { refused: true }
const nothing: Expected = { writes: () => [], report: null }
const insertAfter = (report: ReportOperation): Expected => ({ writes: (_b, a) => [{ kind: 'insert', event: a as EventRecord }], report })
const replaceWithAfter = (report: ReportOperation): Expected => ({ writes: (_b, a) => [{ kind: 'replace', event: a as EventRecord }], report })
const deleteOne: Expected = { writes: (b) => [{ kind: 'delete', eventId: (b as EventRecord)._id }], report: 'delete' }
const deleteSeries: Expected = {
  writes: (b) => [{ kind: 'delete', eventId: (b as EventRecord)._id }, { kind: 'deleteInstances', seriesId: (b as EventRecord)._id }],
  report: 'delete'
}
const tombstone = (kind: 'insert' | 'replace'): Expected => ({
  writes: (b, a) => [{ kind, event: { ...((a ?? b) as EventRecord), status: 'cancelled', lastUpdated: NOW.toISOString() } }],
  report: 'delete'
})

// The specification of the write pipeline, one row per stored state, one column per wanted state.
const EXPECTED: Record<BeforeState, Record<AfterState, Expected>> = {
  absent: {
    'standalone.confirmed': insertAfter('create'),
    'standalone.cancelled': nothing,
    'base.confirmed': insertAfter('create'),
    'base.cancelled': nothing,
    'instance.confirmed': insertAfter('create'),
    'instance.cancelled': tombstone('insert'),
    absent: nothing
  },
  'standalone.confirmed': {
    'standalone.confirmed': replaceWithAfter('update'),
    'standalone.cancelled': deleteOne,
    'base.confirmed': replaceWithAfter('update'),
    'base.cancelled': deleteOne,
    'instance.confirmed': refused,
    'instance.cancelled': refused,
    absent: deleteOne
  },
  'base.confirmed': {
    'standalone.confirmed': {
      writes: (_b, a) => [{ kind: 'replace', event: a as EventRecord }, { kind: 'deleteInstances', seriesId: (a as EventRecord)._id }],
      report: 'update'
    },
    'standalone.cancelled': deleteSeries,
    // Same timing: edited occurrences stay (the timing-change variant is tested below).
    'base.confirmed': replaceWithAfter('update'),
    'base.cancelled': deleteSeries,
    'instance.confirmed': refused,
    'instance.cancelled': refused,
    absent: deleteSeries
  },
  'instance.confirmed': {
    'standalone.confirmed': refused,
    'standalone.cancelled': refused,
    'base.confirmed': refused,
    'base.cancelled': refused,
    'instance.confirmed': replaceWithAfter('update'),
    'instance.cancelled': tombstone('replace'),
    absent: tombstone('replace')
  },
  'instance.cancelled': {
    'standalone.confirmed': refused,
    'standalone.cancelled': refused,
    'base.confirmed': refused,
    'base.cancelled': refused,
    'instance.confirmed': replaceWithAfter('create'),
    'instance.cancelled': nothing,
    absent: nothing
  }
}

test('every cell of the transition table', async (t) => {
  t.equal(Object.keys(TRANSITIONS).length, BEFORE_STATES.length)
  // The rule table of lib/events/transition.ts has a rule for every pair of states: a missing
  // cell would be a transition nobody decided.
  const ruled = Object.values(TRANSITIONS).reduce((count, row) => count + Object.keys(row).length, 0)
  t.equal(ruled, BEFORE_STATES.length * AFTER_STATES.length, 'a rule for every cell')
  for (const beforeState of BEFORE_STATES) {
    for (const afterState of AFTER_STATES) {
      t.test(`${beforeState} -> ${afterState}`, async (t) => {
        const id = '0000000000000000000000ff'
        const base = series({ _id: '0000000000000000000000aa' })
        const before = eventIn(beforeState, id, base)
        const after = eventIn(afterState, id, base)
        t.equal(stateOf(before), beforeState)
        t.equal(stateOf(after), afterState)
        const result = planTransition(before, after, NOW)
        const expected = EXPECTED[beforeState][afterState]
        if ('refused' in expected) {
          t.equal(result.ok, false, 'refused')
          if (!result.ok) t.match(result.reason, /occurrence|series/)
          return
        }
        t.ok(result.ok, 'allowed')
        if (!result.ok) return
        t.same(result.plan.writes, expected.writes(before, after))
        t.same(result.plan.report, expected.report === null ? null : { eventId: id, operation: expected.report })
      })
    }
  }
})

test('a series whose timing or text changes has its edited occurrences follow it', async (t) => {
  const before = series()
  for (const change of [
    { startDate: '2026-03-02T10:00:00+01:00', endDate: '2026-03-02T11:00:00+01:00' },
    { recurrence: { rule: ['RRULE:FREQ=DAILY'] } },
    { timeZone: 'Europe/Paris' }
  ]) {
    const result = planTransition(before, { ...before, ...change }, NOW)
    t.ok(result.ok)
    if (result.ok) t.same(result.plan.writes.map((write) => write.kind), ['replace', 'followSeries'], JSON.stringify(change))
  }
  const retitled = planTransition(before, { ...before, title: 'Daily' }, NOW)
  t.ok(retitled.ok)
  if (retitled.ok) t.same(retitled.plan.writes.map((write) => write.kind), ['replace', 'followSeries'], 'a new title reaches the occurrences that kept the old one')
  const reprioritised = planTransition(before, { ...before, priority: 'work' }, NOW)
  t.ok(reprioritised.ok)
  if (reprioritised.ok) t.same(reprioritised.plan.writes.map((write) => write.kind), ['replace'], 'nothing an occurrence follows: the occurrences stay as they are')
})

test('an occurrence cannot move to another series or original start', async (t) => {
  const base = series()
  const stored = instance(base)
  const otherSeries = planTransition(stored, { ...stored, recurrence: { eventId: series()._id } }, NOW)
  t.same(otherSeries, { ok: false, reason: 'an occurrence keeps its series and its original start' })
  const otherStart = planTransition(stored, { ...stored, originalStartDate: '2026-03-09T09:00:00+01:00' }, NOW)
  t.equal(otherStart.ok, false)
})
