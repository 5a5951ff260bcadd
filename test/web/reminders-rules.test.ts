// The rules of reminders in the browser (web/src/lib/reminders.ts): labels and custom minutes,
// which reminders fall due when (occurrences of a series and all-day events included), what a
// notification says, and when the permission may be offered.
import { test } from 'tap'
import { customMinutes, effectiveReminders, keptShown, LATE_GRACE_MS, notificationText, offersPermission, reminderLabel, reminderPlan, remindersBetween, remindersInWords, withAnotherReminder } from '../../web/src/lib/reminders.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'

const ZONE = 'Europe/Berlin'
const event = (fields: Partial<CalendarEvent> & Pick<CalendarEvent, '_id' | 'startDate' | 'endDate'>): CalendarEvent => ({
  title: 'Dentist', isAllDay: false, timeZone: ZONE, status: 'confirmed', origin: 'compass', priority: 'unassigned', ...fields
})

test('labels, custom minutes and the next reminder to add', async (t) => {
  t.same([0, 5, 10, 30, 60, 90, 120, 1440, 2880, 10_080, 40_320].map(reminderLabel), [
    'At the start', '5 minutes before', '10 minutes before', '30 minutes before', '1 hour before', '90 minutes before', '2 hours before',
    '1 day before', '2 days before', '1 week before', '4 weeks before'
  ])
  t.equal(customMinutes('45'), 45)
  t.equal(customMinutes(' 0 '), 0)
  t.equal(customMinutes('40320'), 40_320)
  t.equal(customMinutes('40321'), null, 'more than four weeks')
  t.equal(customMinutes('-5'), null)
  t.equal(customMinutes('1.5'), null)
  t.equal(customMinutes(''), null)
  t.same(withAnotherReminder([]), [{ minutes: 5 }], 'the first preset')
  t.same(withAnotherReminder([{ minutes: 5 }, { minutes: 10 }]), [{ minutes: 5 }, { minutes: 10 }, { minutes: 30 }], 'the first preset not taken')
  const five = [1, 2, 3, 4, 5].map((minutes) => ({ minutes }))
  t.equal(withAnotherReminder(five), five, 'never a sixth')
})

test('which reminders fall due, for single events, occurrences and all-day events', async (t) => {
  const now = Date.parse('2026-03-02T08:00:00Z')
  const events = [
    event({ _id: 'a'.repeat(24), startDate: '2026-03-02T09:10:00+01:00', endDate: '2026-03-02T10:00:00+01:00', reminders: [{ minutes: 30 }, { minutes: 10 }], location: 'Main Street 1' }),
    // Two occurrences of one series: each its own reminder.
    event({ _id: `${'b'.repeat(24)}_20260302T090000Z`, title: 'Walk', startDate: '2026-03-02T10:00:00+01:00', endDate: '2026-03-02T10:30:00+01:00', reminders: [{ minutes: 5 }], recurrence: { eventId: 'b'.repeat(24) } }),
    event({ _id: `${'b'.repeat(24)}_20260303T090000Z`, title: 'Walk', startDate: '2026-03-03T10:00:00+01:00', endDate: '2026-03-03T10:30:00+01:00', reminders: [{ minutes: 5 }], recurrence: { eventId: 'b'.repeat(24) } }),
    event({ _id: 'c'.repeat(24), title: 'Holiday', isAllDay: true, startDate: '2026-03-03', endDate: '2026-03-04', reminders: [{ minutes: 1440 }] }),
    event({ _id: 'd'.repeat(24), title: 'Default', startDate: '2026-03-02T09:30:00+01:00', endDate: '2026-03-02T10:00:00+01:00' }),
    event({ _id: 'e'.repeat(24), title: 'None', startDate: '2026-03-02T09:30:00+01:00', endDate: '2026-03-02T10:00:00+01:00', reminders: [] }),
    event({ _id: 'f'.repeat(24), title: 'Called off', status: 'cancelled', startDate: '2026-03-02T09:30:00+01:00', endDate: '2026-03-02T10:00:00+01:00', reminders: [{ minutes: 10 }] })
  ]
  const due = remindersBetween(events, now - LATE_GRACE_MS, now + 2 * 86_400_000, ZONE)
  t.same(due.map((reminder) => [reminder.title, new Date(reminder.at).toISOString()]), [
    ['Dentist', '2026-03-02T07:40:00.000Z'],
    ['Dentist', '2026-03-02T08:00:00.000Z'],
    ['Walk', '2026-03-02T08:55:00.000Z'],
    ['Holiday', '2026-03-01T23:00:00.000Z'],
    ['Walk', '2026-03-03T08:55:00.000Z']
  ].filter(([, at]) => Date.parse(at as string) >= now - LATE_GRACE_MS), 'in time order; an all-day event a day before its midnight where the person is; the default and none give nothing here, nor a cancelled occurrence')
  t.equal(new Set(due.map((reminder) => reminder.key)).size, due.length, 'each reminder has its own key')

  const plan = reminderPlan(due, new Set(), now)
  t.same(plan.show.map((reminder) => reminder.title), ['Dentist'], 'the one due now')
  t.equal(plan.nextAt, Date.parse('2026-03-02T08:55:00Z'), 'then look again at the next one')
  t.same(reminderPlan(due, new Set([due[0]?.key ?? '']), now).show, [], 'shown once')
  t.same(reminderPlan(due, new Set(), now + LATE_GRACE_MS + 1).show.map((reminder) => reminder.title), [], 'too late to be of use: not shown')
})

test('a Google calendar\'s default reminders hold for its events without reminders of their own', async (t) => {
  const GOOGLE = 'sam@example.com'
  const defaults = new Map([[GOOGLE, [{ minutes: 30 }, { minutes: 5 }]], ['family@group.calendar.google.com', []]])
  const keeping = event({ _id: 'a'.repeat(24), calendarId: GOOGLE, startDate: '2026-03-02T09:00:00+01:00', endDate: '2026-03-02T10:00:00+01:00' })
  t.same(effectiveReminders(keeping, defaults.get(GOOGLE)), [{ minutes: 30 }, { minutes: 5 }], 'the calendar\'s default')
  t.same(effectiveReminders({ ...keeping, reminders: [] }, defaults.get(GOOGLE)), [], 'an event that turned reminders off has none')
  t.same(effectiveReminders({ ...keeping, reminders: [{ minutes: 60 }] }, defaults.get(GOOGLE)), [{ minutes: 60 }], 'its own replace the default')
  t.same(effectiveReminders(keeping, defaults.get('family@group.calendar.google.com')), [], 'a calendar whose default is none')
  t.same(effectiveReminders({ reminders: undefined }, undefined), [], 'a calendar keeping no default (the own one, or one not listed yet)')
  t.same(remindersBetween([{ ...keeping, calendarId: 'unlisted' }, { ...keeping, _id: 'b'.repeat(24), calendarId: undefined }], 0, Infinity, ZONE, defaults), [], 'an event of a calendar not listed, or of the own calendar, reminds of nothing')

  const due = remindersBetween([keeping], 0, Infinity, ZONE, defaults)
  t.same(due.map((reminder) => new Date(reminder.at).toISOString()), ['2026-03-02T07:30:00.000Z', '2026-03-02T07:55:00.000Z'], 'notified at the default\'s times')
  t.same(remindersBetween([keeping], 0, Infinity, ZONE), [], 'without the list, nothing is made up')
  t.equal(remindersInWords([{ minutes: 30 }, { minutes: 5 }, { minutes: 30 }]), '5 minutes before, 30 minutes before', 'in words, nearest the start first, each once')
  t.equal(remindersInWords([]), '')
})

test('what a notification says', async (t) => {
  const [dentist] = remindersBetween([event({ _id: 'a'.repeat(24), startDate: '2026-03-02T09:10:00+01:00', endDate: '2026-03-02T10:00:00+01:00', reminders: [{ minutes: 10 }], location: 'Main Street 1' })], 0, Infinity, ZONE)
  if (dentist === undefined) throw new Error('no reminder')
  t.same(notificationText(dentist, dentist.at, ZONE), { title: 'Dentist', body: 'In 10 minutes, at 09:10 · Main Street 1' })
  t.same(notificationText(dentist, dentist.start, ZONE).body, 'Now, at 09:10 · Main Street 1')
  const [holiday] = remindersBetween([event({ _id: 'c'.repeat(24), title: '', isAllDay: true, startDate: '2026-03-03', endDate: '2026-03-04', reminders: [{ minutes: 1440 }] })], 0, Infinity, ZONE)
  if (holiday === undefined) throw new Error('no reminder')
  t.same(notificationText(holiday, holiday.at, ZONE), { title: '(No title)', body: 'Tuesday 3 March, all day' })
})

test('the permission is offered only while not asked and a reminder is set; shown keys are kept a day', async (t) => {
  t.ok(offersPermission('default', 1))
  t.notOk(offersPermission('default', 0), 'no reminder, no question')
  t.notOk(offersPermission('granted', 2))
  t.notOk(offersPermission('denied', 2), 'a refusal is the person\'s answer')
  t.notOk(offersPermission('unsupported', 2))
  const now = Date.parse('2026-03-02T08:00:00Z')
  t.same(keptShown({ old: now - 25 * 3_600_000, recent: now - 3_600_000 }, now), { recent: now - 3_600_000 })
})
