// In Chromium against the whole system: one person connects three accounts of different kinds from
// the toolbar, a Google account and an Outlook account (the same address at both, as the connect
// rule asks) and a CalDAV account on a real Radicale. The list names each calendar beside its box,
// the status line speaks of all of them, and the dialog's everyday edits of each provider's weekly
// series ("this event", then "this and following") reach that provider, and no other, with every
// occurrence counted on each side. Each connect comes back to the day it began on.
import { test } from 'tap'
import type { DateTime } from 'luxon'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { connectCalDavThroughUi, consent, eventBlock, signUpThroughUi } from './ui.js'
import { FIRST_DAY, OCCURRENCE_WINDOW, ZONE, date, occurrencesInBerlin, renameInDialog, settledOccurrences, week, writeMarks } from './series-ui.js'
import { defaultMicrosoftCalendar, startFullStack, withMicrosoft } from '../e2e/stack.js'
import { graphClient } from '../e2e/graph-client.js'
import { caldavOccurrences, googleItems, microsoftOccurrences, providerOccurrences } from '../e2e/occurrences.js'
import { uniqueEmail } from '../helper.js'
import { radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'

const WINDOWS_ZONE = 'W. Europe Standard Time'
const CALDAV_USER = 'ida'
const APP_PASSWORD = 'abcd-efgh-ijkl-mnop'
const SERIES = [
  { provider: 'Google', title: 'Google review', hour: 9 },
  { provider: 'Outlook', title: 'Outlook stand-up', hour: 11 },
  { provider: 'CalDAV', title: 'CalDAV yoga', hour: 17 }
] as const
type Series = typeof SERIES[number]

const occurrence = (day: DateTime, hour: number, title: string) => `${day.toFormat('yyyy-MM-dd')} ${String(hour).padStart(2, '0')}:00 ${title}`
/** Six weeks from the first; the second renamed ("this event"), and from `splitFrom` on the new title. */
function expected (series: Series, splitFrom: number | null): string[] {
  return [0, 1, 2, 3, 4, 5].map((n) => occurrence(week(n), series.hour,
    splitFrom !== null && n >= splitFrom ? `${series.title} (new)` : n === 1 ? `${series.title} (one)` : series.title))
}
const local = (day: DateTime, hour: number) => `${day.toFormat('yyyyMMdd')}T${String(hour).padStart(2, '0')}0000`

test('three accounts of different kinds at once: the list, the status line, and each series\' edits at its own provider only', { skip: radicaleMissing() ?? false }, async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { web: true, microsoft: true }))
  const google = stack.google.control
  const microsoft = stack.microsoft.control
  const email = uniqueEmail('three')
  const [googleSeries, outlookSeries, caldavSeries] = SERIES

  google.createAccount({ email, name: 'Ida Example', timeZone: ZONE })
  google.insertEvent(email, {
    summary: googleSeries.title,
    start: { dateTime: `${date(FIRST_DAY)}T09:00:00`, timeZone: ZONE },
    end: { dateTime: `${date(FIRST_DAY)}T10:00:00`, timeZone: ZONE },
    recurrence: ['RRULE:FREQ=WEEKLY;COUNT=6']
  })
  microsoft.createAccount({ email, name: 'Ida Example', timeZone: WINDOWS_ZONE })
  const outlookCalendar = defaultMicrosoftCalendar(stack, email)
  microsoft.insertEvent(outlookCalendar, {
    subject: outlookSeries.title,
    start: { dateTime: `${date(FIRST_DAY)}T11:00:00`, timeZone: WINDOWS_ZONE },
    end: { dateTime: `${date(FIRST_DAY)}T12:00:00`, timeZone: WINDOWS_ZONE },
    recurrence: {
      pattern: { type: 'weekly', interval: 1, daysOfWeek: [FIRST_DAY.setLocale('en-US').toFormat('cccc').toLowerCase()], firstDayOfWeek: 'sunday' },
      range: { type: 'numbered', startDate: date(FIRST_DAY), numberOfOccurrences: 6, recurrenceTimeZone: WINDOWS_ZONE }
    }
  })
  const radicale = await startRadicale(t)
  await radicale.setPassword(CALDAV_USER, APP_PASSWORD)
  const calendarUrl = await radicale.createCalendar(CALDAV_USER, APP_PASSWORD, 'home', 'Home')
  const written = await radicale.put(`${calendarUrl}yoga.ics`, CALDAV_USER, APP_PASSWORD, [
    'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Another client//EN',
    'BEGIN:VEVENT', 'UID:yoga@another.example', 'DTSTAMP:20261101T080000Z',
    `DTSTART;TZID=${ZONE}:${local(FIRST_DAY, 17)}`, `DTEND;TZID=${ZONE}:${local(FIRST_DAY, 18)}`, 'RRULE:FREQ=WEEKLY;COUNT=6',
    `SUMMARY:${caldavSeries.title}`, 'END:VEVENT', 'END:VCALENDAR', ''
  ].join('\r\n'))
  t.equal(written.status, 201, 'another client wrote the CalDAV series')

  // Each side as another client of it reads it, expanded over the same weeks.
  const device = await graphClient(stack.microsoft, email, `${stack.backendOrigin}/sync/oauth/microsoft/callback`)
  const sides = {
    Google: async () => providerOccurrences(googleItems(google.storedEvents(email)), OCCURRENCE_WINDOW),
    Outlook: async () => await microsoftOccurrences(device, OCCURRENCE_WINDOW),
    CalDAV: async () => caldavOccurrences((await radicale.get(calendarUrl, CALDAV_USER, APP_PASSWORD)).body, OCCURRENCE_WINDOW)
  }
  /** A side's occurrences of the titles starting with `prefix`, as `YYYY-MM-DD HH:mm title` in Berlin. */
  const atSide = (series: Series) => async (prefix: string) => occurrencesInBerlin(await sides[series.provider](), prefix)
  /** The titles a side holds that are not its own series': a change that went to the wrong provider. */
  const strangers = async (series: Series) => (await sides[series.provider]()).map((line) => line.split('|')[2] ?? '').filter((title) => !title.startsWith(series.title))

  const browser = await launchBrowser(t)
  const page = await (await newContext(browser, { timezoneId: ZONE })).newPage()
  const errors = collectErrors(page, { foreign: (url) => url.startsWith(stack.google.url) || url.startsWith(stack.microsoft.url) })
  const status = page.locator('p.status')
  await signUpThroughUi(page, stack.webUrl, { name: 'Ida', email, password: 'correct horse 1' }, `/day?date=${date(FIRST_DAY)}`)
  await page.getByRole('button', { name: 'Connect Google Calendar' }).click()
  await consent(page, stack.google.url, email)
  await page.waitForURL(`${stack.webUrl}/day?date=${date(FIRST_DAY)}`)
  await eventBlock(page, googleSeries.title).waitFor({ timeout: 20_000 })
  await page.getByRole('button', { name: 'Connect Microsoft calendar' }).click()
  await page.waitForURL((url) => url.href.startsWith(stack.microsoft.url))
  await page.getByLabel(email).check()
  await page.getByRole('button', { name: 'Accept' }).click()
  // Back on the page it began on, the redirect's parameters gone, as after Google's connect.
  await page.waitForURL(`${stack.webUrl}/day?date=${date(FIRST_DAY)}`)
  await eventBlock(page, outlookSeries.title).waitFor({ timeout: 20_000 })
  await connectCalDavThroughUi(page, { url: radicale.url, user: CALDAV_USER, password: APP_PASSWORD })
  await eventBlock(page, caldavSeries.title).waitFor({ timeout: 20_000 })

  await t.test('the list names each calendar beside its box; the status line speaks of all three', async (t) => {
    const list = page.getByRole('complementary', { name: 'Calendars' })
    // Each box is labelled by its calendar's name, then its provider's.
    const named = (name: string) => list.getByLabel(new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
    for (const name of ['My calendar', email, 'Calendar', 'Home']) t.ok(await named(name).isChecked(), `${name} listed and shown`)
    // The primary Google calendar is named by its address: one long word.
    const box = await named(email).boundingBox()
    const name = await list.locator('.calendar-name', { hasText: email }).boundingBox()
    t.ok(box !== null && name !== null && name.x > box.x + box.width && name.y < box.y + box.height, 'a long name breaks beside its box, not under it')
    await status.filter({ hasText: 'All calendars up to date' }).waitFor({ timeout: 20_000 })
    t.pass('"All calendars up to date", not one provider\'s name')
  })

  for (const series of SERIES) {
    await t.test(`${series.provider}: one occurrence renamed ("this event") at ${series.provider} only`, async (t) => {
      await renameInDialog(page, stack.webUrl, week(1), series.title, `${series.title} (one)`, 'This event')
      t.same(await settledOccurrences(atSide(series), series.title, expected(series, null)), expected(series, null), `${series.provider} shows six weeks, the second renamed`)
    })
  }
  for (const series of SERIES) {
    await t.test(`${series.provider}: "this and following" from the fourth week, at ${series.provider} only`, async (t) => {
      await renameInDialog(page, stack.webUrl, week(3), series.title, `${series.title} (new)`, 'This and following events')
      t.same(await settledOccurrences(atSide(series), series.title, expected(series, 3)), expected(series, 3), `${series.provider}: three weeks as they were, three of the new series`)
    })
  }

  await t.test('nothing went to another provider; nothing marked; still all up to date', async (t) => {
    for (const series of SERIES) t.same(await strangers(series), [], `${series.provider} holds only its own series`)
    await status.filter({ hasText: 'All calendars up to date' }).waitFor({ timeout: 20_000 })
    t.equal(await writeMarks(page), 0, 'no change marked as not synced')
  })
  t.same(errors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
})
