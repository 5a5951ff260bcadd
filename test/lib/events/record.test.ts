import { test } from 'tap'
import { toEventRecord, validateEventChange } from '../../../lib/events/record.js'
import { normalizeEventId, parseEventAddress, mintEventId } from '../../../lib/events/ids.js'
import type { EventChangeInput } from '../../../schemas/event.js'

const timed: EventChangeInput = {
  title: 'Review',
  startDate: '2026-05-04T10:00:00+02:00',
  endDate: '2026-05-04T11:00:00+02:00',
  isAllDay: false,
  timeZone: 'Europe/Berlin',
  status: 'confirmed',
  origin: 'compass',
  priority: 'work'
}

test('valid changes pass', async (t) => {
  t.equal(validateEventChange(timed), null)
  t.equal(validateEventChange({ ...timed, isAllDay: true, startDate: '2026-05-04', endDate: '2026-05-05' }), null)
  t.equal(validateEventChange({ ...timed, recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=3'] } }), null)
  t.equal(validateEventChange({ ...timed, recurrence: { eventId: 'optimistic-' + 'b'.repeat(24) }, originalStartDate: '2026-05-04T10:00:00+02:00' }), null)
  t.equal(validateEventChange({ ...timed, endDate: '2026-05-04T09:00:00Z' }), null, 'offsets are compared as instants')
})

test('each relation between fields is checked with the field named', async (t) => {
  const cases: Array<[Partial<EventChangeInput>, string, RegExp]> = [
    [{ endDate: '2026-05-04T10:00:00+02:00' }, '/endDate', /after startDate/],
    [{ endDate: '2026-05-04T07:59:00Z' }, '/endDate', /after startDate/],
    [{ isAllDay: true }, '/startDate', /YYYY-MM-DD/],
    [{ isAllDay: true, startDate: '2026-05-04', endDate: '2026-05-04' }, '/endDate', /after startDate/],
    [{ startDate: '2026-05-04' }, '/startDate', /RFC 3339/],
    [{ endDate: '2026-05-04T11:00:00' }, '/endDate', /RFC 3339/],
    [{ startDate: '2026-02-30T10:00:00Z' }, '/startDate', /real calendar date/],
    [{ timeZone: 'Mars/Olympus' }, '/timeZone', /IANA/],
    [{ recurrence: { rule: ['RRULE:FREQ=NEVER'] } }, '/recurrence/rule', /not a valid rule/],
    [{ recurrence: { rule: ['RRULE:FREQ=DAILY'], eventId: 'b'.repeat(24) } }, '/recurrence', /either rule/],
    [{ recurrence: { eventId: 'b'.repeat(24) } }, '/originalStartDate', /required/],
    [{ recurrence: { eventId: 'b'.repeat(24) }, originalStartDate: '2026-05-04' }, '/originalStartDate', /same form/],
    [{ _id: 'b'.repeat(24), recurrence: { eventId: 'optimistic-' + 'b'.repeat(24) }, originalStartDate: '2026-05-04T10:00:00+02:00' }, '/recurrence/eventId', /another event/],
    [{ originalStartDate: '2026-05-04T10:00:00+02:00' }, '/originalStartDate', /only allowed/],
    [{ _id: 'b'.repeat(24) + '_20260504T080000Z' }, '/_id', /24-hex/]
  ]
  for (const [change, path, message] of cases) {
    const issue = validateEventChange({ ...timed, ...change })
    t.equal(issue?.path, path, JSON.stringify(change))
    t.match(issue?.message, message, JSON.stringify(change))
  }
})

test('a provider id sent by a client is no part of the record: the server owns it', async (t) => {
  const record = toEventRecord({ ...timed, calendarId: 'work@example.com', providerEventId: 'google-123' }, { userId: 'a'.repeat(24), now: new Date() })
  t.equal(record.calendarId, 'work@example.com', 'the calendar a new event is named for stays')
  t.notOk('providerEventId' in record)
  t.equal(validateEventChange({ ...timed, providerEventId: 'abc' }), null, 'accepted, and ignored')
})

test('records take the owner from the session, strip the optimistic prefix and stamp lastUpdated', async (t) => {
  const now = new Date('2026-05-01T00:00:00.000Z')
  const record = toEventRecord({ ...timed, _id: 'optimistic-' + 'c'.repeat(24), description: 'agenda' }, { userId: 'a'.repeat(24), now })
  t.same(record, {
    _id: 'c'.repeat(24),
    user: 'a'.repeat(24),
    title: 'Review',
    description: 'agenda',
    startDate: timed.startDate,
    endDate: timed.endDate,
    isAllDay: false,
    timeZone: 'Europe/Berlin',
    status: 'confirmed',
    origin: 'compass',
    priority: 'work',
    lastUpdated: '2026-05-01T00:00:00.000Z'
  })
  const minted = toEventRecord(timed, { userId: 'a'.repeat(24), now })
  t.match(minted._id, /^[0-9a-f]{24}$/)
  const occurrence = toEventRecord({ ...timed, recurrence: { eventId: 'optimistic-' + 'd'.repeat(24) }, originalStartDate: timed.startDate }, { userId: 'a'.repeat(24), now })
  t.same(occurrence.recurrence, { eventId: 'd'.repeat(24) })
})

test('a change that leaves out the defaulted fields gets the defaults', async (t) => {
  const minimal = { startDate: '2026-05-04T10:00:00Z', endDate: '2026-05-04T11:00:00Z' }
  t.equal(validateEventChange(minimal), null)
  t.match(toEventRecord(minimal, { userId: 'a'.repeat(24), now: new Date() }), {
    title: '', isAllDay: false, timeZone: 'UTC', status: 'confirmed', origin: 'compass', priority: 'unassigned'
  })
  t.same(validateEventChange({ startDate: '2026-05-04', endDate: '2026-05-05' }), { path: '/startDate', message: 'must be an RFC 3339 date-time with offset for a timed event' }, 'isAllDay defaults to false')
})

test('ids', async (t) => {
  t.equal(normalizeEventId('optimistic-' + 'e'.repeat(24)), 'e'.repeat(24))
  t.equal(normalizeEventId('e'.repeat(24)), 'e'.repeat(24))
  t.throws(() => normalizeEventId('optimistic-xyz'), TypeError)
  t.not(mintEventId(), mintEventId())
  t.same(parseEventAddress('e'.repeat(24)), { kind: 'stored', eventId: 'e'.repeat(24) })
  t.same(parseEventAddress('e'.repeat(24) + '_20260504T080000Z'), { kind: 'occurrence', seriesId: 'e'.repeat(24), occurrenceKey: '20260504T080000Z' })
  t.same(parseEventAddress('e'.repeat(24) + '_20260504'), { kind: 'occurrence', seriesId: 'e'.repeat(24), occurrenceKey: '20260504' })
  t.equal(parseEventAddress('e'.repeat(23)), null)
  t.equal(parseEventAddress('e'.repeat(24) + '_2026'), null)
})
