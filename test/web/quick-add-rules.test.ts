// The quick add rule (web/src/lib/quick-add.ts): each day, time, range and length form it reads,
// the title that is left, and what it does not read (null: the form opens with the text instead).
import { test } from 'tap'
import { DateTime } from 'luxon'
import { draftOfQuickAdd, parseQuickAdd } from '../../web/src/lib/quick-add.js'

const zone = 'Europe/Berlin'
// A Wednesday morning.
const now = DateTime.fromISO('2026-03-04T10:15', { zone })

/** What the text reads as: "title | start – end" in the zone, or "all day" with its first and last day. */
function read (text: string, at: DateTime = now): string | null {
  const added = parseQuickAdd(text, at)
  if (added === null) return null
  if (added.isAllDay) return `${added.title} | all day ${added.start.toISODate() ?? ''} – ${added.end.minus({ days: 1 }).toISODate() ?? ''}`
  return `${added.title} | ${added.start.toFormat('yyyy-MM-dd HH:mm')} – ${added.end.toFormat('yyyy-MM-dd HH:mm')}`
}

test('days: today, tomorrow, weekdays, next weekday', async (t) => {
  t.equal(read('Lunch with Sam tomorrow 1pm'), 'Lunch with Sam | 2026-03-05 13:00 – 2026-03-05 14:00', 'the example: tomorrow at 1pm, an hour')
  t.equal(read('Standup today 9:30am'), 'Standup | 2026-03-04 09:30 – 2026-03-04 10:30')
  t.equal(read('Party tonight at 8pm'), 'Party | 2026-03-04 20:00 – 2026-03-04 21:00', 'tonight is today')
  t.equal(read('Gym friday 7am'), 'Gym | 2026-03-06 07:00 – 2026-03-06 08:00', 'a weekday: the coming one')
  t.equal(read('Review on Wednesday at 3'), 'Review | 2026-03-04 15:00 – 2026-03-04 16:00', 'today\'s weekday is today')
  t.equal(read('Review next wednesday at 3'), 'Review | 2026-03-11 15:00 – 2026-03-11 16:00', '"next": after today')
  t.equal(read('Drinks next fri 6pm'), 'Drinks | 2026-03-06 18:00 – 2026-03-06 19:00', '"next" with an abbreviation')
  t.equal(read('Drinks on tues 6pm'), 'Drinks | 2026-03-10 18:00 – 2026-03-10 19:00', 'an abbreviation after "on"')
  t.equal(read('Planning this Monday 10:00'), 'Planning | 2026-03-09 10:00 – 2026-03-09 11:00')
  t.equal(read('Picnic in the sun tomorrow noon'), 'Picnic in the sun | 2026-03-05 12:00 – 2026-03-05 13:00', '"sun" alone is a word, not Sunday')
})

test('dates: month and day either way round, with or without a year, and ISO', async (t) => {
  t.equal(read('Dentist Dec 3 at 10am'), 'Dentist | 2026-12-03 10:00 – 2026-12-03 11:00')
  t.equal(read('Dentist 3 Dec 10am'), 'Dentist | 2026-12-03 10:00 – 2026-12-03 11:00')
  t.equal(read('Dentist on December 3rd 10am'), 'Dentist | 2026-12-03 10:00 – 2026-12-03 11:00')
  t.equal(read('Dentist 3rd of December 10am'), 'Dentist | 2026-12-03 10:00 – 2026-12-03 11:00')
  t.equal(read('Dentist Sept. 3 10am'), 'Dentist | 2026-09-03 10:00 – 2026-09-03 11:00')
  t.equal(read('Trip Jan 10'), 'Trip | all day 2027-01-10 – 2027-01-10', 'a day already past this year is next year\'s')
  t.equal(read('Trip Mar 4'), 'Trip | all day 2026-03-04 – 2026-03-04', 'today is not past')
  t.equal(read('Trip Jan 10, 2026'), 'Trip | all day 2026-01-10 – 2026-01-10', 'a year said is kept')
  t.equal(read('Trip 10 January 2028'), 'Trip | all day 2028-01-10 – 2028-01-10')
  t.equal(read('Launch 2026-12-03 14:00'), 'Launch | 2026-12-03 14:00 – 2026-12-03 15:00', 'the numeric form: ISO')
  t.equal(read('Call may 5pm'), 'Call may | 2026-03-04 17:00 – 2026-03-04 18:00', '"may 5pm" is a time, not 5 May')
  t.equal(read('Leap day Feb 29'), 'Leap day | all day 2028-02-29 – 2028-02-29', '29 February: the next year that has one')
})

test('times: am and pm, the 24-hour clock, noon and midnight, "at"', async (t) => {
  t.equal(read('Call 13:00'), 'Call | 2026-03-04 13:00 – 2026-03-04 14:00')
  t.equal(read('Call 09:30'), 'Call | 2026-03-04 09:30 – 2026-03-04 10:30', 'a leading zero is the 24-hour clock')
  t.equal(read('Call 3:30'), 'Call | 2026-03-04 15:30 – 2026-03-04 16:30', '1 to 6 without am or pm: the afternoon')
  t.equal(read('Call at 8'), 'Call | 2026-03-04 08:00 – 2026-03-04 09:00', '7 to 12: as said')
  t.equal(read('Call at 12'), 'Call | 2026-03-04 12:00 – 2026-03-04 13:00')
  t.equal(read('Call at 12am'), 'Call | 2026-03-04 00:00 – 2026-03-04 01:00', '12am is midnight')
  t.equal(read('Call 12pm'), 'Call | 2026-03-04 12:00 – 2026-03-04 13:00', '12pm is noon')
  t.equal(read('Call 1 pm'), 'Call | 2026-03-04 13:00 – 2026-03-04 14:00')
  t.equal(read('Call 1 p.m.'), 'Call | 2026-03-04 13:00 – 2026-03-04 14:00')
  t.equal(read('Call at midnight'), 'Call | 2026-03-04 00:00 – 2026-03-04 01:00')
  t.equal(read('Table for 4 at 7pm'), 'Table for 4 | 2026-03-04 19:00 – 2026-03-04 20:00', 'a number without am, pm or "at" stays in the title')
  t.equal(read('Room 12 meeting 2pm'), 'Room 12 meeting | 2026-03-04 14:00 – 2026-03-04 15:00')
})

test('ranges and lengths', async (t) => {
  t.equal(read('Lunch 1-2pm'), 'Lunch | 2026-03-04 13:00 – 2026-03-04 14:00')
  t.equal(read('Lunch 11-1pm'), 'Lunch | 2026-03-04 11:00 – 2026-03-04 13:00', 'the start before the end: 11 in the morning')
  t.equal(read('Lunch 11am-1'), 'Lunch | 2026-03-04 11:00 – 2026-03-04 13:00')
  t.equal(read('Workshop 10:30-11:45'), 'Workshop | 2026-03-04 10:30 – 2026-03-04 11:45')
  t.equal(read('Workshop from 9am to 12:30pm friday'), 'Workshop | 2026-03-06 09:00 – 2026-03-06 12:30')
  t.equal(read('Workshop from 2 to 4'), 'Workshop | 2026-03-04 14:00 – 2026-03-04 16:00', 'two bare hours after "from"')
  t.equal(read('Late show 11pm-1am'), 'Late show | 2026-03-04 23:00 – 2026-03-05 01:00', 'an end before the start is the next day')
  t.equal(read('Coffee tomorrow 3pm for 30 min'), 'Coffee | 2026-03-05 15:00 – 2026-03-05 15:30')
  t.equal(read('Coffee at 3 for 45 minutes'), 'Coffee | 2026-03-04 15:00 – 2026-03-04 15:45')
  t.equal(read('Hike sat... no: on sat 9am for 2 hours'), 'Hike sat... no: | 2026-03-07 09:00 – 2026-03-07 11:00')
  t.equal(read('Focus 9am for 1.5 h'), 'Focus | 2026-03-04 09:00 – 2026-03-04 10:30')
  t.equal(read('Focus 9am for an hour'), 'Focus | 2026-03-04 09:00 – 2026-03-04 10:00')
  t.equal(read('Focus 9am for half an hour'), 'Focus | 2026-03-04 09:00 – 2026-03-04 09:30')
  t.equal(read('Lunch 1-2pm for 3 hours'), 'Lunch | 2026-03-04 13:00 – 2026-03-04 14:00', 'the range\'s end wins over a length')
  t.equal(read('Phone 555-1234 at 5pm'), 'Phone 555-1234 | 2026-03-04 17:00 – 2026-03-04 18:00', 'digits that are no time stay in the title')
})

test('all day', async (t) => {
  t.equal(read('Conference all day tomorrow'), 'Conference | all day 2026-03-05 – 2026-03-05')
  t.equal(read('Holiday all-day'), 'Holiday | all day 2026-03-04 – 2026-03-04', 'all day without a day: today')
  t.equal(read('Dentist tomorrow'), 'Dentist | all day 2026-03-05 – 2026-03-05', 'a day without a time is all day')
})

test('what it does not read: the caller opens the form with the text', async (t) => {
  t.equal(read('Lunch with Sam'), null, 'no day and no time')
  t.equal(read('Lunch 12/3'), null, 'a slashed date is not read (12 March or 3 December?)')
  t.equal(read('Trip Feb 30'), null, 'a day that does not exist')
  t.equal(read('Trip 2026-02-30'), null)
  t.equal(read('Call 25:00'), null, 'an hour that does not exist')
  t.equal(read('Call 13pm'), null)
  t.equal(read('tomorrow at 3'), null, 'no title left')
  t.equal(read('   '), null)
  t.equal(read(''), null)
})

test('across a clock change, times are on the clock', async (t) => {
  // Berlin moves to summer time on 29 March 2026 at 02:00.
  t.equal(read('Brunch mar 29 1pm', now), 'Brunch | 2026-03-29 13:00 – 2026-03-29 14:00')
})

test('the draft: the dialog\'s fields for the same create as its Save', async (t) => {
  const timed = parseQuickAdd('Lunch with Sam tomorrow 1pm', now)
  if (timed === null) throw new Error('not read')
  t.same(draftOfQuickAdd(timed, zone, undefined), {
    title: 'Lunch with Sam',
    description: '',
    location: '',
    isAllDay: false,
    timeZone: zone,
    frequency: null,
    startDate: '2026-03-05T13:00:00+01:00',
    endDate: '2026-03-05T14:00:00+01:00'
  })
  const allDay = parseQuickAdd('Conference Dec 3', now)
  if (allDay === null) throw new Error('not read')
  t.match(draftOfQuickAdd(allDay, zone, undefined), { isAllDay: true, startDate: '2026-12-03', endDate: '2026-12-04' }, 'all day: the API\'s end is the day after')
  t.same(draftOfQuickAdd(timed, zone, [{ minutes: 10 }]).reminders, [{ minutes: 10 }], 'the reminders a new event starts with')
  t.notOk('reminders' in draftOfQuickAdd(timed, zone, undefined), 'none given: the calendar\'s default stays')
})
