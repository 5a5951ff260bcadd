import { test } from 'tap'
import { movedExceptions, movedExclusions, seriesMove, timingOf } from '../../../lib/events/series-move.js'
import { planTransition } from '../../../lib/events/transition.js'
import { occurrenceId } from '../../../lib/events/ids.js'
import { instance, series } from './fixtures.js'

const NOW = new Date('2026-11-28T12:00:00.000Z')

// A daily stand-up at 10:00 in Berlin, across the night the clocks go forward (28 March 2027).
function daily (fields = {}) {
  return series({ title: 'Stand-up', startDate: '2027-03-22T10:00:00+01:00', endDate: '2027-03-22T10:30:00+01:00', recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=14'] }, ...fields })
}

test('a series moved from 10:00 to 14:00: its exceptions move by the same wall-clock shift, across a change of offset', async (t) => {
  const before = daily()
  const after = { ...before, startDate: '2027-03-22T14:00:00+01:00', endDate: '2027-03-22T14:30:00+01:00' }
  t.same(seriesMove(before, after), { days: 0, minutes: 240 })
  const cancelled = instance(before, { _id: occurrenceId(before._id, '20270324T090000Z'), originalStartDate: '2027-03-24T10:00:00+01:00', startDate: '2027-03-24T10:00:00+01:00', endDate: '2027-03-24T10:30:00+01:00', status: 'cancelled' })
  const renamed = instance(before, { originalStartDate: '2027-03-30T10:00:00+02:00', startDate: '2027-03-30T10:00:00+02:00', endDate: '2027-03-30T10:30:00+02:00', title: 'Stand-up (renamed there)', providerEventId: 'g_20270330T080000Z' } as never)
  const ownTime = instance(before, { originalStartDate: '2027-03-25T10:00:00+01:00', startDate: '2027-03-25T16:00:00+01:00', endDate: '2027-03-25T17:00:00+01:00' })
  const moved = movedExceptions(before, after, [cancelled, renamed, ownTime], NOW)
  t.same(moved.map((event) => [event._id, event.originalStartDate, event.startDate, event.endDate, event.status, event.title]), [
    [occurrenceId(before._id, '20270324T130000Z'), '2027-03-24T14:00:00+01:00', '2027-03-24T14:00:00+01:00', '2027-03-24T14:30:00+01:00', 'cancelled', 'Stand-up'],
    [renamed._id, '2027-03-30T14:00:00+02:00', '2027-03-30T14:00:00+02:00', '2027-03-30T14:30:00+02:00', 'confirmed', 'Stand-up (renamed there)'],
    [ownTime._id, '2027-03-25T14:00:00+01:00', '2027-03-25T16:00:00+01:00', '2027-03-25T17:00:00+01:00', 'confirmed', 'Stand-up']
  ], 'a cancellation under its new occurrence id, an edit under its own id; an occurrence moved on its own keeps its time; after the clocks change, 10:00 is still 14:00')
  t.notOk('providerEventId' in (moved[1] as object), 'the provider id of the old occurrence goes')
  t.ok(moved.every((event) => event.lastUpdated === NOW.toISOString()))
})

test('a move to another day, a rule that leaves an exception without an occurrence, a zone change', async (t) => {
  const before = series({ startDate: '2026-11-30T09:00:00+01:00', endDate: '2026-11-30T10:00:00+01:00', recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO'] } })
  const edit = instance(before, { originalStartDate: '2026-12-07T09:00:00+01:00', startDate: '2026-12-07T09:00:00+01:00', endDate: '2026-12-07T10:00:00+01:00', location: 'Room 4' })
  const toTuesday = { ...before, startDate: '2026-12-01T09:00:00+01:00', endDate: '2026-12-01T10:00:00+01:00', recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=TU'] } }
  t.same(movedExceptions(before, toTuesday, [edit], NOW).map((event) => [event.originalStartDate, event.location]), [['2026-12-08T09:00:00+01:00', 'Room 4']], 'Monday\'s edit to the Tuesday after')
  const keptMonday = { ...before, startDate: '2026-12-01T09:00:00+01:00', endDate: '2026-12-01T10:00:00+01:00', recurrence: { rule: ['RRULE:FREQ=WEEKLY;BYDAY=MO'] } }
  t.same(movedExceptions(before, keptMonday, [edit], NOW), [], 'a Tuesday that is no occurrence of the changed rule: dropped')
  t.same(movedExceptions(before, { ...before, timeZone: 'Europe/Paris' }, [edit], NOW), [], 'another zone: none kept')
  t.same(movedExceptions(before, { ...before, isAllDay: true, startDate: '2026-11-30', endDate: '2026-12-01' }, [edit], NOW), [], 'all-day now: none kept')
})

test('exclusions move too, each in the form it was written, and only onto occurrences', async (t) => {
  const before = daily({ recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=14', 'EXDATE;TZID=Europe/Berlin:20270324T100000,20270330T100000', 'EXDATE:20270325T090000Z', 'EXDATE:20270501T080000Z'] } })
  const after = { ...before, startDate: '2027-03-22T14:00:00+01:00', endDate: '2027-03-22T14:30:00+01:00' }
  t.same(movedExclusions(timingOf(before), timingOf(after), { days: 0, minutes: 240 }), ['EXDATE;TZID=Europe/Berlin:20270324T140000,20270330T140000', 'EXDATE:20270325T130000Z'], 'one beyond the series\' end had no occurrence to exclude')

  const planned = planTransition(before, after, NOW)
  t.ok(planned.ok)
  if (!planned.ok) return
  const replaced = planned.plan.writes[0]
  t.same(planned.plan.writes.map((write) => write.kind), ['replace', 'followSeries'])
  t.same(replaced?.kind === 'replace' ? replaced.event.recurrence?.rule : null, ['RRULE:FREQ=DAILY;COUNT=14', 'EXDATE;TZID=Europe/Berlin:20270324T140000,20270330T140000', 'EXDATE:20270325T130000Z'], 'the stored and reported series carries them moved')

  const ownExclusions = { ...after, recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=14', 'EXDATE:20270326T130000Z'] } }
  const kept = planTransition(before, ownExclusions, NOW)
  t.same(kept.ok && kept.plan.writes[0]?.kind === 'replace' ? kept.plan.writes[0].event.recurrence?.rule : null, ownExclusions.recurrence.rule, 'exclusions the client changed are its own')
})

test('a series renamed: an exception that kept the old title takes the new one, one renamed on its own keeps its own; the same for description and location', async (t) => {
  const before = daily({ description: 'Daily sync', location: 'Room 1' })
  const after = { ...before, title: 'Stand-up (team)', location: 'Room 2' }
  const moved = instance(before, { originalStartDate: '2027-03-23T10:00:00+01:00', startDate: '2027-03-23T11:00:00+01:00', endDate: '2027-03-23T11:30:00+01:00' })
  const renamed = instance(before, { originalStartDate: '2027-03-24T10:00:00+01:00', startDate: '2027-03-24T10:00:00+01:00', endDate: '2027-03-24T10:30:00+01:00', title: 'Stand-up (renamed there)', location: 'Room 9' })
  const followed = movedExceptions(before, after, [moved, renamed], NOW)
  t.same(followed.map((event) => [event._id, event.title, event.location, event.description, event.startDate]), [
    [moved._id, 'Stand-up (team)', 'Room 2', 'Daily sync', '2027-03-23T11:00:00+01:00'],
    [renamed._id, 'Stand-up (renamed there)', 'Room 9', 'Daily sync', '2027-03-24T10:00:00+01:00']
  ], 'the moved one keeps its time and takes the new title and room; the renamed one keeps its own title and room')
  t.same(followed.map((event) => event.lastUpdated), [moved.lastUpdated, renamed.lastUpdated], 'taking the series\' title is no change of an occurrence\'s own: each keeps its time of change')
  const cleared = movedExceptions(before, { ...before, location: '' }, [moved], NOW)
  t.notOk('location' in (cleared[0] as object), 'a location the series cleared is cleared where it was the series\' own')
})

test('a series\' new reminders and colour reach the exceptions that still had the series\' own; one changed there keeps its own', async (t) => {
  const before = daily({ reminders: [{ minutes: 10 }], color: 'sage' })
  const after = { ...before, reminders: [{ minutes: 30 }, { minutes: 5 }], color: 'tomato' as const }
  const moved = instance(before, { originalStartDate: '2027-03-23T10:00:00+01:00', startDate: '2027-03-23T11:00:00+01:00', endDate: '2027-03-23T11:30:00+01:00' })
  const ownAlarm = instance(before, { originalStartDate: '2027-03-24T10:00:00+01:00', startDate: '2027-03-24T10:15:00+01:00', endDate: '2027-03-24T10:45:00+01:00', reminders: [], color: 'banana' })
  const followed = movedExceptions(before, after, [moved, ownAlarm], NOW)
  t.same(followed.map((event) => [event._id, event.reminders, event.color]), [
    [moved._id, [{ minutes: 30 }, { minutes: 5 }], 'tomato'],
    [ownAlarm._id, [], 'banana']
  ], 'the moved one takes the new reminders and colour; the one given none and its own colour keeps them')

  const toDefault = movedExceptions(before, { ...before, reminders: undefined, color: undefined }, [moved], NOW)[0] as object
  t.notOk('reminders' in toDefault, 'reminders back to the calendar\'s default are no field there either')
  t.notOk('color' in toDefault, 'nor is a colour the series cleared')

  const plan = planTransition(before, after, NOW)
  t.ok(plan.ok && plan.plan.writes.some((write) => write.kind === 'followSeries'), 'a change of only reminders and colour still reaches the exceptions')
})
