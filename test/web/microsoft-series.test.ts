// In Chromium against the whole system with the Microsoft stand-in: a person signed in with
// Microsoft (their Outlook calendar connected in the same consent) edits a weekly series imported
// from Outlook in the dialog: one occurrence renamed ("this event") becomes an exception of the
// series at Graph, one deleted ("this event") is cancelled there, and "this and following" from a
// later week ends the series before that week and begins a new one there, with every occurrence
// counted on both sides. A series made here is split the same way and keeps its head and its tail
// on both sides. A change Graph refuses (a calendar the account may only read) shows as not synced,
// on the event and in the status line, with its reason in the dialog.
import { test } from 'tap'
import type { DateTime } from 'luxon'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { EVENTUALLY_MS, eventBlock } from './ui.js'
import {
  FIRST_DAY, IMPORTED_AFTER_DELETE, IMPORTED_AFTER_RENAME, IMPORTED_AFTER_SPLIT, IMPORTED_WEEKS_AFTER_SPLIT, OCCURRENCE_WINDOW, OWN_AFTER_SPLIT, OWN_WEEKS_AFTER_SPLIT, ZONE,
  createWeeklySeriesInDialog, date, deleteOccurrenceInDialog, occurrencesInBerlin, openEvent, own, renameInDialog, seenNotSynced, seenWeekByWeek, settledOccurrences, week, writeMarks
} from './series-ui.js'
import { defaultMicrosoftCalendar, startFullStack, withMicrosoft } from '../e2e/stack.js'
import { graphClient } from '../e2e/graph-client.js'
import { microsoftOccurrences } from '../e2e/occurrences.js'
import { uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

const WINDOWS_ZONE = 'W. Europe Standard Time'

interface StoredException { originalStart: string, cancelled: boolean, subject?: string, type?: string, seriesMasterId?: string }
interface StoredRecurrence { pattern: Record<string, unknown>, range: { type: string, startDate: string, endDate: string, numberOfOccurrences: number } }
interface StoredEvent { id: string, subject: string, type: string, deleted: boolean, createdBy: string, recurrence: StoredRecurrence | null, start: { dateTime: string }, exceptions: StoredException[] }

/** An occurrence's start at `hour` in Berlin, as Graph's `originalStart` writes it (UTC, seconds). */
function originalStart (day: DateTime, hour: number): string {
  return day.set({ hour }).toUTC().toISO({ suppressMilliseconds: true }) as string
}

test('Outlook in the browser: one occurrence renamed and one deleted, this and following on an imported series and on one made here, and a change Graph refuses', async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { web: true, microsoft: true }))
  const microsoft = stack.microsoft.control
  const email = uniqueEmail('ms-series-ui')
  microsoft.createAccount({ email, name: 'Ida Example', timeZone: WINDOWS_ZONE })
  const calendarId = defaultMicrosoftCalendar(stack, email)
  const at = (day: DateTime, hour: number) => ({ dateTime: `${date(day)}T${String(hour).padStart(2, '0')}:00:00`, timeZone: WINDOWS_ZONE })
  const series = microsoft.insertEvent(calendarId, {
    subject: 'Weekly review',
    start: at(FIRST_DAY, 9),
    end: at(FIRST_DAY, 10),
    recurrence: {
      pattern: { type: 'weekly', interval: 1, daysOfWeek: [FIRST_DAY.setLocale('en-US').toFormat('cccc').toLowerCase()], firstDayOfWeek: 'sunday' },
      range: { type: 'numbered', startDate: date(FIRST_DAY), numberOfOccurrences: 6, recurrenceTimeZone: WINDOWS_ZONE }
    }
  })
  const seriesId = String(series['id'])
  const team = microsoft.addCalendar(email, { name: 'Team (read only)', canEdit: false })
  microsoft.insertEvent(team.id, { subject: 'Team offsite', start: at(FIRST_DAY, 13), end: at(FIRST_DAY, 17) })
  // Another device of the same person: what Outlook shows, its series expanded by Graph.
  const device = await graphClient(stack.microsoft, email, `${stack.backendOrigin}/sync/oauth/microsoft/callback`)
  /** Outlook's occurrences of the titles starting with `prefix`, as `YYYY-MM-DD HH:mm title` in Berlin. */
  const atGraph = async (prefix: string) => occurrencesInBerlin(await microsoftOccurrences(device, OCCURRENCE_WINDOW), prefix)
  const stored = () => microsoft.storedEvents(calendarId) as unknown as StoredEvent[]
  const master = () => stored().find((event) => event.id === seriesId)
  const live = (subject: string) => stored().filter((event) => !event.deleted && event.subject === subject)
  /** What Graph holds, for a failure's message: each event with its series' range and exceptions. */
  const held = () => stored().map((event) => `${event.subject} (${event.type}${event.deleted ? ', deleted' : ''}, by ${event.createdBy}) from ${event.start.dateTime}` +
    `${event.recurrence === null ? '' : ` range ${JSON.stringify(event.recurrence.range)}`}${event.exceptions.map((exception) => `\n    ${exception.originalStart}: ${exception.cancelled ? 'cancelled' : exception.subject ?? ''}`).join('')}`).join('\n  ')
  /** Waits for Graph to hold what `condition` asks; when it does not, fails with what it holds. */
  const untilAtGraph = async (condition: () => boolean, what: string) => {
    if (!await waitFor(condition, 20_000)) throw new Error(`gave up waiting for ${what}; Graph holds:\n  ${held()}`)
  }

  const browser = await launchBrowser(t)
  const page = await (await newContext(browser, { timezoneId: ZONE })).newPage()
  // The stand-in's pages have no favicon; that is not the client's error.
  const errors = collectErrors(page, { foreign: (url) => url.startsWith(stack.microsoft.url) })
  const status = page.locator('p.status')
  const dialog = page.getByRole('dialog', { name: 'Edit event' })
  await page.goto(`${stack.webUrl}/day?date=${date(FIRST_DAY)}&auth=login`)
  await page.getByRole('dialog', { name: 'Sign in' }).getByRole('button', { name: 'Continue with Microsoft' }).click()
  await page.waitForURL((url) => url.href.startsWith(`${stack.microsoft.url}/common/oauth2/v2.0/authorize`))
  await page.getByLabel(email).check()
  await page.getByRole('button', { name: 'Accept' }).click()
  await page.waitForURL(`${stack.webUrl}/day?date=${date(FIRST_DAY)}`)
  await eventBlock(page, 'Weekly review').waitFor({ timeout: 20_000 })
  await eventBlock(page, 'Team offsite').waitFor({ timeout: 20_000 })
  await status.filter({ hasText: 'Outlook calendar up to date' }).waitFor({ timeout: 20_000 })

  await t.test('"this event" rename: the occurrence is an exception of the series at Graph, the others unchanged', async (t) => {
    await renameInDialog(page, stack.webUrl, week(1), 'Weekly review', 'Weekly review (with finance)', 'This event')
    await untilAtGraph(() => master()?.exceptions.some((exception) => exception.subject === 'Weekly review (with finance)') === true, 'the exception at Graph')
    t.match(master()?.exceptions, [{ originalStart: originalStart(week(1), 9), cancelled: false, type: 'exception', seriesMasterId: seriesId, subject: 'Weekly review (with finance)' }], 'one exception, of the second week\'s occurrence')
    t.equal(master()?.exceptions.length, 1, 'no other occurrence touched')
    t.equal(live('Weekly review (with finance)').length, 0, 'no event of its own beside the series')
    t.same(await atGraph('Weekly review'), IMPORTED_AFTER_RENAME, 'Outlook shows six weeks, the second renamed')
    t.equal(await writeMarks(page), 0, 'nothing marked: saved, and synced')
  })

  await t.test('"this event" delete: the occurrence is cancelled at Graph, gone here, the rest stay', async (t) => {
    await deleteOccurrenceInDialog(page, stack.webUrl, week(2), 'Weekly review')
    t.pass('gone from the day here')
    await untilAtGraph(() => master()?.exceptions.some((exception) => exception.cancelled) === true, 'the cancelled occurrence at Graph')
    t.match(master()?.exceptions.find((exception) => exception.cancelled), { originalStart: originalStart(week(2), 9) }, 'the third week\'s occurrence is cancelled')
    t.equal(master()?.deleted, false, 'the series stays')
    t.same(await atGraph('Weekly review'), IMPORTED_AFTER_DELETE, 'Outlook shows the other five')
    await page.reload()
    await status.filter({ hasText: 'Outlook calendar up to date' }).waitFor({ timeout: 20_000 })
    t.equal(await eventBlock(page, 'Weekly review').count(), 0, 'still gone after a reload (the import did not bring it back)')
  })

  await t.test('"this and following" from the fourth week: the series ends before it at Graph, a new one begins there, no occurrence lost', async (t) => {
    await renameInDialog(page, stack.webUrl, week(3), 'Weekly review', 'Weekly review (new format)', 'This and following events')
    // Waited for without giving up at once: what each side then shows is what the person is left with.
    const tailAtGraph = await waitFor(() => live('Weekly review (new format)').some((event) => event.recurrence !== null), 20_000)
    t.ok(tailAtGraph, 'a new series at Graph', { graph: held() })
    await waitFor(() => master()?.recurrence?.range.type === 'endDate', 5000)
    const cut = master()?.recurrence?.range
    t.ok(cut?.type === 'endDate' && cut.endDate >= date(week(1)) && cut.endDate < date(week(3)), `the old series ends before the fourth week (${JSON.stringify(cut)})`)
    t.equal(master()?.deleted, false, 'the old series stays')
    t.match(master()?.exceptions, [
      { originalStart: originalStart(week(1), 9), cancelled: false, subject: 'Weekly review (with finance)' },
      { originalStart: originalStart(week(2), 9), cancelled: true }
    ], 'with its renamed and its cancelled occurrence')
    const tail = live('Weekly review (new format)')
    t.equal(tail.length, 1, 'one new event at Graph')
    t.match(tail[0], { type: 'seriesMaster', start: { dateTime: new RegExp(`^${(week(3)).set({ hour: 9 }).toUTC().toFormat("yyyy-MM-dd'T'HH:mm")}`) } }, 'a series, beginning on the fourth week\'s day at 9:00')
    t.same(await settledOccurrences(atGraph, 'Weekly review', IMPORTED_AFTER_SPLIT), IMPORTED_AFTER_SPLIT, 'Outlook: two before (the renamed one kept, the deleted one still deleted), three after, none later')
    t.same(await seenWeekByWeek(page, stack.webUrl, FIRST_DAY, 'Weekly review', IMPORTED_WEEKS_AFTER_SPLIT), IMPORTED_WEEKS_AFTER_SPLIT, 'here, week by week: the same five')
    t.equal(await writeMarks(page), 0, 'nothing marked')
  })

  await t.test('a series made here, then "this and following" from its third week: head and tail on both sides', async (t) => {
    await createWeeklySeriesInDialog(t, page, stack.webUrl, { title: 'Planning', day: own(0), start: '14:00', end: '15:00', times: 6 }, { name: 'Calendar', message: 'a new event goes to the Outlook calendar' })
    await untilAtGraph(() => live('Planning').some((event) => event.recurrence !== null), 'the series at Graph')
    t.match(live('Planning')[0]?.recurrence?.range, { type: 'numbered', numberOfOccurrences: 6 }, 'six weeks at Graph')
    const ownId = live('Planning')[0]?.id

    await renameInDialog(page, stack.webUrl, own(2), 'Planning', 'Planning (v2)', 'This and following events')
    await untilAtGraph(() => live('Planning (v2)').some((event) => event.recurrence !== null), 'the tail at Graph')
    await untilAtGraph(() => stored().find((event) => event.id === ownId)?.recurrence?.range.type === 'endDate', 'the head cut at Graph')
    const head = stored().find((event) => event.id === ownId)
    t.equal(head?.deleted, false, 'the head stays at Graph')
    t.ok(head?.recurrence !== null && head !== undefined && (head.recurrence?.range.endDate ?? '') < date(own(2)), `and ends before the third week (${head?.recurrence?.range.endDate ?? 'no end'})`)
    t.same(await settledOccurrences(atGraph, 'Planning', OWN_AFTER_SPLIT), OWN_AFTER_SPLIT, 'Outlook: two before, four after, six in all')
    t.same(await seenWeekByWeek(page, stack.webUrl, own(0), 'Planning', OWN_WEEKS_AFTER_SPLIT), OWN_WEEKS_AFTER_SPLIT, 'here, week by week: the same six')
    t.equal(await writeMarks(page), 0, 'nothing marked')
    await status.filter({ hasText: 'Outlook calendar up to date' }).waitFor({ timeout: EVENTUALLY_MS })
  })

  await t.test('a change Graph refuses: the event says "Not synced", the status line counts it, the dialog says why', async (t) => {
    await page.goto(`${stack.webUrl}/day?date=${date(FIRST_DAY)}`)
    await openEvent(page, 'Team offsite')
    await dialog.getByLabel('Title').fill('Team offsite (moved here)')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await seenNotSynced(t, page, 'Team offsite (moved here)', '1 change not synced to Outlook calendar', /Not synced\..*Outlook lets this account only read this calendar/)
    t.same(microsoft.storedEvents(team.id).map((event) => event['subject']), ['Team offsite'], 'Outlook keeps its owner\'s version')
  })

  // The page's session check answers 401 before the sign-in, as for any signed-out visitor.
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no error in the browser')
})
