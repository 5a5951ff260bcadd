import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import ICAL from 'ical.js'
import { buildApp, signUp, startDependencies, uniqueEmail, type SignedIn } from '../helper.js'

type Component = InstanceType<typeof ICAL.Component>
interface Shown { _id: string, title: string, color?: string, startDate: string, endDate: string, isAllDay: boolean, timeZone: string, description?: string, location?: string, reminders?: Array<{ minutes: number }>, recurrence?: { rule?: string[], eventId?: string }, originalStartDate?: string }

function id (): string {
  return randomBytes(12).toString('hex')
}

const RANGE = 'start=2026-11-01T00:00:00Z&end=2027-03-01T00:00:00Z'

// A Google Calendar export (Settings > Import & export): UTC times, X-WR-TIMEZONE, a series with
// an exception and a cancelled occurrence, an all-day event, a popup alarm.
const GOOGLE_EXPORT = [
  'BEGIN:VCALENDAR', 'PRODID:-//Google Inc//Google Calendar 70.9054//EN', 'VERSION:2.0', 'CALSCALE:GREGORIAN', 'METHOD:PUBLISH',
  'X-WR-CALNAME:ada@example.com', 'X-WR-TIMEZONE:Europe/Berlin',
  'BEGIN:VEVENT', 'DTSTART;TZID=Europe/Berlin:20261207T093000', 'DTEND;TZID=Europe/Berlin:20261207T094500', 'RRULE:FREQ=WEEKLY;COUNT=6;BYDAY=MO',
  'DTSTAMP:20261129T100000Z', 'UID:standup-google-1@google.com', 'CREATED:20261101T100000Z', 'LAST-MODIFIED:20261101T100000Z',
  'SUMMARY:Google stand-up', 'LOCATION:Room 4', 'STATUS:CONFIRMED', 'TRANSP:OPAQUE',
  'BEGIN:VALARM', 'ACTION:DISPLAY', 'DESCRIPTION:This is an event reminder', 'TRIGGER:-P0DT0H10M0S', 'END:VALARM', 'END:VEVENT',
  'BEGIN:VEVENT', 'DTSTART;TZID=Europe/Berlin:20261214T110000', 'DTEND;TZID=Europe/Berlin:20261214T111500', 'DTSTAMP:20261129T100000Z',
  'UID:standup-google-1@google.com', 'RECURRENCE-ID;TZID=Europe/Berlin:20261214T093000', 'SUMMARY:Google stand-up (late)', 'STATUS:CONFIRMED', 'END:VEVENT',
  'BEGIN:VEVENT', 'DTSTART;TZID=Europe/Berlin:20261221T093000', 'DTEND;TZID=Europe/Berlin:20261221T094500', 'DTSTAMP:20261129T100000Z',
  'UID:standup-google-1@google.com', 'RECURRENCE-ID;TZID=Europe/Berlin:20261221T093000', 'SUMMARY:Google stand-up', 'STATUS:CANCELLED', 'END:VEVENT',
  'BEGIN:VEVENT', 'DTSTART;VALUE=DATE:20261224', 'DTEND;VALUE=DATE:20261227', 'DTSTAMP:20261129T100000Z', 'UID:holiday-google@google.com',
  'SUMMARY:Christmas off', 'DESCRIPTION:Line one\\nLine two\\, with a comma', 'END:VEVENT',
  'BEGIN:VEVENT', 'DTSTART:20261203T150000Z', 'DTEND:20261203T160000Z', 'DTSTAMP:20261129T100000Z', 'UID:call-google@google.com', 'SUMMARY:Call', 'END:VEVENT',
  'END:VCALENDAR', ''
].join('\r\n')

// Thunderbird/Apple style: a TZID of its own with its VTIMEZONE, a series with EXDATE, an
// override, VALARMs, a DURATION in place of DTEND, and one event no one can read (no DTSTART).
const THUNDERBIRD_EXPORT = [
  'BEGIN:VCALENDAR', 'PRODID:-//Mozilla.org/NONSGML Mozilla Calendar V1.1//EN', 'VERSION:2.0',
  'BEGIN:VTIMEZONE', 'TZID:/mozilla.org/20050126_1/America/New_York', 'X-LIC-LOCATION:America/New_York',
  'BEGIN:DAYLIGHT', 'TZOFFSETFROM:-0500', 'TZOFFSETTO:-0400', 'TZNAME:EDT', 'DTSTART:19700308T020000', 'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU', 'END:DAYLIGHT',
  'BEGIN:STANDARD', 'TZOFFSETFROM:-0400', 'TZOFFSETTO:-0500', 'TZNAME:EST', 'DTSTART:19701101T020000', 'RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=1SU', 'END:STANDARD',
  'END:VTIMEZONE',
  'BEGIN:VEVENT', 'CREATED:20261101T120000Z', 'LAST-MODIFIED:20261101T120000Z', 'DTSTAMP:20261101T120000Z', 'UID:4a0c8e7e-tb-series',
  'SUMMARY:Book club', 'RRULE:FREQ=WEEKLY;UNTIL=20270131T235959Z', 'EXDATE;TZID=/mozilla.org/20050126_1/America/New_York:20261217T190000',
  'DTSTART;TZID=/mozilla.org/20050126_1/America/New_York:20261203T190000', 'DURATION:PT1H30M',
  'BEGIN:VALARM', 'ACTION:DISPLAY', 'TRIGGER;VALUE=DURATION:-PT1H', 'DESCRIPTION:Default Mozilla Description', 'END:VALARM',
  'BEGIN:VALARM', 'ACTION:EMAIL', 'TRIGGER;VALUE=DURATION:-P1D', 'DESCRIPTION:mail', 'SUMMARY:mail', 'ATTENDEE:mailto:ada@example.com', 'END:VALARM',
  'END:VEVENT',
  'BEGIN:VEVENT', 'DTSTAMP:20261101T120000Z', 'UID:4a0c8e7e-tb-series', 'SUMMARY:Book club at Bob\'s',
  'RECURRENCE-ID;TZID=/mozilla.org/20050126_1/America/New_York:20261210T190000',
  'DTSTART;TZID=/mozilla.org/20050126_1/America/New_York:20261210T200000', 'DTEND;TZID=/mozilla.org/20050126_1/America/New_York:20261210T213000',
  'LOCATION:Bob\'s place', 'END:VEVENT',
  'BEGIN:VEVENT', 'DTSTAMP:20261101T120000Z', 'UID:tb-broken', 'SUMMARY:No start', 'END:VEVENT',
  'END:VCALENDAR', ''
].join('\r\n')

function veventsOf (text: string): Component[] {
  return new ICAL.Component(ICAL.parse(text)).getAllSubcomponents('vevent')
}

test('calendar files: export, import, re-import and refusals', async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const { app } = await buildApp(t, deps)
  const events = app.mongo.db.collection('events')
  const ada = await signUp(app, { email: uniqueEmail('ics-ada'), password: 'correct horse 1' })
  const bob = await signUp(app, { email: uniqueEmail('ics-bob'), password: 'correct horse 2' })
  const cyd = await signUp(app, { email: uniqueEmail('ics-cyd'), password: 'correct horse 3' })

  const post = async (who: SignedIn, payload: unknown) => {
    const response = await app.inject({ method: 'POST', url: '/api/event', headers: who.headers, payload: payload as object })
    t.equal(response.statusCode, 204, response.body)
  }
  const range = async (who: SignedIn): Promise<Shown[]> => {
    const response = await app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: who.headers })
    t.equal(response.statusCode, 200, 'the range is read')
    return response.json() as Shown[]
  }
  const exportOf = async (who: SignedIn, query = RANGE) => await app.inject({ method: 'GET', url: `/api/events/export.ics?${query}`, headers: who.headers })
  const importInto = async (who: SignedIn, body: string | Buffer, query = '') => await app.inject({
    method: 'POST', url: `/api/events/import${query}`, headers: { ...who.headers, 'content-type': 'text/calendar; charset=utf-8' }, payload: body
  })

  // Ada's calendar: a single event in Tokyo, an all-day event, and a New York series with an
  // edited and a cancelled occurrence.
  const seriesId = id()
  await post(ada, [
    { _id: id(), title: 'Tokyo call', description: 'Agenda: one; two', location: 'Zoom', startDate: '2026-12-02T10:00:00+09:00', endDate: '2026-12-02T11:00:00+09:00', timeZone: 'Asia/Tokyo', reminders: [{ minutes: 15 }] },
    { _id: id(), title: 'Away', startDate: '2026-12-28', endDate: '2026-12-31', isAllDay: true, timeZone: 'Europe/Paris' },
    { _id: seriesId, title: 'Yoga', startDate: '2026-12-01T18:00:00-05:00', endDate: '2026-12-01T19:00:00-05:00', timeZone: 'America/New_York', recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=5'] } }
  ])
  const moved = await app.inject({
    method: 'PUT',
    url: `/api/event/${seriesId}_20261208T230000Z`,
    headers: ada.headers,
    payload: { title: 'Yoga (later)', startDate: '2026-12-08T19:30:00-05:00', endDate: '2026-12-08T20:30:00-05:00', timeZone: 'America/New_York' }
  })
  t.equal(moved.statusCode, 204, moved.body)
  const cancelled = await app.inject({ method: 'DELETE', url: `/api/event/${seriesId}_20261215T230000Z?applyTo=this`, headers: ada.headers })
  t.equal(cancelled.statusCode, 204, cancelled.body)

  await t.test('export: one VEVENT per event, the series with RRULE, EXDATE and its override, zones with VTIMEZONE', async (t) => {
    const response = await exportOf(ada)
    t.equal(response.statusCode, 200, response.body.slice(0, 300))
    t.equal(response.headers['content-type'], 'text/calendar; charset=utf-8')
    t.equal(response.headers['content-disposition'], 'attachment; filename="my-calendar_2026-11-01_2027-03-01.ics"')
    const calendar = new ICAL.Component(ICAL.parse(response.body))
    t.equal(calendar.getFirstPropertyValue('version'), '2.0')
    const vevents = calendar.getAllSubcomponents('vevent')
    t.equal(vevents.length, 4, 'the single, the all-day event, the series and its one edited occurrence')
    const byTitle = (title: string) => vevents.find((vevent) => vevent.getFirstPropertyValue('summary') === title) as Component
    const tokyo = byTitle('Tokyo call')
    t.equal(tokyo.getFirstProperty('dtstart')?.getParameter('tzid'), 'Asia/Tokyo')
    t.equal(String(tokyo.getFirstPropertyValue('dtstart')), '2026-12-02T10:00:00')
    t.equal(tokyo.getFirstPropertyValue('description'), 'Agenda: one; two')
    t.equal(tokyo.getFirstPropertyValue('location'), 'Zoom')
    t.equal(String(tokyo.getFirstSubcomponent('valarm')?.getFirstPropertyValue('trigger')), '-PT15M', 'the reminder is a VALARM')
    const away = byTitle('Away')
    t.equal(away.getFirstProperty('dtstart')?.type, 'date', 'all-day is VALUE=DATE')
    t.equal(String(away.getFirstPropertyValue('dtend')), '2026-12-31')
    const yoga = byTitle('Yoga')
    t.equal(yoga.getFirstProperty('dtstart')?.getParameter('tzid'), 'America/New_York')
    t.equal(String(yoga.getFirstPropertyValue('rrule')), 'FREQ=WEEKLY;COUNT=5')
    t.same(yoga.getAllProperties('exdate').map((property) => String(property.getFirstValue())), ['2026-12-15T18:00:00'], 'the cancelled occurrence is an EXDATE')
    const later = byTitle('Yoga (later)')
    t.equal(later.getFirstPropertyValue('uid'), yoga.getFirstPropertyValue('uid'), 'the override has its series\' UID')
    t.equal(String(later.getFirstPropertyValue('recurrence-id')), '2026-12-08T18:00:00')
    t.equal(String(later.getFirstPropertyValue('dtstart')), '2026-12-08T19:30:00')
    const zones = calendar.getAllSubcomponents('vtimezone').map((zone) => zone.getFirstPropertyValue('tzid')).sort()
    t.same(zones, ['America/New_York', 'Asia/Tokyo'], 'each zone named has its VTIMEZONE')
    // ical.js expands the file as any client would: the occurrences are the backend's.
    const expanded: string[] = []
    const iterator = new ICAL.Event(yoga, { exceptions: [new ICAL.Event(later)] })
    const expansion = iterator.iterator()
    for (let next = expansion.next(); next !== null && next !== undefined; next = expansion.next()) {
      if (yoga.getAllProperties('exdate').some((property) => (property.getFirstValue() as InstanceType<typeof ICAL.Time>).compare(next) === 0)) continue
      expanded.push(iterator.getOccurrenceDetails(next).startDate.toJSDate().toISOString())
    }
    const backend = (await range(ada)).filter((event) => event.title.startsWith('Yoga')).map((event) => new Date(event.startDate).toISOString())
    t.same(expanded, backend, 'the file\'s occurrences are the ones the backend shows')

    const own = await exportOf(ada, `calendarId=own&${RANGE}`)
    t.equal(own.body.split('BEGIN:VEVENT').length, 5, 'calendarId=own is the same calendar')
    const other = await exportOf(ada, `calendarId=work-calendar&${RANGE}`)
    t.equal(other.statusCode, 200)
    t.equal(veventsOf(other.body).length, 0, 'a calendar without events exports none')
    t.equal((await exportOf(ada, '')).statusCode, 200, 'the range may be left out')
    const wide = await exportOf(ada, 'start=2020-01-01T00:00:00Z&end=2027-01-01T00:00:00Z')
    t.equal(wide.statusCode, 400)
    t.match(wide.json(), { code: 'EVENT_INVALID', message: 'querystring/end must be at most 1830 days after start' })
    t.equal((await exportOf(ada, 'start=2027-01-01T00:00:00Z&end=2026-01-01T00:00:00Z')).statusCode, 400, 'an end before the start')
    const bobs = await exportOf(bob)
    t.equal(veventsOf(bobs.body).length, 0, 'another user exports none of Ada\'s events')
  })

  await t.test('export then import into another user\'s calendar gives the same events; a second import stores nothing', async (t) => {
    const file = (await exportOf(ada)).body
    const first = await importInto(bob, file)
    t.equal(first.statusCode, 200, first.body)
    t.same(first.json(), { imported: 4, skipped: 0, errors: [] }, 'three events and an edited occurrence (the cancelled one is an EXDATE of the series)')
    // An all-day event's dates are the same in any zone: a file writes none for it.
    const shape = (list: Shown[]) => list.map(({ title, startDate, endDate, isAllDay, timeZone, description, location, reminders }) =>
      ({ title, startDate, endDate, isAllDay, timeZone: isAllDay ? '-' : timeZone, description, location, reminders }))
    t.same(shape(await range(bob)), shape(await range(ada)), 'Bob sees what Ada sees')
    const stored = await events.countDocuments({ user: bob.userId })
    const again = await importInto(bob, file)
    t.same(again.json(), { imported: 0, skipped: 4, errors: [] }, 'the same file again')
    t.equal(await events.countDocuments({ user: bob.userId }), stored, 'nothing is stored twice')
  })

  await t.test('a Google export: series, exception, cancellation, all-day, reminders', async (t) => {
    const response = await importInto(cyd, GOOGLE_EXPORT)
    t.same(response.json(), { imported: 5, skipped: 0, errors: [] }, response.body)
    const shown = await range(cyd)
    const standups = shown.filter((event) => event.title.startsWith('Google stand-up'))
    t.same(standups.map((event) => [event.title, event.startDate]), [
      ['Google stand-up', '2026-12-07T09:30:00+01:00'],
      ['Google stand-up (late)', '2026-12-14T11:00:00+01:00'],
      ['Google stand-up', '2026-12-28T09:30:00+01:00'],
      ['Google stand-up', '2027-01-04T09:30:00+01:00'],
      ['Google stand-up', '2027-01-11T09:30:00+01:00']
    ], 'six weeks, one moved, one cancelled')
    t.same(standups[0]?.reminders, [{ minutes: 10 }])
    t.equal(standups[0]?.location, 'Room 4')
    t.equal(standups[0]?.timeZone, 'Europe/Berlin')
    t.match(shown.find((event) => event.title === 'Christmas off'), { isAllDay: true, startDate: '2026-12-24', endDate: '2026-12-27', description: 'Line one\nLine two, with a comma' })
    t.match(shown.find((event) => event.title === 'Call'), { startDate: '2026-12-03T15:00:00Z', timeZone: 'UTC' })
  })

  await t.test('a Thunderbird file: its own TZID and VTIMEZONE, EXDATE, override, DURATION, VALARMs; an unreadable event is named', async (t) => {
    const response = await importInto(cyd, THUNDERBIRD_EXPORT)
    t.equal(response.statusCode, 200, response.body)
    const result = response.json() as { imported: number, skipped: number, errors: string[] }
    t.equal(result.imported, 2, 'the series and its override')
    t.same(result.errors, ['Event "No start": has no start (DTSTART)'])
    const club = (await range(cyd)).filter((event) => event.title.startsWith('Book club'))
    t.same(club.slice(0, 4).map((event) => [event.title, event.startDate, event.endDate]), [
      ['Book club', '2026-12-03T19:00:00-05:00', '2026-12-03T20:30:00-05:00'],
      ['Book club at Bob\'s', '2026-12-10T20:00:00-05:00', '2026-12-10T21:30:00-05:00'],
      ['Book club', '2026-12-24T19:00:00-05:00', '2026-12-24T20:30:00-05:00'],
      ['Book club', '2026-12-31T19:00:00-05:00', '2026-12-31T20:30:00-05:00']
    ], 'the 17th is excluded, the 10th moved')
    t.equal(club[0]?.timeZone, 'America/New_York', 'Mozilla\'s TZID is read as the IANA zone it names')
    t.same(club[0]?.reminders, [{ minutes: 60 }], 'the DISPLAY alarm is a reminder, the email one is not')
    t.equal(club[1]?.location, 'Bob\'s place')
  })

  await t.test('an override that is no occurrence of its series is named; the rest of its batch is imported', async (t) => {
    const file = [
      'BEGIN:VCALENDAR', 'VERSION:2.0',
      'BEGIN:VEVENT', 'UID:batch-series', 'DTSTART:20261201T070000Z', 'DTEND:20261201T073000Z', 'RRULE:FREQ=DAILY;COUNT=3', 'SUMMARY:Swim', 'END:VEVENT',
      'BEGIN:VEVENT', 'UID:batch-series', 'RECURRENCE-ID:20261202T070000Z', 'DTSTART:20261202T080000Z', 'DTEND:20261202T083000Z', 'SUMMARY:Swim later', 'END:VEVENT',
      'BEGIN:VEVENT', 'UID:batch-series', 'RECURRENCE-ID:20261202T090000Z', 'DTSTART:20261202T100000Z', 'DTEND:20261202T103000Z', 'SUMMARY:Swim nowhere', 'END:VEVENT',
      'END:VCALENDAR', ''
    ].join('\r\n')
    const response = await importInto(bob, file)
    t.same(response.json(), { imported: 2, skipped: 0, errors: ['Event "Swim nowhere": originalStartDate must be the start of an occurrence of the series'] }, response.body)
    const swims = (await range(bob)).filter((event) => event.title.startsWith('Swim')).map((event) => `${event.title} ${event.startDate}`)
    t.same(swims, ['Swim 2026-12-01T07:00:00Z', 'Swim later 2026-12-02T08:00:00Z', 'Swim 2026-12-03T07:00:00Z'])
  })

  await t.test('COLOR (RFC 7986): the names an export writes come back as the event\'s own colour, others leave the calendar\'s', async (t) => {
    const dee = await signUp(app, { email: uniqueEmail('ics-dee'), password: 'correct horse 4' })
    const vevent = (uid: string, title: string, day: string, color: string | null) => [
      'BEGIN:VEVENT', `UID:${uid}`, 'DTSTAMP:20261129T100000Z', `DTSTART:202612${day}T100000Z`, `DTEND:202612${day}T110000Z`, `SUMMARY:${title}`,
      ...(color === null ? [] : [`COLOR:${color}`]), 'END:VEVENT'
    ]
    const file = [
      'BEGIN:VCALENDAR', 'PRODID:-//Example//Colours//EN', 'VERSION:2.0',
      ...vevent('colour-red', 'Red review', '02', 'red'),
      ...vevent('colour-grey', 'Grey review', '03', 'DimGrey'),
      ...vevent('colour-tomato', 'Tomato review', '04', 'tomato'),
      ...vevent('colour-none', 'Plain review', '05', null),
      'END:VCALENDAR', ''
    ].join('\r\n')
    const imported = await importInto(dee, file)
    t.equal(imported.statusCode, 200, imported.body)
    t.match(imported.json(), { imported: 4, errors: [] })
    const colours = Object.fromEntries((await range(dee)).map((event) => [event.title, event.color ?? null]))
    t.same(colours, { 'Red review': 'tomato', 'Grey review': 'graphite', 'Tomato review': null, 'Plain review': null },
      'read back: red is Tomato, DimGrey Graphite (case and spelling aside); CSS tomato is no name written here, so the calendar\'s colour')
    const exported = await exportOf(dee)
    const written = veventsOf(exported.body).map((vevent) => [vevent.getFirstPropertyValue('summary'), vevent.getFirstPropertyValue('color') ?? null])
    t.same(written.filter(([title]) => title === 'Red review' || title === 'Grey review').sort(), [['Grey review', 'dimgray'], ['Red review', 'red']], 'and written again as the same names')
  })

  await t.test('refusals: no session, not iCalendar, too large, too many events', async (t) => {
    const before = await events.countDocuments({})
    for (const [method, url] of [['GET', '/api/events/export.ics'], ['POST', '/api/events/import']] as const) {
      const anonymous = await app.inject({ method, url, headers: { 'content-type': 'text/calendar' }, ...(method === 'POST' ? { payload: GOOGLE_EXPORT } : {}) })
      t.equal(anonymous.statusCode, 401, `${method} ${url} without a session`)
    }
    const malformed = await importInto(cyd, 'BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nSUMMARY:x\r\n')
    t.equal(malformed.statusCode, 400)
    t.match(malformed.json(), { code: 'EVENT_INVALID', message: /^body is not a readable iCalendar file: / })
    const notCalendar = await importInto(cyd, 'BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ada\r\nEND:VCARD\r\n')
    t.match(notCalendar.json(), { statusCode: 400, message: 'body must be an iCalendar file (BEGIN:VCALENDAR ... END:VCALENDAR)' })
    const json = await app.inject({ method: 'POST', url: '/api/events/import', headers: cyd.headers, payload: { title: 'x' } })
    t.equal(json.statusCode, 415, 'a JSON body is not a calendar file')
    const large = await importInto(cyd, GOOGLE_EXPORT.replace('SUMMARY:Call', `SUMMARY:${'x'.repeat(2 * 1024 * 1024)}`))
    t.equal(large.statusCode, 413)
    const one = ['BEGIN:VEVENT', 'UID:u%', 'DTSTART:20261210T100000Z', 'DTEND:20261210T110000Z', 'SUMMARY:n', 'END:VEVENT'].join('\r\n')
    const many = ['BEGIN:VCALENDAR', 'VERSION:2.0', ...Array.from({ length: 5001 }, (_, index) => one.replace('%', String(index))), 'END:VCALENDAR'].join('\r\n')
    const tooMany = await importInto(cyd, many)
    t.equal(tooMany.statusCode, 400)
    t.match(tooMany.json(), { message: 'body holds 5001 events; at most 5000 are imported at once (split the file)' })
    t.equal(await events.countDocuments({}), before, 'nothing was stored')
  })
})
