// The scenario the browser tests of series edits play on each provider (caldav-series.test.ts on
// Radicale, microsoft-series.test.ts on the Microsoft stand-in): a weekly series imported from the
// provider and one made here, edited in the dialog the same way, and what the provider's side and
// the week view here must then list. How the provider's side is read, and what it stores, stay in
// each test.
import type { Test } from 'tap'
import type { Page } from 'playwright-core'
import { DateTime } from 'luxon'
import { eventBlock, eventTitles, openEvent as openEventByClick } from './ui.js'
import { waitFor, waitUntil } from '../processes.js'

export const ZONE = 'Europe/Berlin'
/**
 * The imported series' first day (its first occurrence at 9:00). Two days ahead, so all its weeks
 * lie in Sync's import window (two weeks back, six ahead) whenever this runs.
 */
export const FIRST_DAY = DateTime.now().setZone(ZONE).startOf('day').plus({ days: 2 })
/** The series' day in its week `n`: week(0) has its first occurrence, week(5) its last; weeks 6 and 7 must stay empty. */
export const week = (n: number) => FIRST_DAY.plus({ weeks: n })
/** The own series' day in its week `n`, a day after the imported one's, at 14:00. */
export const own = (n: number) => week(n).plus({ days: 1 })
/** A day as the page's URLs and the dialog's date fields take it: YYYY-MM-DD. */
export const date = (day: DateTime) => day.toISODate() as string

/** Where the provider's side is read: a day before the first week to two days after week 7, so an occurrence too many shows. */
export const OCCURRENCE_WINDOW = { from: week(0).minus({ days: 1 }).toUTC().toISO() as string, to: week(7).plus({ days: 2 }).toUTC().toISO() as string }

/**
 * The occurrences among `lines` (`start|end|title`, as test/e2e/occurrences.ts lists a side) whose
 * title starts with `prefix`, as `YYYY-MM-DD HH:mm title` in Berlin: how the lists below write them.
 */
export function occurrencesInBerlin (lines: string[], prefix: string): string[] {
  return lines.flatMap((line) => {
    const [start, , title = ''] = line.split('|')
    return title.startsWith(prefix) ? [`${DateTime.fromISO(start ?? '').setZone(ZONE).toFormat('yyyy-MM-dd HH:mm')} ${title}`] : []
  })
}

const occurrence = (day: DateTime, hour: number, title: string) => `${day.toFormat('yyyy-MM-dd')} ${String(hour).padStart(2, '0')}:00 ${title}`

/** The imported series at the provider after "this event" renamed its second week: six weeks. */
export const IMPORTED_AFTER_RENAME = [
  occurrence(week(0), 9, 'Weekly review'), occurrence(week(1), 9, 'Weekly review (with finance)'), occurrence(week(2), 9, 'Weekly review'),
  occurrence(week(3), 9, 'Weekly review'), occurrence(week(4), 9, 'Weekly review'), occurrence(week(5), 9, 'Weekly review')
]
/** Then after "this event" deleted its third week: the other five. */
export const IMPORTED_AFTER_DELETE = [
  occurrence(week(0), 9, 'Weekly review'), occurrence(week(1), 9, 'Weekly review (with finance)'),
  occurrence(week(3), 9, 'Weekly review'), occurrence(week(4), 9, 'Weekly review'), occurrence(week(5), 9, 'Weekly review')
]
/** Then after "this and following" renamed it from its fourth week: two before, three after, none later. */
export const IMPORTED_AFTER_SPLIT = [
  occurrence(week(0), 9, 'Weekly review'), occurrence(week(1), 9, 'Weekly review (with finance)'),
  occurrence(week(3), 9, 'Weekly review (new format)'), occurrence(week(4), 9, 'Weekly review (new format)'), occurrence(week(5), 9, 'Weekly review (new format)')
]
/** The same five in the week view here, week by week from the first, weeks 6 and 7 empty. */
export const IMPORTED_WEEKS_AFTER_SPLIT = [['Weekly review'], ['Weekly review (with finance)'], [], ['Weekly review (new format)'], ['Weekly review (new format)'], ['Weekly review (new format)'], [], []]

/** The series made here at the provider after "this and following" renamed it from its third week: two before, four after. */
export const OWN_AFTER_SPLIT = [
  occurrence(own(0), 14, 'Planning'), occurrence(own(1), 14, 'Planning'),
  occurrence(own(2), 14, 'Planning (v2)'), occurrence(own(3), 14, 'Planning (v2)'), occurrence(own(4), 14, 'Planning (v2)'), occurrence(own(5), 14, 'Planning (v2)')
]
/** The same six in the week view here, week by week from the first, weeks 6 and 7 empty. */
export const OWN_WEEKS_AFTER_SPLIT = [['Planning'], ['Planning'], ['Planning (v2)'], ['Planning (v2)'], ['Planning (v2)'], ['Planning (v2)'], [], []]

/**
 * Opens an event's dialog with a click held down as long as a person holds one (150 ms). A click
 * whose button comes up before the grid's next render is a bug of its own, kept out of what these
 * tests are about: the grid adds its drag listeners in an effect after that render, misses the
 * pointerup, and the next click anywhere (a button of the dialog) moves the event by the distance
 * between the two clicks (seen here as a stray RECURRENCE-ID at 19:45, or an EXDATE past the cut).
 */
export async function openEvent (page: Page, title: string): Promise<void> {
  await openEventByClick(page, title, 30_000, 150)
}

/** Renames the occurrence titled `title` on `day` to `renamed`, for `scope`, in the edit dialog, and waits for the grid to show the new title. */
export async function renameInDialog (page: Page, webUrl: string, day: DateTime, title: string, renamed: string, scope: 'This event' | 'This and following events'): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'Edit event' })
  await page.goto(`${webUrl}/day?date=${date(day)}`)
  await openEvent(page, title)
  await dialog.getByLabel('Title').fill(renamed)
  await dialog.getByLabel(scope).check()
  await dialog.getByRole('button', { name: 'Save' }).click()
  await eventBlock(page, renamed).waitFor()
}

/** Deletes the one occurrence titled `title` on `day` ("this event") in the edit dialog, and waits for the grid to drop it. */
export async function deleteOccurrenceInDialog (page: Page, webUrl: string, day: DateTime, title: string): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'Edit event' })
  await page.goto(`${webUrl}/day?date=${date(day)}`)
  await openEvent(page, title)
  await dialog.getByLabel('This event').check()
  await dialog.getByRole('button', { name: 'Delete' }).click()
  await eventBlock(page, title).waitFor({ state: 'detached' })
}

/**
 * Makes a weekly series of `times` occurrences in the new event dialog, from `day` at `start` to
 * `end`, and waits for the grid to show it. Before it is saved, the dialog must have chosen the
 * `calendar` of the provider under test: saved anywhere else, the series would never reach it.
 */
export async function createWeeklySeriesInDialog (
  t: Test, page: Page, webUrl: string,
  series: { title: string, day: DateTime, start: string, end: string, times: number },
  calendar: { name: string, message: string }
): Promise<void> {
  await page.goto(`${webUrl}/day?date=${date(series.day)}`)
  await page.getByRole('button', { name: 'New event' }).click()
  const create = page.getByRole('dialog', { name: 'New event' })
  await create.getByLabel('Title').fill(series.title)
  await create.getByLabel('Start date').fill(date(series.day))
  await create.getByLabel('Start time').fill(series.start)
  await create.getByLabel('End date').fill(date(series.day))
  await create.getByLabel('End time').fill(series.end)
  t.equal(await create.getByLabel('Calendar', { exact: true }).locator('option:checked').textContent(), calendar.name, calendar.message)
  await create.getByLabel('Repeat').selectOption('WEEKLY')
  await create.getByLabel('After', { exact: true }).check()
  await create.getByLabel('Number of times').fill(String(series.times))
  await create.getByRole('button', { name: 'Save' }).click()
  await create.waitFor({ state: 'hidden' })
  await eventBlock(page, series.title).waitFor()
}

/**
 * What `read` lists of `prefix` once it lists `expected`, or after 10 s: the provider's side
 * settles after the page does, and the assertion on what this returns is what fails if it never does.
 */
export async function settledOccurrences (read: (prefix: string) => Promise<string[]>, prefix: string, expected: string[]): Promise<string[]> {
  await waitFor(async () => JSON.stringify(await read(prefix)) === JSON.stringify(expected), 10_000)
  return await read(prefix)
}

/**
 * What the week view shows of the series, week by week from the week of `first`: the titles that
 * start with `prefix`. Each week is read once it shows what is `expected` (or after a wait), so a
 * week still loading is not taken for a week without the series.
 */
export async function seenWeekByWeek (page: Page, webUrl: string, first: DateTime, prefix: string, expected: string[][]): Promise<string[][]> {
  await page.goto(`${webUrl}/week?date=${date(first)}`)
  const seen: string[][] = []
  const range = page.locator('h2.range-title')
  for (const [week, wanted] of expected.entries()) {
    if (week > 0) {
      const before = await range.textContent()
      await page.getByRole('button', { name: 'Next week' }).click()
      await waitUntil(async () => await range.textContent() !== before, `week ${week + 1} shown`)
    }
    const titles = async () => (await eventTitles(page)).filter((title) => title.startsWith(prefix)).sort()
    await waitFor(async () => JSON.stringify(await titles()) === JSON.stringify(wanted) && await page.locator('.grid[aria-busy="true"]').count() === 0, 5000)
    seen.push(await titles())
  }
  return seen
}

/** How many of the grid's events carry a mark: a change the server has not taken, or one its provider calendar does not have. */
export async function writeMarks (page: Page): Promise<number> {
  return await page.locator('.write-mark').count()
}

/**
 * A change its provider refused, as the person sees it: the event marked "Not synced", the status
 * line counting it (`statusText`), and the dialog giving the reason (`reason`).
 */
export async function seenNotSynced (t: Test, page: Page, title: string, statusText: string, reason: RegExp): Promise<void> {
  const mark = page.getByRole('group', { name: `Not synced: ${title}` })
  await mark.waitFor({ timeout: 20_000 })
  t.match(await mark.textContent(), /Not synced/, 'the event is marked')
  await page.locator('p.status').filter({ hasText: statusText }).waitFor({ timeout: 20_000 })
  t.pass('the status line says so, not "up to date"')
  await openEvent(page, title)
  const dialog = page.getByRole('dialog', { name: 'Edit event' })
  t.match(await dialog.locator('#event-sync-issue').textContent(), reason, 'the reason, for a person')
  await dialog.getByRole('button', { name: 'Cancel' }).click()
}
