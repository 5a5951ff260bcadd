// In Chromium against the whole system and a real Radicale: a person who connected their CalDAV
// account from the toolbar edits a weekly series another client wrote on the server, in the
// dialog: one occurrence renamed ("this event") becomes a RECURRENCE-ID override in the series'
// resource, one deleted ("this event") an EXDATE, and "this and following" from a later week ends
// the series with an UNTIL before that week and writes a new series' resource beginning there,
// with every occurrence counted on both sides. A series made here is split the same way and keeps
// its head and its tail on both sides. A change the server refuses (403) shows as not synced, on
// the event, in the status line and in the dialog. The server's side is read as another client reads it:
// tsdav fetches the resources, ical.js parses and expands them.
import { test } from 'tap'
import type { DateTime } from 'luxon'
import ICAL from 'ical.js'
import { fetchCalendarObjects } from 'tsdav'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { EVENTUALLY_MS, connectCalDavThroughUi, eventBlock, signUpThroughUi } from './ui.js'
import {
  FIRST_DAY, IMPORTED_AFTER_DELETE, IMPORTED_AFTER_RENAME, IMPORTED_AFTER_SPLIT, IMPORTED_WEEKS_AFTER_SPLIT, OCCURRENCE_WINDOW, OWN_AFTER_SPLIT, OWN_WEEKS_AFTER_SPLIT, ZONE,
  createWeeklySeriesInDialog, date, deleteOccurrenceInDialog, occurrencesInBerlin, own, renameInDialog, seenNotSynced, seenWeekByWeek, settledOccurrences, week, writeMarks
} from './series-ui.js'
import { startFullStack } from '../e2e/stack.js'
import { caldavFetch } from '../sync/caldav/fetch.js'
import { caldavOccurrences } from '../e2e/occurrences.js'
import { uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'
import { basic, radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'

const USER = 'ida'
const APP_PASSWORD = 'abcd-efgh-ijkl-mnop'
const UID = 'weekly-review@another.example'
const local = (day: DateTime, hour: number) => `${day.toFormat('yyyyMMdd')}T${String(hour).padStart(2, '0')}0000`
const instant = (day: DateTime, hour: number) => day.set({ hour }).toJSDate().getTime()

// Europe/Berlin as Thunderbird and Apple Calendar write it.
const BERLIN = [
  'BEGIN:VTIMEZONE', 'TZID:Europe/Berlin',
  'BEGIN:DAYLIGHT', 'TZOFFSETFROM:+0100', 'TZOFFSETTO:+0200', 'TZNAME:CEST', 'DTSTART:19700329T020000', 'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU', 'END:DAYLIGHT',
  'BEGIN:STANDARD', 'TZOFFSETFROM:+0200', 'TZOFFSETTO:+0100', 'TZNAME:CET', 'DTSTART:19701025T030000', 'RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU', 'END:STANDARD',
  'END:VTIMEZONE'
]
// ical.js reads a TZID by the zones it knows: this one, whoever wrote the resource.
ICAL.TimezoneService.register(new ICAL.Component(ICAL.parse(BERLIN.join('\r\n'))))

const SERIES = [
  'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Another client//EN', ...BERLIN,
  'BEGIN:VEVENT', `UID:${UID}`, 'DTSTAMP:20261101T080000Z', 'LAST-MODIFIED:20261101T080000Z',
  `DTSTART;TZID=Europe/Berlin:${local(FIRST_DAY, 9)}`, `DTEND;TZID=Europe/Berlin:${local(FIRST_DAY, 10)}`, 'RRULE:FREQ=WEEKLY;COUNT=6',
  'SUMMARY:Weekly review', 'END:VEVENT',
  'END:VCALENDAR', ''
].join('\r\n')

/** One series as a resource on the server holds it: its master and its overrides. */
interface StoredSeries {
  href: string
  uid: string
  summary: string
  start: number
  rule: ICAL.Recur | null
  exdates: number[]
  overrides: Array<{ recurrenceId: number, summary: string }>
}

function seriesOfResource (href: string, ics: string): StoredSeries[] {
  const calendar = new ICAL.Component(ICAL.parse(ics))
  const events = calendar.getAllSubcomponents('vevent')
  return events.filter((event) => !event.hasProperty('recurrence-id')).map((master) => {
    const uid = String(master.getFirstPropertyValue('uid'))
    return {
      href,
      uid,
      summary: String(master.getFirstPropertyValue('summary')),
      start: (master.getFirstPropertyValue('dtstart') as ICAL.Time).toJSDate().getTime(),
      rule: master.getFirstPropertyValue('rrule') as ICAL.Recur | null,
      exdates: master.getAllProperties('exdate').flatMap((property) => property.getValues() as ICAL.Time[]).map((time) => time.toJSDate().getTime()),
      overrides: events.filter((event) => event.hasProperty('recurrence-id') && String(event.getFirstPropertyValue('uid')) === uid).map((event) => ({
        recurrenceId: (event.getFirstPropertyValue('recurrence-id') as ICAL.Time).toJSDate().getTime(),
        summary: String(event.getFirstPropertyValue('summary'))
      }))
    }
  })
}

test('a CalDAV calendar in the browser: one occurrence renamed and one deleted, this and following on a series from another client and on one made here', { skip: radicaleMissing() ?? false }, async (t) => {
  // The server refuses every write once this is set (403), as one does for a calendar shared to read only.
  let refuseWrites = false
  const stack = await startFullStack(t, {
    web: true,
    caldavFetch: async (input, init = {}) => refuseWrites && (init.method === 'PUT' || init.method === 'DELETE')
      ? new Response('Forbidden', { status: 403, headers: { 'content-type': 'text/plain' } })
      : await caldavFetch(input, init)
  })
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, APP_PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, APP_PASSWORD, 'home', 'Home')
  const seriesUrl = `${calendarUrl}weekly-review.ics`
  t.equal((await radicale.put(seriesUrl, USER, APP_PASSWORD, SERIES)).status, 201, 'another client wrote the series')
  const seriesPath = new URL(seriesUrl).pathname

  /** Every series on the server, resource by resource, as another client fetches them. */
  const onServer = async (): Promise<StoredSeries[]> => {
    const objects = await fetchCalendarObjects({ calendar: { url: calendarUrl }, headers: { authorization: basic(USER, APP_PASSWORD) } })
    return objects.flatMap((object) => seriesOfResource(new URL(object.url, calendarUrl).pathname, String(object.data)))
  }
  const named = async (summary: string) => (await onServer()).filter((series) => series.summary === summary)
  const imported = async () => (await onServer()).find((series) => series.uid === UID)
  /** What the server holds, for a failure's message. */
  const held = async () => (await onServer()).map((series) => `${series.href} ${series.uid} "${series.summary}" from ${new Date(series.start).toISOString()} ${series.rule?.toString() ?? 'no rule'}` +
    ` exdates [${series.exdates.map((ms) => new Date(ms).toISOString()).join(', ')}] overrides [${series.overrides.map((override) => `${new Date(override.recurrenceId).toISOString()} "${override.summary}"`).join(', ')}]`).join('\n  ')
  /** The server's occurrences of the titles starting with `prefix`, expanded by ical.js, as `YYYY-MM-DD HH:mm title` in Berlin. */
  const atServer = async (prefix: string) => occurrencesInBerlin(caldavOccurrences((await radicale.get(calendarUrl, USER, APP_PASSWORD)).body, OCCURRENCE_WINDOW), prefix)

  const browser = await launchBrowser(t)
  const page = await (await newContext(browser, { timezoneId: ZONE })).newPage()
  const errors = collectErrors(page)
  const status = page.locator('p.status')
  await signUpThroughUi(page, stack.webUrl, { name: 'Ida', email: uniqueEmail('caldav-series-ui'), password: 'correct horse 1' }, `/day?date=${date(FIRST_DAY)}`)
  await connectCalDavThroughUi(page, { url: radicale.url, user: USER, password: APP_PASSWORD })
  await eventBlock(page, 'Weekly review').waitFor({ timeout: 20_000 })
  await status.filter({ hasText: 'CalDAV calendar up to date' }).waitFor({ timeout: 20_000 })

  await t.test('"this event" rename: a RECURRENCE-ID override in the series\' resource, the others unchanged', async (t) => {
    await renameInDialog(page, stack.webUrl, week(1), 'Weekly review', 'Weekly review (with finance)', 'This event')
    if (!await waitFor(async () => (await imported())?.overrides.some((override) => override.summary === 'Weekly review (with finance)') === true, 20_000)) {
      t.fail('the override on the server', { server: await held() })
    }
    const series = await imported()
    t.equal(series?.href, seriesPath, 'in the series\' own resource')
    t.same(series?.overrides, [{ recurrenceId: instant(week(1), 9), summary: 'Weekly review (with finance)' }], 'one override, of the second week\'s occurrence')
    t.equal(series?.summary, 'Weekly review', 'the series keeps its title')
    t.equal(series?.rule?.count, 6, 'and its six weeks')
    t.equal((await onServer()).length, 1, 'no resource of its own beside the series')
    t.same(await atServer('Weekly review'), IMPORTED_AFTER_RENAME, 'another client shows six weeks, the second renamed')
    t.equal(await writeMarks(page), 0, 'nothing marked: saved, and synced')
  })

  await t.test('"this event" delete: an EXDATE on the server, gone here, the rest stay', async (t) => {
    await deleteOccurrenceInDialog(page, stack.webUrl, week(2), 'Weekly review')
    t.pass('gone from the day here')
    if (!await waitFor(async () => ((await imported())?.exdates.length ?? 0) > 0, 20_000)) t.fail('the EXDATE on the server', { server: await held() })
    const series = await imported()
    t.same(series?.exdates, [instant(week(2), 9)], 'the third week\'s occurrence is excluded')
    t.equal(series?.overrides.length, 1, 'the override stays')
    t.same(await atServer('Weekly review'), IMPORTED_AFTER_DELETE, 'another client shows the other five')
    await page.reload()
    await status.filter({ hasText: 'CalDAV calendar up to date' }).waitFor({ timeout: 20_000 })
    t.equal(await eventBlock(page, 'Weekly review').count(), 0, 'still gone after a reload')
  })

  await t.test('"this and following" from the fourth week: UNTIL before it, a new series\' resource from it, no occurrence lost', async (t) => {
    await renameInDialog(page, stack.webUrl, week(3), 'Weekly review', 'Weekly review (new format)', 'This and following events')
    const ready = await waitFor(async () => (await named('Weekly review (new format)')).length > 0 && (await imported())?.rule?.until !== null, 20_000)
    t.ok(ready, 'the cut and the new series on the server', { server: await held() })
    const head = await imported()
    const until = head?.rule?.until?.toJSDate().getTime()
    t.ok(until !== undefined && until >= instant(week(1), 9) && until < instant(week(3), 9), `the series ends before the fourth week (UNTIL ${until === undefined ? 'none' : new Date(until).toISOString()})`)
    t.equal(head?.rule?.count ?? null, null, 'by UNTIL alone (RFC 5545: not both)')
    t.equal(head?.href, seriesPath, 'in its own resource')
    t.same(head?.overrides, [{ recurrenceId: instant(week(1), 9), summary: 'Weekly review (with finance)' }], 'its override stays')
    t.same(head?.exdates, [instant(week(2), 9)], 'its EXDATE stays')
    const tail = await named('Weekly review (new format)')
    t.equal(tail.length, 1, 'one new series')
    t.not(tail[0]?.href, seriesPath, 'in a resource of its own')
    t.not(tail[0]?.uid, UID, 'with a UID of its own')
    t.equal(tail[0]?.start, instant(week(3), 9), 'beginning on the fourth week\'s day at 9:00')
    t.ok(tail[0]?.rule !== null && tail[0]?.rule !== undefined, 'repeating')
    t.same(await settledOccurrences(atServer, 'Weekly review', IMPORTED_AFTER_SPLIT), IMPORTED_AFTER_SPLIT, 'another client: two before (the renamed one kept, the deleted one still deleted), three after, none later')
    t.same(await seenWeekByWeek(page, stack.webUrl, FIRST_DAY, 'Weekly review', IMPORTED_WEEKS_AFTER_SPLIT), IMPORTED_WEEKS_AFTER_SPLIT, 'here, week by week: the same five')
    t.equal(await writeMarks(page), 0, 'nothing marked')
  })

  await t.test('a series made here, then "this and following" from its third week: head and tail on both sides', async (t) => {
    await createWeeklySeriesInDialog(t, page, stack.webUrl, { title: 'Planning', day: own(0), start: '14:00', end: '15:00', times: 6 }, { name: 'Home', message: 'a new event goes to the CalDAV calendar' })
    if (!await waitFor(async () => (await named('Planning')).length > 0, 20_000)) t.fail('the series on the server', { server: await held() })
    const made = (await named('Planning'))[0]
    t.equal(made?.rule?.count, 6, 'six weeks on the server')
    t.equal(made?.start, instant(own(0), 14), 'from the first day at 14:00')

    await renameInDialog(page, stack.webUrl, own(2), 'Planning', 'Planning (v2)', 'This and following events')
    const ready = await waitFor(async () => (await named('Planning (v2)')).length > 0 && (await named('Planning'))[0]?.rule?.until !== null, 20_000)
    t.ok(ready, 'the cut and the tail on the server', { server: await held() })
    const head = await named('Planning')
    t.equal(head.length, 1, 'the head stays on the server')
    t.equal(head[0]?.href, made?.href, 'in its resource')
    const until = head[0]?.rule?.until?.toJSDate().getTime()
    t.ok(until !== undefined && until >= instant(own(1), 14) && until < instant(own(2), 14), `and ends before the third week (UNTIL ${until === undefined ? 'none' : new Date(until).toISOString()})`)
    const tail = await named('Planning (v2)')
    t.equal(tail.length, 1, 'the tail is on the server')
    t.not(tail[0]?.href, made?.href, 'in a resource of its own')
    t.equal(tail[0]?.start, instant(own(2), 14), 'from the third week')
    t.same(await settledOccurrences(atServer, 'Planning', OWN_AFTER_SPLIT), OWN_AFTER_SPLIT, 'another client: two before, four after, six in all')
    t.same(await seenWeekByWeek(page, stack.webUrl, own(0), 'Planning', OWN_WEEKS_AFTER_SPLIT), OWN_WEEKS_AFTER_SPLIT, 'here, week by week: the same six')
    t.equal(await writeMarks(page), 0, 'nothing marked')
    await status.filter({ hasText: 'CalDAV calendar up to date' }).waitFor({ timeout: EVENTUALLY_MS })
  })

  await t.test('a change the server refuses: the event says "Not synced", the status line counts it, the dialog says why', async (t) => {
    refuseWrites = true
    await renameInDialog(page, stack.webUrl, own(0), 'Planning', 'Planning (kept here)', 'This event')
    await seenNotSynced(t, page, 'Planning (kept here)', '1 change not synced to CalDAV calendar', /Not synced\..*The CalDAV server lets this account only read this calendar/)
    t.same(await named('Planning (kept here)'), [], 'the server keeps what it had')
  })

  // Before the sign-up the session library tries a refresh, answered 401: there is no session yet.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no error in the browser')
})
