// The pure rules of the Microsoft adapter: Windows zones, Graph patterns <-> RRULE, events, failures.
import { test } from 'tap'
import {
  classifyFailure, contentOf, graphFieldsOf, graphRecurrenceOf, rruleLines, sameTiming, toProviderEvent
} from '../../../sync/lib/providers/microsoft-mapping.js'
import { ianaZoneOf, WINDOWS_TO_IANA, windowsZoneOf } from '../../../sync/lib/windows-zones.js'
import { windowsZones } from '../../../dev/microsoft/index.js'

test('Windows zone names map to IANA zones; IANA names pass; unknown ones are null', async (t) => {
  t.equal(ianaZoneOf('W. Europe Standard Time'), 'Europe/Berlin')
  t.equal(ianaZoneOf('Eastern Standard Time'), 'America/New_York')
  t.equal(ianaZoneOf('Tokyo Standard Time'), 'Asia/Tokyo')
  t.equal(ianaZoneOf('India Standard Time'), 'Asia/Calcutta')
  t.equal(ianaZoneOf('UTC'), 'UTC')
  t.equal(ianaZoneOf('tzone://Microsoft/Utc'), 'UTC')
  t.equal(ianaZoneOf('Europe/Paris'), 'Europe/Paris')
  t.equal(ianaZoneOf('Customized Time Zone'), null)
  t.equal(windowsZoneOf('Europe/Berlin'), 'W. Europe Standard Time')
  t.equal(windowsZoneOf('America/Los_Angeles'), 'Pacific Standard Time')
  t.equal(windowsZoneOf('Europe/Zurich'), 'Europe/Zurich', 'a zone without a primary row keeps its IANA name')
})

test('the table is CLDR\'s: every Windows zone the Microsoft stand-in reads from CLDR maps to the same instants', async (t) => {
  // CLDR's primary zone and ours may be two names of one zone (America/Indianapolis is an alias of
  // America/Indiana/Indianapolis); what must agree is the offset, now and across a year of changes.
  const instants = Array.from({ length: 24 }, (_, month) => Date.UTC(2026, month, 15, 12))
  const offsets = (zone: string): string[] => instants.map((at) => new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' }).format(at))
  const cldr = windowsZones()
  t.ok(cldr.length > 130, `${cldr.length} zones from CLDR`)
  const disagreeing = cldr.filter(([windows, iana]) => WINDOWS_TO_IANA[windows] === undefined || offsets(WINDOWS_TO_IANA[windows]).join() !== offsets(iana).join())
  t.same(disagreeing, [], 'no Windows zone of CLDR missing from the table or at other offsets')
  t.equal(ianaZoneOf('Central Asia Standard Time'), 'Asia/Bishkek', 'UTC+6 since Kazakhstan moved Almaty to UTC+5 (March 2024)')
})

test('Graph patterns as RRULE lines, and back', async (t) => {
  t.same(rruleLines({ pattern: { type: 'daily', interval: 2 }, range: { type: 'noEnd', startDate: '2026-11-02' } }, false, 'UTC'), ['RRULE:FREQ=DAILY;INTERVAL=2'])
  t.same(rruleLines({ pattern: { type: 'relativeMonthly', interval: 1, daysOfWeek: ['thursday'], index: 'last' }, range: { type: 'numbered', numberOfOccurrences: 5 } }, false, 'UTC'),
    ['RRULE:FREQ=MONTHLY;BYDAY=TH;BYSETPOS=-1;COUNT=5'])
  t.same(rruleLines({ pattern: { type: 'absoluteYearly', interval: 1, dayOfMonth: 24, month: 12 }, range: { type: 'endDate', endDate: '2030-12-31' } }, true, 'UTC'),
    ['RRULE:FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=24;UNTIL=20301231'])
  t.same(rruleLines({ pattern: { type: 'weekly', interval: 1, daysOfWeek: ['monday', 'wednesday'] }, range: { type: 'endDate', endDate: '2026-12-31', recurrenceTimeZone: 'W. Europe Standard Time' } }, false, 'Europe/Berlin'),
    ['RRULE:FREQ=WEEKLY;BYDAY=MO,WE;UNTIL=20261231T225959Z'], 'UNTIL is the last second of the end date in the series zone')
  t.equal(rruleLines({ pattern: { type: 'weekly', daysOfWeek: [] }, range: { type: 'noEnd' } }, false, 'UTC'), null)

  t.match(graphRecurrenceOf(['RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10'], '2026-11-02T09:00:00+01:00', 'Europe/Berlin'), {
    pattern: { type: 'weekly', interval: 1, daysOfWeek: ['monday'] },
    range: { type: 'numbered', startDate: '2026-11-02', numberOfOccurrences: 10, recurrenceTimeZone: 'W. Europe Standard Time' }
  })
  t.match(graphRecurrenceOf(['RRULE:FREQ=MONTHLY;BYDAY=TH;BYSETPOS=-1'], '2026-11-26T09:00:00Z', 'UTC'), { pattern: { type: 'relativeMonthly', index: 'last', daysOfWeek: ['thursday'] }, range: { type: 'noEnd' } })
  t.equal(graphRecurrenceOf(['RRULE:FREQ=HOURLY'], '2026-11-26T09:00:00Z', 'UTC'), null)
  t.equal(graphRecurrenceOf(['RRULE:FREQ=DAILY', 'EXDATE:20261127T090000Z'], '2026-11-26T09:00:00Z', 'UTC'), null)
})

test('Graph events as provider events', async (t) => {
  const master = {
    id: 'AAMk-master',
    '@odata.etag': 'W/"key1"',
    type: 'seriesMaster',
    subject: 'Standup',
    body: { contentType: 'text', content: 'Daily' },
    start: { dateTime: '2026-03-27T08:00:00.0000000', timeZone: 'UTC' },
    end: { dateTime: '2026-03-27T08:15:00.0000000', timeZone: 'UTC' },
    originalStartTimeZone: 'W. Europe Standard Time',
    recurrence: { pattern: { type: 'daily', interval: 1 }, range: { type: 'numbered', numberOfOccurrences: 3 } },
    lastModifiedDateTime: '2026-11-20T10:00:00.1234567Z'
  }
  t.match(toProviderEvent(master, 'UTC', new Date()), {
    providerEventId: 'AAMk-master',
    etag: 'W/"key1"',
    updated: '2026-11-20T10:00:00.123Z',
    status: 'confirmed',
    content: { title: 'Standup', description: 'Daily', startDate: '2026-03-27T09:00:00+01:00', timeZone: 'Europe/Berlin', recurrence: ['RRULE:FREQ=DAILY;COUNT=3'] }
  })
  t.equal(toProviderEvent({ ...master, id: 'occ', type: 'occurrence', seriesMasterId: 'AAMk-master' }, 'UTC', new Date()), null)
  // After the clocks change the offset follows the zone.
  t.match(toProviderEvent({ ...master, id: 'exc', type: 'exception', seriesMasterId: 'AAMk-master', originalStart: '2026-03-29T07:00:00Z', start: { dateTime: '2026-03-29T09:00:00.0000000', timeZone: 'UTC' } }, 'UTC', new Date()), {
    recurringEventId: 'AAMk-master', originalStartDate: '2026-03-29T09:00:00+02:00', content: { startDate: '2026-03-29T11:00:00+02:00' }
  })
  const removedAt = new Date('2026-11-21T09:00:00Z')
  t.same(toProviderEvent({ id: 'gone', '@removed': { reason: 'deleted' } }, 'UTC', removedAt), { providerEventId: 'gone', updated: '2026-11-21T09:00:00.000Z', status: 'cancelled' })
  t.match(contentOf({ id: 'a', isAllDay: true, start: { dateTime: '2026-12-24T00:00:00.0000000', timeZone: 'UTC' }, end: { dateTime: '2026-12-25T00:00:00.0000000', timeZone: 'UTC' } }, 'UTC'), { startDate: '2026-12-24', endDate: '2026-12-25', isAllDay: true })
})

test('content as Graph fields, and failures', async (t) => {
  t.match(graphFieldsOf({ title: 'Lunch', startDate: '2026-11-24T12:00:00+01:00', endDate: '2026-11-24T13:00:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin' }, { recurrence: true }), {
    subject: 'Lunch', start: { dateTime: '2026-11-24T12:00:00', timeZone: 'W. Europe Standard Time' }, isAllDay: false
  })
  t.equal(classifyFailure({ status: 400, code: 'invalid_grant' }), 'revoked')
  t.equal(classifyFailure({ status: 410, code: 'SyncStateNotFound' }), 'cursorExpired')
  t.equal(classifyFailure({ status: 429, code: 'TooManyRequests' }), 'unavailable')
  t.equal(classifyFailure({ status: null, code: null }), 'unavailable')
  t.equal(classifyFailure({ status: 412, code: 'ErrorIrresolvableConflict' }), 'conflict')
  t.equal(classifyFailure({ status: 404, code: 'ErrorItemNotFound' }), 'notFound')
})

test('a "this and following" UNTIL just before an occurrence ends Graph\'s series the day before', async (t) => {
  // The backend cuts a 10:00 New York series before its 15 December occurrence: UNTIL 09:59:59 local.
  t.match(graphRecurrenceOf(['RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20261215T145959Z'], '2026-12-01T10:00:00-05:00', 'America/New_York'),
    { range: { type: 'endDate', startDate: '2026-12-01', endDate: '2026-12-14' } })
  t.match(graphRecurrenceOf(['RRULE:FREQ=WEEKLY;BYDAY=TU;UNTIL=20261215T170000Z'], '2026-12-01T10:00:00-05:00', 'America/New_York'),
    { range: { type: 'endDate', endDate: '2026-12-15' } }, 'an UNTIL after the time of day keeps its date')
  t.match(graphRecurrenceOf(['RRULE:FREQ=DAILY;UNTIL=20261214'], '2026-12-01', 'UTC'), { range: { type: 'endDate', endDate: '2026-12-14' } }, 'a date UNTIL is the last day')
})

test('a series whose times are unchanged is written without them (Graph drops exceptions on any write of its times)', async (t) => {
  const content = { title: 'Standup', startDate: '2026-12-01T10:00:00-05:00', endDate: '2026-12-01T11:00:00-05:00', isAllDay: false, timeZone: 'America/New_York' }
  const graph = { id: 'm', type: 'seriesMaster', start: { dateTime: '2026-12-01T15:00:00.0000000', timeZone: 'UTC' }, end: { dateTime: '2026-12-01T16:00:00.0000000', timeZone: 'UTC' }, originalStartTimeZone: 'Eastern Standard Time' }
  t.ok(sameTiming(graph, content, 'UTC'))
  t.notOk(sameTiming(graph, { ...content, endDate: '2026-12-01T11:30:00-05:00' }, 'UTC'), 'a new end')
  t.notOk(sameTiming(graph, { ...content, timeZone: 'America/Chicago' }, 'UTC'), 'a new zone')
  t.notOk(sameTiming({ id: 'x' }, content, 'UTC'), 'nothing to compare with')
  t.ok(sameTiming({ id: 'h', isAllDay: true, start: { dateTime: '2026-12-24T00:00:00.0000000', timeZone: 'UTC' }, end: { dateTime: '2026-12-25T00:00:00.0000000', timeZone: 'UTC' } }, { ...content, isAllDay: true, startDate: '2026-12-24', endDate: '2026-12-25', timeZone: 'UTC' }, 'UTC'), 'all-day dates')
  const fields = graphFieldsOf(content, { recurrence: false, times: false })
  t.notOk('start' in fields || 'end' in fields || 'isAllDay' in fields)
  t.equal(fields['subject'], 'Standup')
})

test('reminders: Graph\'s one reminder both ways, off as none, the default left to Outlook', async (t) => {
  const graph = (fields: Record<string, unknown>) => contentOf({
    id: 'r1', subject: 'R', start: { dateTime: '2026-11-24T12:00:00.0000000', timeZone: 'UTC' }, end: { dateTime: '2026-11-24T13:00:00.0000000', timeZone: 'UTC' }, ...fields
  }, 'UTC')
  t.same(graph({ isReminderOn: true, reminderMinutesBeforeStart: 15 })?.reminders, [{ minutes: 15 }])
  t.same(graph({ isReminderOn: false, reminderMinutesBeforeStart: 15 })?.reminders, [], 'off: none')
  t.equal(graph({})?.reminders, undefined, 'an event that says nothing keeps the calendar\'s default')
  const content = { title: 'R', startDate: '2026-11-24T12:00:00Z', endDate: '2026-11-24T13:00:00Z', isAllDay: false, timeZone: 'UTC' }
  t.match(graphFieldsOf({ ...content, reminders: [{ minutes: 10 }, { minutes: 60 }] }, { recurrence: false }), { isReminderOn: true, reminderMinutesBeforeStart: 60 }, 'Graph holds one: the earliest warning')
  t.match(graphFieldsOf({ ...content, reminders: [] }, { recurrence: false }), { isReminderOn: false })
  const fields = graphFieldsOf(content, { recurrence: false })
  t.notOk('isReminderOn' in fields || 'reminderMinutesBeforeStart' in fields, 'the default writes nothing: Outlook gives a new event its own')
})

test('colour: Graph has none of its own; categories are no colour, and none is sent', async (t) => {
  const content = contentOf({
    id: 'c1', subject: 'C', start: { dateTime: '2026-11-24T12:00:00.0000000', timeZone: 'UTC' }, end: { dateTime: '2026-11-24T13:00:00.0000000', timeZone: 'UTC' }, categories: ['Red category']
  } as Parameters<typeof contentOf>[0], 'UTC')
  t.notOk(content !== null && 'color' in content, 'an Outlook event brings no colour')
  const fields = graphFieldsOf({ title: 'C', startDate: '2026-11-24T12:00:00Z', endDate: '2026-11-24T13:00:00Z', isAllDay: false, timeZone: 'UTC', color: 'grape' }, { recurrence: false })
  t.notOk('color' in fields || 'categories' in fields || 'colorId' in fields, 'our colour is not written to Graph')
})
