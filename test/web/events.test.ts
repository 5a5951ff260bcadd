// The client's event rules without a browser: which local events are carried into an account
// (demo events never), the signed-out calendar's series operations (the API's semantics),
// the edit plans for this / this and following / all, the grid layout, and the stream reactions.
import { test } from 'tap'
import { DateTime } from 'luxon'
import { afterCarry, carrySelection, demoEvents, withDemoSeed, type LocalData } from '../../web/src/lib/local-events.js'
import { localCreate, localDelete, localRange, localReplace } from '../../web/src/lib/local-calendar.js'
import { followingRule, planEdit, type EventDraft } from '../../web/src/lib/series-edit.js'
import { layoutDay, viewDays } from '../../web/src/lib/grid.js'
import { newEventId, type CalendarEvent } from '../../web/src/lib/events.js'
import { EMPTY_SYNC_VIEW, primaryConnection, queriesToRefetch, reactTo, unsyncedWritesOf } from '../../web/src/lib/stream-reactions.js'

const zone = 'Europe/Berlin'
const empty: LocalData = { version: 1, seeded: false, entries: [] }
let counter = 0
const id = () => (++counter).toString(16).padStart(24, 'a')

function timed (title: string, start: string, end: string, extra: Partial<CalendarEvent> = {}): CalendarEvent {
  return { _id: id(), title, startDate: start, endDate: end, isAllDay: false, timeZone: zone, status: 'confirmed', origin: 'compass', priority: 'unassigned', ...extra }
}

const week = { from: new Date('2026-03-02T00:00:00+01:00'), to: new Date('2026-03-09T00:00:00+01:00') }

test('client ids are 24 hex, seconds first', async (t) => {
  const made = newEventId(Date.UTC(2026, 2, 2))
  t.match(made, /^[0-9a-f]{24}$/)
  t.equal(made.slice(0, 8), (Date.UTC(2026, 2, 2) / 1000).toString(16))
})

test('carry-over: own events go (series before their occurrences), demo events never, edited or not', async (t) => {
  const demos = demoEvents(DateTime.fromISO('2026-03-02T08:00:00', { zone }), zone, id)
  let data = withDemoSeed(empty, demos)
  t.equal(withDemoSeed(data, demos), data, 'seeded once')
  const demoSeries = demos.find((event) => event.recurrence?.rule !== undefined) as CalendarEvent
  const demoSingle = demos.find((event) => event.title === 'Lunch with Sam') as CalendarEvent

  // The user edits a demo event, edits one occurrence of the demo series, and makes their own.
  data = localReplace(data, demoSingle._id, { ...demoSingle, title: 'Lunch with Sam and Kim' })
  data = localReplace(data, `${demoSeries._id}_20260303T080000Z`, { ...demoSeries, recurrence: undefined, title: 'Planning (moved)', startDate: '2026-03-03T10:00:00+01:00', endDate: '2026-03-03T10:30:00+01:00' })
  const mine = timed('Dentist', '2026-03-04T09:00:00+01:00', '2026-03-04T10:00:00+01:00')
  const myYoga = timed('Yoga', '2026-03-02T18:00:00+01:00', '2026-03-02T19:00:00+01:00', { recurrence: { rule: ['RRULE:FREQ=WEEKLY'] } })
  data = localCreate(data, mine)
  data = localCreate(data, myYoga)
  data = localReplace(data, `${myYoga._id}_20260309T170000Z`, { ...myYoga, recurrence: undefined, title: 'Yoga (late)', startDate: '2026-03-09T19:00:00+01:00', endDate: '2026-03-09T20:00:00+01:00' })
  data = localDelete(data, `${myYoga._id}_20260316T170000Z`, 'this')

  const [first, second, ...more] = carrySelection(data)
  t.same(more, [])
  t.same(first?.map((change) => change.title), ['Dentist', 'Yoga'], 'singles and series first')
  t.same(second?.map((change) => [change.title, change.status, change.recurrence?.eventId]), [
    ['Yoga (late)', 'confirmed', myYoga._id],
    ['Yoga', 'cancelled', myYoga._id]
  ], 'then the edited and cancelled occurrences of those series')
  const sent = JSON.stringify(carrySelection(data))
  t.notMatch(sent, /Lunch|Planning|Conference|Gym|Deep work/, 'no demo event, edited or not, and no edit of a demo series')
  t.notMatch(sent, /"demo"/, 'the marker never leaves the browser')

  const left = afterCarry(data)
  t.ok(left.entries.every((entry) => entry.demo === true), 'the demo events stay local')
  t.equal(carrySelection(left).length, 0, 'nothing is carried twice')
})

test('the signed-out calendar: range reads, and series edits and deletes as the API does them', async (t) => {
  const standup = timed('Standup', '2026-03-02T09:00:00+01:00', '2026-03-02T09:15:00+01:00', { recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=5'] } })
  let data = localCreate(empty, standup)
  const titles = () => localRange(data, week.from, week.to).map((event) => `${event.startDate.slice(5, 16)} ${event.title}`)
  t.same(titles(), ['03-02T09:00 Standup', '03-03T09:00 Standup', '03-04T09:00 Standup', '03-05T09:00 Standup', '03-06T09:00 Standup'])
  const occurrences = localRange(data, week.from, week.to)
  t.equal(occurrences[1]?._id, `${standup._id}_20260303T080000Z`, 'occurrence ids are <seriesId>_<UTC start>')

  data = localReplace(data, `${standup._id}_20260303T080000Z`, { ...standup, recurrence: undefined, title: 'Standup (late)', startDate: '2026-03-03T11:00:00+01:00', endDate: '2026-03-03T11:15:00+01:00' })
  data = localDelete(data, `${standup._id}_20260304T080000Z`, 'this')
  t.same(titles(), ['03-02T09:00 Standup', '03-03T11:00 Standup (late)', '03-05T09:00 Standup', '03-06T09:00 Standup'], 'this: one edited, one gone')

  data = localDelete(data, `${standup._id}_20260305T080000Z`, 'thisAndFollowing')
  t.same(titles(), ['03-02T09:00 Standup', '03-03T11:00 Standup (late)'], 'this and following: the series ends before it')

  const timingChange = localReplace(data, standup._id, { ...standup, recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=2'] }, startDate: '2026-03-02T10:00:00+01:00', endDate: '2026-03-02T10:15:00+01:00' })
  t.same(localRange(timingChange, week.from, week.to).map((event) => event.startDate.slice(5, 16)), ['03-02T10:00', '03-03T10:00'], 'a timing change drops the edits, as the backend does')

  data = localDelete(data, `${standup._id}_20260302T080000Z`, 'all')
  t.same(titles(), [], 'all: the series and its edits are gone')
  t.same(data.entries, [])
  t.throws(() => localCreate(empty, timed('Backwards', '2026-03-02T10:00:00+01:00', '2026-03-02T09:00:00+01:00')), /after the start/)
})

test('edit plans: this is a PUT on the occurrence, all a PUT on the series (shifted), following a split', async (t) => {
  const series = timed('Review', '2026-03-02T14:00:00+01:00', '2026-03-02T15:00:00+01:00', { recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=6'] } })
  const occurrence: CalendarEvent = { ...series, _id: `${series._id}_20260316T130000Z`, recurrence: { eventId: series._id }, originalStartDate: '2026-03-16T14:00:00+01:00', startDate: '2026-03-16T14:00:00+01:00', endDate: '2026-03-16T15:00:00+01:00' }
  const draft: EventDraft = { title: 'Review (new room)', description: '', location: 'Room 4', isAllDay: false, startDate: '2026-03-16T16:00:00+01:00', endDate: '2026-03-16T17:30:00+01:00', timeZone: zone, frequency: 'WEEKLY' }

  t.match(planEdit(occurrence, draft, 'this', series, 'n1'), {
    kind: 'replace', id: occurrence._id, change: { title: 'Review (new room)', recurrence: { eventId: series._id }, originalStartDate: '2026-03-16T14:00:00+01:00', startDate: draft.startDate }
  })
  const all = planEdit(occurrence, draft, 'all', series, 'n1')
  t.match(all, { kind: 'replace', id: series._id, change: { startDate: '2026-03-02T16:00:00+01:00', endDate: '2026-03-02T17:30:00+01:00', recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=6'] }, location: 'Room 4' } },
    'the series keeps its first day and takes the new time and length')
  const split = planEdit(occurrence, draft, 'thisAndFollowing', series, 'n1')
  t.match(split, { kind: 'split', deleteId: occurrence._id, create: { _id: 'n1', startDate: draft.startDate, recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=4'] } } },
    'the new series has the occurrences that were left')
  t.same(followingRule({ ...series, recurrence: { rule: ['RRULE:FREQ=WEEKLY;UNTIL=20260501T000000Z'] } }, new Date('2026-03-16T13:00:00Z')), ['RRULE:FREQ=WEEKLY;UNTIL=20260501T000000Z'])
  // Another client deleted 9 March (before the cut) and 30 March (after it). COUNT counts before
  // exclusions (RFC 5545, 3.8.5.3): two occurrences came before 16 March, so four are left; the
  // deletion after the cut stays, the one before is not the new series' business.
  const withDeletions = { ...series, recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=6', 'EXDATE;TZID=Europe/Berlin:20260309T140000,20260330T140000', 'EXDATE:20260309T130000Z'] } }
  t.same(followingRule(withDeletions, new Date('2026-03-16T13:00:00Z')), ['RRULE:FREQ=WEEKLY;COUNT=4', 'EXDATE;TZID=Europe/Berlin:20260330T140000'])
  t.same(followingRule({ ...series, recurrence: { rule: ['RRULE:FREQ=WEEKLY;COUNT=6', 'EXDATE:20260309T130000Z'] } }, new Date('2026-03-16T13:00:00Z')), ['RRULE:FREQ=WEEKLY;COUNT=4'])

  const single = timed('Call', '2026-03-02T09:00:00+01:00', '2026-03-02T09:30:00+01:00', { priority: 'work' })
  t.match(planEdit(single, { ...draft, frequency: null }, 'this', null, 'n2'), { kind: 'replace', id: single._id, change: { priority: 'work', title: 'Review (new room)' } })
  t.notOk((planEdit(single, { ...draft, frequency: null }, 'this', null, 'n2') as { change: CalendarEvent }).change.recurrence)
})

test('grid: a week starts on Monday; overlapping events sit side by side', async (t) => {
  const days = viewDays(DateTime.fromISO('2026-03-05T12:00:00', { zone }), 'week')
  t.same(days.map((day) => day.toISODate()), ['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05', '2026-03-06', '2026-03-07', '2026-03-08'])
  const placed = layoutDay([
    timed('A', '2026-03-02T09:00:00+01:00', '2026-03-02T10:00:00+01:00'),
    timed('B', '2026-03-02T09:30:00+01:00', '2026-03-02T11:00:00+01:00'),
    timed('C', '2026-03-02T10:00:00+01:00', '2026-03-02T10:30:00+01:00'),
    timed('D', '2026-03-02T13:00:00+01:00', '2026-03-02T14:00:00+01:00'),
    timed('Night', '2026-03-01T23:00:00+01:00', '2026-03-02T01:00:00+01:00')
  ], days[0] as DateTime, zone)
  const byTitle = Object.fromEntries(placed.map((item) => [item.event.title, [item.top, item.height, item.column, item.columns]]))
  t.same(byTitle, { Night: [0, 60, 0, 1], A: [540, 60, 0, 2], B: [570, 90, 1, 2], C: [600, 30, 0, 2], D: [780, 60, 0, 1] })
  t.equal(placed.find((item) => item.event.title === 'Night')?.continuesBefore, true)
})

test('stream reactions: both revoked codes mean revoked; eventsChanged refetches the queries it touches', async (t) => {
  let sync = reactTo(EMPTY_SYNC_VIEW, { type: 'syncStatusChanged', connectionId: 'c1', status: 'healthy' }).sync
  t.equal(primaryConnection(sync)?.status, 'HEALTHY')
  const current = reactTo(sync, { type: 'syncStatusChanged', connectionId: 'c1', status: 'attention', code: 'CONNECTION_REVOKED', retryable: false })
  const alias = reactTo(current.sync, { type: 'syncStatusChanged', connectionId: 'c1', status: 'attention', code: 'GOOGLE_REVOKED', retryable: false, aliasOf: 'CONNECTION_REVOKED' })
  t.same(alias.sync, current.sync, 'the alias after the current code changes nothing')
  const legacyOnly = reactTo(sync, { type: 'syncStatusChanged', connectionId: 'c1', status: 'attention', code: 'GOOGLE_REVOKED', retryable: false })
  t.same(legacyOnly.sync, current.sync, 'the legacy code alone means the same')
  t.match(primaryConnection(current.sync), { status: 'RECONNECT_REQUIRED', revoked: true, code: 'CONNECTION_REVOKED' })
  t.match(primaryConnection(reactTo(sync, { type: 'syncStatusChanged', connectionId: 'c1', status: 'attention', code: 'READ_FAILURE', retryable: true }).sync), { status: 'ATTENTION', revoked: false })

  sync = reactTo(sync, { type: 'syncStatusChanged', connectionId: 'c1', status: 'syncing', import: { operation: 'full', counts: { calendarsDone: 1, calendarsTotal: 3, eventsImported: 40 } } }).sync
  t.match(primaryConnection(sync), { status: 'IMPORTING', importProgress: { calendarsDone: 1, calendarsTotal: 3, eventsImported: 40 } })
  const done = reactTo(sync, { type: 'importCompleted', connectionId: 'c1', operation: 'full', counts: { calendarsDone: 3, calendarsTotal: 3, eventsImported: 120 } })
  t.match(primaryConnection(done.sync), { status: 'HEALTHY', lastImport: { eventsImported: 120 } })
  t.same(done.refetch, { all: true })

  const replay = reactTo(done.sync, {
    type: 'userMetadataChanged',
    session: { userId: '0123456789abcdef01234567', metadata: { sync: 'RESTART' } },
    sync: { userId: '0123456789abcdef01234567', cloudMutationMode: 'enabled', connections: [{ connectionId: 'c1', provider: 'google', state: 'actionRequired', reason: 'authorizationRevoked', lastReadFailureAt: null, lastSyncedAt: null, lastHealthyAt: null, importProgress: null, createdAt: '2026-03-01T00:00:00.000Z' }] }
  } as never)
  t.match(replay.sync, { metadata: { sync: 'RESTART' }, connections: { c1: { status: 'RECONNECT_REQUIRED', revoked: true } } })
  t.equal(replay.refetch, null)

  const cached = [
    { key: 'monday', eventIds: ['aaaaaaaaaaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbbbbbbbbbb_20260302T080000Z'] },
    { key: 'nextWeek', eventIds: ['cccccccccccccccccccccccc'] }
  ]
  t.same(queriesToRefetch({ all: false, eventIds: ['bbbbbbbbbbbbbbbbbbbbbbbb'] }, cached), ['monday'], 'a series id touches the queries holding its occurrences')
  t.same(queriesToRefetch({ all: false, eventIds: ['dddddddddddddddddddddddd'] }, cached), ['monday', 'nextWeek'], 'an id no query holds may be new: all')
  t.same(queriesToRefetch({ all: true }, cached), ['monday', 'nextWeek'])
  t.same(queriesToRefetch(null, cached), [])
  t.same(reactTo(EMPTY_SYNC_VIEW, { type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: ['aaaaaaaaaaaaaaaaaaaaaaaa'] }).refetch, { all: false, eventIds: ['aaaaaaaaaaaaaaaaaaaaaaaa'] })
  t.equal(reactTo(EMPTY_SYNC_VIEW, { type: 'eventsChanged', reasons: ['event'], refetchAll: true }).calendars, undefined, 'events alone leave the calendar list')
  t.equal(reactTo(EMPTY_SYNC_VIEW, { type: 'calendarsChanged', reasons: ['calendar'], refetchAll: true }).calendars, true, 'calendarsChanged: the calendar list is read again (specification, "Message types")')
})

test('changes a provider does not have: counted per connection from the replay and the stream, summed over every connection', async (t) => {
  const summary = { provider: 'google' as const, state: 'healthy' as const, reason: null, lastReadFailureAt: null, lastSyncedAt: null, lastHealthyAt: null, importProgress: null, createdAt: '2026-03-01T00:00:00.000Z' }
  let sync = reactTo(EMPTY_SYNC_VIEW, {
    type: 'userMetadataChanged',
    session: { userId: '0123456789abcdef01234567', metadata: {} },
    sync: { userId: '0123456789abcdef01234567', cloudMutationMode: 'enabled', execution: 'active', connections: [{ ...summary, connectionId: 'g1', unsyncedWrites: 2 }, { ...summary, connectionId: 'd1', provider: 'caldav' as const, unsyncedWrites: 0 }] }
  }).sync
  t.same(unsyncedWritesOf(sync), { count: 2, providers: ['google'] }, 'the replay counts them')
  sync = reactTo(sync, { type: 'syncStatusChanged', connectionId: 'd1', status: 'healthy', unsyncedWrites: 1 }).sync
  t.same(unsyncedWritesOf(sync), { count: 3, providers: ['google', 'caldav'] }, 'the stream updates one connection')
  sync = reactTo(sync, { type: 'syncStatusChanged', connectionId: 'g1', status: 'syncing' }).sync
  t.same(unsyncedWritesOf(sync), { count: 3, providers: ['google', 'caldav'] }, 'a status that does not count them leaves the count')
  sync = reactTo(sync, { type: 'syncStatusChanged', connectionId: 'g1', status: 'healthy', unsyncedWrites: 0 }).sync
  sync = reactTo(sync, { type: 'syncStatusChanged', connectionId: 'd1', status: 'healthy', unsyncedWrites: 0 }).sync
  t.equal(unsyncedWritesOf(sync), null, 'none left')
})
