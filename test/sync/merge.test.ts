import { test } from 'tap'
import { mergeChange, planWrite } from '../../sync/lib/merge.js'
import type { EventContent } from '../../schemas/sync/index.js'

const BASE: EventContent = { title: 'Budget review', startDate: '2026-12-10T10:00:00+01:00', endDate: '2026-12-10T11:00:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin' }

test('each part from the side that changed it; a part both changed from the newer change', async (t) => {
  const ours = { ...BASE, title: 'Budget review (Q4)' }
  const theirs = { ...BASE, location: 'Room 4' }
  t.same(mergeChange(BASE, ours, theirs, true), { content: { ...BASE, title: 'Budget review (Q4)', location: 'Room 4' }, theirs: ['location'] }, 'a room there, a title here')
  t.same(mergeChange(BASE, ours, theirs, false).content, { ...BASE, title: 'Budget review (Q4)', location: 'Room 4' }, 'whichever is newer')

  const moved = { ...BASE, startDate: '2026-12-10T15:00:00+01:00', endDate: '2026-12-10T16:00:00+01:00' }
  const renamed = { ...BASE, title: 'Budget (theirs)', endDate: '2026-12-10T11:30:00+01:00' }
  t.same(mergeChange(BASE, moved, renamed, true).content, { ...moved, title: 'Budget (theirs)' }, 'start and end move together: ours, which is newer, whole; their title')
  t.same(mergeChange(BASE, moved, renamed, false).content, { ...renamed }, 'theirs newer: their timing whole and their title')
  t.same(mergeChange(BASE, { ...BASE, title: 'A' }, { ...BASE, title: 'B' }, true).content.title, 'A')
  t.same(mergeChange(BASE, { ...BASE, title: 'A' }, { ...BASE, title: 'B' }, false).content.title, 'B')
  const cleared = mergeChange({ ...BASE, description: 'notes' }, { ...BASE, description: 'notes', title: 'C' }, { ...BASE }, true).content
  t.notOk('description' in cleared, 'a description cleared there is cleared')
  t.same(mergeChange(BASE, { ...BASE, startDate: '2026-12-10T09:00:00Z', endDate: '2026-12-10T10:00:00Z' }, BASE, false).theirs, [], 'the same instants written with another offset are no change')
})

test('planWrite: no base, the newer whole; the provider already holding the merge, nothing to write', async (t) => {
  const subject = { content: { ...BASE, title: 'Ours' }, lastUpdated: '2026-11-28T10:00:01.000Z' }
  t.same(planWrite(subject, null, false), { kind: 'write', content: subject.content, merged: false }, 'nothing there')
  t.same(planWrite(subject, { content: { ...BASE, location: 'Room 4' }, updated: '2026-11-28T10:00:00.000Z' }, false), { kind: 'write', content: subject.content, merged: false }, 'no base: the newer change whole, as before')
  t.same(planWrite(subject, { content: BASE, updated: '2026-11-28T10:00:02.000Z' }, false), { kind: 'theirs' }, 'no base, theirs newer')
  const based = { ...subject, base: BASE }
  t.same(planWrite(based, { content: { ...BASE, location: 'Room 4' }, updated: '2026-11-28T10:00:02.000Z' }, false), { kind: 'write', content: { ...BASE, title: 'Ours', location: 'Room 4' }, merged: true }, 'merged, though theirs is newer')
  t.same(planWrite(based, { content: { ...BASE, title: 'Ours' }, updated: '2026-11-28T10:00:02.000Z' }, false), { kind: 'theirs' }, 'the provider holds it already')
  t.same(planWrite(based, { content: { ...BASE, title: 'Theirs' }, updated: '2026-11-28T10:00:02.000Z' }, true), { kind: 'write', content: subject.content, merged: false }, 'our own copy there: ours')
})

test('reminders are one part: set at one side and a title at the other, both kept; the default is a value of its own', async (t) => {
  const ours = { ...BASE, title: 'Budget review (Q4)' }
  const theirs = { ...BASE, reminders: [{ minutes: 10 }] }
  t.same(mergeChange(BASE, ours, theirs, true), { content: { ...ours, reminders: [{ minutes: 10 }] }, theirs: ['reminders'] }, 'a reminder there, a title here')
  t.same(mergeChange(BASE, { ...BASE, reminders: [{ minutes: 30 }, { minutes: 5 }] }, { ...BASE, reminders: [{ minutes: 5 }, { minutes: 30 }] }, false).theirs, [], 'the same reminders in another order are no change')
  t.same(mergeChange({ ...BASE, reminders: [{ minutes: 10 }] }, { ...BASE, reminders: [{ minutes: 10 }], title: 'T' }, { ...BASE }, true).content, { ...BASE, title: 'T' }, 'back to the default there: the default here')
  t.same(mergeChange(BASE, { ...BASE, reminders: [] }, { ...BASE, reminders: [{ minutes: 60 }] }, true).content.reminders, [], 'both changed: the newer, ours, says none')
})

test('colour is one part: set at one side and a title at the other, both kept; the calendar\'s colour is a value of its own', async (t) => {
  const ours = { ...BASE, title: 'Budget review (Q4)' }
  const theirs = { ...BASE, color: 'basil' as const }
  t.same(mergeChange(BASE, ours, theirs, true), { content: { ...ours, color: 'basil' }, theirs: ['color'] }, 'a colour there, a title here')
  t.same(mergeChange({ ...BASE, color: 'grape' }, { ...BASE, color: 'grape', title: 'T' }, { ...BASE }, true).content, { ...BASE, title: 'T' }, 'back to the calendar\'s colour there: here too')
  t.same(mergeChange(BASE, { ...BASE, color: 'tomato' }, { ...BASE, color: 'peacock' }, true).content.color, 'tomato', 'both changed: the newer, ours')
  t.same(mergeChange(BASE, { ...BASE, color: 'tomato' }, { ...BASE, color: 'peacock' }, false).content.color, 'peacock', 'both changed: the newer, theirs')
})
