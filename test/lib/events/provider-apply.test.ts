// A cancelled exception shows its master's content at the occurrence's original start, the master's
// length long, in the master's zone: the same dates Luxon gives, across changes of offset.
import { test } from 'tap'
import { DateTime } from 'luxon'
import { foldOccurrence, planProviderBatch } from '../../../lib/events/provider-apply.js'
import type { ProviderRecord } from '../../../lib/events/record.js'
import type { ProviderEvent } from '../../../schemas/sync/index.js'
import { mintEventId } from '../../../lib/events/ids.js'

const USER = '665f1c2e8a1b2c3d4e5f6a7b'
const MASTER_ID = mintEventId()

function master (startDate: string, endDate: string, timeZone: string, isAllDay = false): ProviderRecord {
  return {
    _id: MASTER_ID,
    user: USER,
    title: 'Weekly',
    startDate,
    endDate,
    isAllDay,
    timeZone,
    status: 'confirmed',
    origin: 'providerImport',
    priority: 'unassigned',
    calendarId: 'primary',
    providerEventId: 'weekly',
    lastUpdated: '2026-01-01T00:00:00.000Z',
    recurrence: { rule: ['RRULE:FREQ=WEEKLY'] }
  }
}

/** The stored dates of the cancelled occurrence of `series` that began at `originalStartDate`. */
function cancelledDates (series: ProviderRecord, originalStartDate: string): [string, string] {
  const item: ProviderEvent = { providerEventId: `weekly_${originalStartDate}`, updated: '2026-06-01T00:00:00.000Z', status: 'cancelled', recurringEventId: 'weekly', originalStartDate }
  const plan = planProviderBatch({
    batch: { userId: USER, connectionId: 'connection-1', provider: 'google', calendarId: 'primary', events: [item] },
    stored: [series],
    waiting: [],
    linked: [],
    edits: [],
    mintId: mintEventId
  })
  const write = plan.writes.find((candidate) => candidate.kind === 'insert')
  if (write?.kind !== 'insert') throw new Error(`no insert planned: ${JSON.stringify(plan)}`)
  return [write.record.startDate, write.record.endDate]
}

/** What Luxon answers for the same occurrence (the master's length from the original start, in its zone). */
function luxonDates (series: ProviderRecord, originalStartDate: string): [string, string] {
  const zone = series.timeZone
  const start = DateTime.fromISO(series.startDate, { setZone: true }).setZone(zone)
  const end = DateTime.fromISO(series.endDate, { setZone: true }).setZone(zone)
  const occurrence = DateTime.fromISO(originalStartDate, { setZone: true }).setZone(zone)
  return [occurrence.toISO({ suppressMilliseconds: true }) ?? '', occurrence.plus(end.diff(start)).toISO({ suppressMilliseconds: true }) ?? '']
}

test('a cancelled timed occurrence: the master\'s length from its original start, as Luxon writes it', async (t) => {
  const cases: Array<[ProviderRecord, string, [string, string]]> = [
    // Made in summer, cancelled after New York's clocks went back: an hour long, at its wall time.
    [master('2026-07-06T09:00:00-04:00', '2026-07-06T10:00:00-04:00', 'America/New_York'), '2026-11-02T09:00:00-05:00', ['2026-11-02T09:00:00-05:00', '2026-11-02T10:00:00-05:00']],
    // Three hours across the doubled hour of the night the clocks go back: three hours of real time.
    [master('2026-07-05T00:30:00-04:00', '2026-07-05T03:30:00-04:00', 'America/New_York'), '2026-11-01T00:30:00-04:00', ['2026-11-01T00:30:00-04:00', '2026-11-01T02:30:00-05:00']],
    // The original start written in UTC, shown in the master's zone.
    [master('2026-03-02T09:00:00+01:00', '2026-03-02T09:45:00+01:00', 'Europe/Berlin'), '2026-04-06T07:00:00Z', ['2026-04-06T09:00:00+02:00', '2026-04-06T09:45:00+02:00']],
    // Milliseconds are kept where there are some; a zone of UTC is written Z.
    [master('2026-01-05T10:00:00.250Z', '2026-01-05T10:30:00Z', 'UTC'), '2026-01-12T10:00:00.250Z', ['2026-01-12T10:00:00.250Z', '2026-01-12T10:30:00Z']],
    // A half-hour zone.
    [master('2026-01-05T09:00:00+05:45', '2026-01-05T10:00:00+05:45', 'Asia/Kathmandu'), '2026-01-12T03:15:00Z', ['2026-01-12T09:00:00+05:45', '2026-01-12T10:00:00+05:45']]
  ]
  for (const [series, original, expected] of cases) {
    const dates = cancelledDates(series, original)
    t.same(dates, expected, `${series.timeZone} ${original}`)
    t.same(dates, luxonDates(series, original), 'the same as Luxon')
  }
})

test('a cancelled all-day occurrence keeps its dates', async (t) => {
  t.same(cancelledDates(master('2026-03-02', '2026-03-04', 'Europe/Berlin', true), '2026-03-30'), ['2026-03-30', '2026-04-01'])
})

test('an exception whose original start is no real date is refused with its reason, with or without its master, and the rest of the page goes on', async (t) => {
  for (const stored of [[master('2026-03-02T09:00:00+01:00', '2026-03-02T10:00:00+01:00', 'Europe/Berlin')], []]) {
    const items: ProviderEvent[] = ['2026-02-30T09:00:00+01:00', '2026-03-09T25:00:00+01:00', '2026-13-01'].map((originalStartDate) => (
      { providerEventId: `weekly_${originalStartDate}`, updated: '2026-06-01T00:00:00.000Z', status: 'cancelled', recurringEventId: 'weekly', originalStartDate }))
    const plain: ProviderEvent = { providerEventId: 'lunch', updated: '2026-06-01T00:00:00.000Z', status: 'confirmed', content: { title: 'Lunch', startDate: '2026-03-03T12:00:00Z', endDate: '2026-03-03T13:00:00Z', isAllDay: false, timeZone: 'UTC' } }
    const plan = planProviderBatch({
      batch: { userId: USER, connectionId: 'connection-1', provider: 'google', calendarId: 'primary', events: [...items, plain] },
      stored,
      waiting: [],
      linked: [],
      edits: [],
      mintId: mintEventId
    })
    t.same(plan.rejections.map((rejection) => rejection.reason), Array(3).fill('an exception whose original start is not a real date'), `refused (${stored.length === 0 ? 'master not here' : 'master here'})`)
    t.match(plan.writes, [{ kind: 'insert', record: { title: 'Lunch' } }], 'the page\'s other event is written')
  }
})

test('an event\'s colour: a provider\'s replaces ours (none there: none here), but Graph, which has none, leaves ours', async (t) => {
  const stored: ProviderRecord = { ...master('2026-07-06T09:00:00Z', '2026-07-06T10:00:00Z', 'UTC'), recurrence: undefined, providerEventId: 'single', color: 'grape' }
  const item = (color?: 'basil'): ProviderEvent => ({
    providerEventId: 'single',
    updated: '2026-07-07T00:00:00.000Z',
    status: 'confirmed',
    content: { title: 'Renamed there', startDate: '2026-07-06T09:00:00Z', endDate: '2026-07-06T10:00:00Z', isAllDay: false, timeZone: 'UTC', ...(color === undefined ? {} : { color }) }
  })
  const colourAfter = (provider: 'google' | 'microsoft' | 'caldav', event: ProviderEvent) => {
    const plan = planProviderBatch({ batch: { userId: USER, connectionId: 'connection-1', provider, calendarId: 'primary', events: [event] }, stored: [stored], waiting: [], linked: [], edits: [], mintId: mintEventId })
    const write = plan.writes.find((candidate) => candidate.kind === 'replace')
    if (write?.kind !== 'replace') throw new Error(`no replace planned: ${JSON.stringify(plan)}`)
    t.equal(write.record.title, 'Renamed there')
    return write.record.color
  }
  t.equal(colourAfter('google', item('basil')), 'basil', 'Google\'s colour')
  t.equal(colourAfter('google', item()), undefined, 'Google\'s none: the calendar\'s colour')
  t.equal(colourAfter('caldav', item()), undefined, 'CalDAV\'s none (or a COLOR not ours): the calendar\'s colour')
  t.equal(colourAfter('microsoft', item()), 'grape', 'an Outlook event keeps the colour chosen here')
})

test('an own edit folded with the provider\'s newer copy of the occurrence keeps its colour unless the provider dropped one', async (t) => {
  const occurrence = { user: USER, title: 'Weekly', startDate: '2026-12-07T09:00:00Z', endDate: '2026-12-07T10:00:00Z', isAllDay: false, timeZone: 'UTC', status: 'confirmed' as const, origin: 'compass' as const, priority: 'self' as const, recurrence: { eventId: MASTER_ID }, originalStartDate: '2026-12-07T09:00:00Z' }
  const mine: ProviderRecord = { ...occurrence, _id: mintEventId(), title: 'Weekly (moved)', color: 'tomato', lastUpdated: '2026-11-30T09:00:00.000Z' }
  const graphs: ProviderRecord = { ...occurrence, _id: mintEventId(), title: 'Weekly at Outlook', calendarId: 'cal', providerEventId: 'AAMk-1', lastUpdated: '2026-11-30T09:05:00.000Z', providerUpdated: '2026-11-30T09:05:00.000Z' }
  const folded = foldOccurrence([mine, graphs])
  t.equal(folded?.keep.title, 'Weekly at Outlook', 'the newer copy\'s content')
  t.equal(folded?.keep.color, 'tomato', 'a provider that never held a colour leaves ours')
  t.same(folded?.drop, [graphs._id])

  const cleared: ProviderRecord = { ...graphs, providerBase: { title: 'Weekly at Outlook', startDate: occurrence.startDate, endDate: occurrence.endDate, isAllDay: false, timeZone: 'UTC', color: 'sage' } }
  t.equal(foldOccurrence([mine, cleared])?.keep.color, undefined, 'a colour the provider held and dropped is dropped here too')
  const coloured: ProviderRecord = { ...graphs, color: 'banana' }
  t.equal(foldOccurrence([mine, coloured])?.keep.color, 'banana', 'the provider\'s newer colour wins')
})

/** Weekly at 9:00 in New York, and the edit here of its second occurrence (no provider id of its own yet unless given). */
const NEW_YORK_WEEKLY = master('2026-07-06T09:00:00-04:00', '2026-07-06T10:00:00-04:00', 'America/New_York')
const SECOND_WEEK = '2026-07-13T09:00:00-04:00'
function renamedHere (fields: Partial<ProviderRecord>): ProviderRecord {
  return {
    ...NEW_YORK_WEEKLY,
    _id: mintEventId(),
    title: 'Renamed here',
    startDate: SECOND_WEEK,
    endDate: '2026-07-13T10:00:00-04:00',
    origin: 'compass',
    lastUpdated: '2026-07-01T12:00:00.000Z',
    recurrence: { eventId: MASTER_ID },
    originalStartDate: SECOND_WEEK,
    providerEventId: undefined,
    ...fields
  }
}

test('a deletion the provider gave no time (Google\'s incremental lists) cancels an occurrence edited here, unless it changed here since the provider\'s version', async (t) => {
  const [series, original, edit] = [NEW_YORK_WEEKLY, SECOND_WEEK, renamedHere]
  const cancellation: ProviderEvent = { providerEventId: 'weekly_20260713T130000Z', updated: new Date(0).toISOString(), status: 'cancelled', recurringEventId: 'weekly', originalStartDate: original }
  const plan = (occurrence: ProviderRecord, known: boolean) => planProviderBatch({
    batch: { userId: USER, connectionId: 'connection-1', provider: 'google', calendarId: 'primary', events: [cancellation] },
    stored: known ? [series, occurrence] : [series],
    waiting: [],
    linked: [],
    edits: known ? [] : [occurrence],
    mintId: mintEventId
  })

  // Renamed here, then cancelled at Google before the rename had a provider id of its own.
  const unlinked = edit({})
  const applied = plan(unlinked, false)
  t.same(applied.counts.superseded, 0, 'the cancellation is not counted older than the rename')
  const written = applied.writes.find((write) => write.kind === 'replace')
  t.equal(written?.kind === 'replace' ? written.record._id : undefined, unlinked._id, 'the occurrence edited here is the one written')
  t.equal(written?.kind === 'replace' ? written.record.status : undefined, 'cancelled', 'as cancelled')

  // Known at Google's version of 12:00, renamed here at 13:00: the rename is newer than what Google's deletion removed.
  const changedSince = edit({ providerEventId: cancellation.providerEventId, providerUpdated: '2026-07-01T12:00:00.000Z', lastUpdated: '2026-07-01T13:00:00.000Z' })
  t.same(plan(changedSince, true).counts.superseded, 1, 'a change here after the provider\'s version keeps the occurrence')
  // Known at that version and not changed here since: the deletion is applied.
  const unchanged = edit({ providerEventId: cancellation.providerEventId, providerUpdated: '2026-07-01T12:00:00.000Z' })
  t.same(plan(unchanged, true).counts.superseded, 0, 'unchanged here since: cancelled')
})

test('a series whose new version excludes an occurrence (another client cancelled it there) takes away the edit here of that occurrence, unless it changed here since', async (t) => {
  const series = { ...NEW_YORK_WEEKLY, providerUpdated: '2026-07-01T10:00:00.000Z' }
  const edit = (lastUpdated: string): ProviderRecord => renamedHere({ lastUpdated })
  const plan = (stored: ProviderRecord, occurrence: ProviderRecord, updated: string, rule: string[]) => planProviderBatch({
    batch: { userId: USER, connectionId: 'connection-1', provider: 'caldav', calendarId: 'primary', events: [{ providerEventId: 'weekly', updated, status: 'confirmed', content: { title: 'Weekly', startDate: series.startDate, endDate: series.endDate, isAllDay: false, timeZone: series.timeZone, recurrence: rule } }] },
    stored: [stored],
    waiting: [],
    linked: [],
    edits: [occurrence],
    mintId: mintEventId
  })
  const excluding = ['RRULE:FREQ=WEEKLY', 'EXDATE;TZID=America/New_York:20260713T090000']

  const renamed = edit('2026-07-01T11:00:00.000Z')
  const cancelledThere = plan(series, renamed, '2026-07-01T12:00:00.000Z', excluding)
  t.ok(cancelledThere.writes.some((write) => write.kind === 'delete' && write.eventId === renamed._id), 'the edit of the excluded occurrence goes')
  t.equal(cancelledThere.counts.deleted, 1, 'counted deleted')

  const newer = edit('2026-07-01T13:00:00.000Z')
  t.notOk(plan(series, newer, '2026-07-01T12:00:00.000Z', excluding).writes.some((write) => write.kind === 'delete'), 'an edit changed here after that version stays')
  const other = plan(series, edit('2026-07-01T11:00:00.000Z'), '2026-07-01T12:00:00.000Z', ['RRULE:FREQ=WEEKLY', 'EXDATE;TZID=America/New_York:20260720T090000'])
  t.notOk(other.writes.some((write) => write.kind === 'delete'), 'another occurrence excluded: the edit stays')
  const excludedBefore = { ...series, recurrence: { rule: excluding } }
  t.notOk(plan(excludedBefore, edit('2026-07-01T11:00:00.000Z'), '2026-07-01T12:00:00.000Z', [...excluding, 'EXDATE;TZID=America/New_York:20260727T090000']).writes.some((write) => write.kind === 'delete'),
    'an exclusion the series already had is no news: an edit made here at it stays')
})

test('each write of a stored event names the version it is made on: as read, then as the page\'s earlier write leaves it', async (t) => {
  const single = { ...master('2026-06-01T09:00:00Z', '2026-06-01T10:00:00Z', 'UTC'), _id: mintEventId(), providerEventId: 'single', recurrence: undefined, lastUpdated: '2026-02-01T00:00:00.000Z' }
  const content = (title: string) => ({ title, startDate: '2026-06-01T09:00:00Z', endDate: '2026-06-01T10:00:00Z', isAllDay: false, timeZone: 'UTC' })
  const plan = planProviderBatch({
    batch: {
      userId: USER,
      connectionId: 'connection-1',
      provider: 'google',
      calendarId: 'primary',
      events: [
        { providerEventId: 'single', updated: '2026-06-01T00:00:00.000Z', status: 'confirmed', content: content('Renamed') },
        { providerEventId: 'single', updated: '2026-06-02T00:00:00.000Z', status: 'confirmed', content: content('Renamed again') },
        { providerEventId: 'weekly', updated: '2026-06-01T00:00:00.000Z', status: 'cancelled' },
        { providerEventId: 'new', updated: '2026-06-01T00:00:00.000Z', status: 'confirmed', content: content('New') }
      ]
    },
    stored: [master('2026-06-01T09:00:00Z', '2026-06-01T10:00:00Z', 'UTC'), single],
    waiting: [],
    linked: [],
    edits: [],
    mintId: mintEventId
  })
  t.match(plan.writes, [
    { kind: 'replace', record: { _id: single._id, title: 'Renamed' }, unchanged: { lastUpdated: '2026-02-01T00:00:00.000Z', syncIssue: null } },
    { kind: 'replace', record: { _id: single._id, title: 'Renamed again' }, unchanged: { lastUpdated: '2026-06-01T00:00:00.000Z', syncIssue: null } },
    { kind: 'delete', eventId: MASTER_ID, unchanged: { lastUpdated: '2026-01-01T00:00:00.000Z', syncIssue: null } },
    { kind: 'deleteInstances', seriesId: MASTER_ID },
    { kind: 'insert', record: { title: 'New' } }
  ])
  t.notOk('unchanged' in (plan.writes[4] ?? {}), 'an insert is not guarded (a second insert of the event fails on its key)')
})
