// In Chromium against the whole system and a real Radicale: a signed-up person connects their
// CalDAV account from the toolbar's dialog. A wrong app password is refused in the dialog with
// what was typed kept; the right one closes it, the status goes from syncing to up to date, and
// the calendar's events appear in the day and week views without a reload. When the server stops
// accepting the password, the banner asks for it again in the same dialog, prefilled.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { test } from 'tap'
import { DateTime } from 'luxon'
import type { Page } from 'playwright-core'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { eventBlock, signUpThroughUi } from './ui.js'
import { startFullStack } from '../e2e/stack.js'
import { uniqueEmail } from '../helper.js'
import { radicaleMissing, startRadicale } from '../sync/caldav/radicale.js'
import { ics } from '../sync/caldav/harness.js'

const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

const ZONE = 'Europe/Berlin'
const USER = 'ada'
const APP_PASSWORD = 'abcd-efgh-ijkl-mnop'

/** Every text the status line shows from now on, so a passing "syncing" is seen however short. */
async function recordStatus (page: Page): Promise<() => Promise<string[]>> {
  await page.evaluate(`(() => {
    const seen = window.statusSeen = []
    const read = () => { const text = document.querySelector('p.status')?.textContent ?? ''; if (seen.at(-1) !== text) seen.push(text) }
    new MutationObserver(read).observe(document.body, { subtree: true, childList: true, characterData: true })
  })()`)
  return async () => await page.evaluate('window.statusSeen') as string[]
}

/** The id of what has focus, or its text when it has none (a button). */
async function focused (page: Page): Promise<string> {
  return await page.evaluate('document.activeElement?.id || document.activeElement?.textContent || ""') as string
}

test('a CalDAV account in the browser: refused, connected, imported, password entered again', { skip: radicaleMissing() ?? false }, async (t) => {
  // Near today, so the import's window holds it whenever this runs.
  const day = DateTime.now().setZone(ZONE).startOf('day').plus({ days: 2 })
  const utc = (hour: number) => day.set({ hour }).toUTC().toFormat("yyyyMMdd'T'HHmmss'Z'")
  const stack = await startFullStack(t, { web: true })
  const radicale = await startRadicale(t)
  await radicale.setPassword(USER, APP_PASSWORD)
  const calendarUrl = await radicale.createCalendar(USER, APP_PASSWORD, 'home', 'Home')
  await radicale.put(`${calendarUrl}dentist.ics`, USER, APP_PASSWORD, ics(['UID:dentist', 'DTSTAMP:20261101T000000Z', `DTSTART:${utc(10)}`, `DTEND:${utc(11)}`, 'SUMMARY:Dentist']))
  await radicale.put(`${calendarUrl}lunch.ics`, USER, APP_PASSWORD, ics(['UID:lunch', 'DTSTAMP:20261101T000000Z', `DTSTART:${utc(13)}`, `DTEND:${utc(14)}`, 'SUMMARY:Team lunch']))

  const browser = await launchBrowser(t)
  // The accessibility scan is injected as a script, which the page's own CSP would refuse.
  const page = await (await newContext(browser, { timezoneId: ZONE, bypassCSP: true })).newPage()
  const errors = collectErrors(page)
  let navigations = 0
  const status = page.locator('p.status')
  const open = page.getByRole('button', { name: 'Connect CalDAV calendar' })

  await t.test('the dialog: labelled fields, focus, Escape; a wrong password is refused and what was typed stays', async (t) => {
    await signUpThroughUi(page, stack.webUrl, { name: 'Ada', email: uniqueEmail('caldav-web'), password: 'correct horse 1' }, `/day?date=${day.toISODate() ?? ''}`)
    // Loads only: the Day and Week links change the address without one.
    page.on('load', () => { navigations++ })
    const dialog = page.getByRole('dialog', { name: 'Connect a CalDAV calendar' })

    await open.click()
    await dialog.waitFor()
    t.equal(await focused(page), 'caldav-url', 'focus starts on the server address')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
    t.equal(await focused(page), 'Connect CalDAV calendar', 'Escape closes and focus goes back to the button')

    await open.click()
    const url = dialog.getByLabel('Server address')
    const user = dialog.getByLabel('User name')
    const password = dialog.getByLabel('App password')
    t.equal(await url.getAttribute('placeholder'), 'https://caldav.icloud.com')
    t.equal(await password.getAttribute('type'), 'password')
    t.equal(await password.getAttribute('autocomplete'), 'off', 'no saved password of this site offered, no new one generated')
    await url.fill(radicale.url)
    await user.fill(USER)
    await password.fill('my-apple-id-password')
    await dialog.getByRole('button', { name: 'Connect' }).click()
    const alert = dialog.getByRole('alert')
    await alert.waitFor()
    t.match(await alert.textContent(), /did not accept this address, user name and password/)
    t.equal(await url.inputValue(), radicale.url, 'the server address stays')
    t.equal(await user.inputValue(), USER, 'the user name stays')
    t.equal(await password.getAttribute('aria-invalid'), 'true')
    t.equal(await focused(page), 'caldav-password', 'focus on the password to type it again')
    await page.addScriptTag({ content: axeSource })
    const violations = await page.evaluate(`axe.run(document.querySelector('dialog[open]'), { resultTypes: ['violations'] })
      .then((result) => result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id + ': ' + v.help))`) as string[]
    t.same(violations, [], 'axe-core finds nothing serious in the dialog with its refusal')
  })

  await t.test('the right password: the dialog closes, syncing then up to date, the events appear without a reload', async (t) => {
    const dialog = page.getByRole('dialog', { name: 'Connect a CalDAV calendar' })
    const seen = await recordStatus(page)
    await dialog.getByLabel('App password').fill(APP_PASSWORD)
    await dialog.getByRole('button', { name: 'Connect' }).click()
    await dialog.waitFor({ state: 'hidden' })
    t.equal(await focused(page), 'Connect CalDAV calendar', 'focus back on the button that opened it')
    await page.getByRole('status').filter({ hasText: 'CalDAV calendar connected (1 calendar)' }).waitFor()
    await eventBlock(page, 'Dentist').waitFor({ timeout: 20_000 })
    t.match(await eventBlock(page, 'Dentist').textContent(), /10:00 – 11:00/, 'in the browser\'s zone')
    await eventBlock(page, 'Team lunch').waitFor()
    await status.filter({ hasText: 'CalDAV calendar up to date' }).waitFor({ timeout: 20_000 })
    const texts = await seen()
    t.ok(texts.some((text) => /^(Syncing|Importing) CalDAV calendar/.test(text)), `syncing was shown first: ${texts.join(' | ')}`)
    t.notOk(texts.some((text) => text.includes('Google')), 'never named as another provider\'s calendar')

    await page.getByRole('link', { name: 'Week' }).click()
    await eventBlock(page, 'Dentist').waitFor()
    t.equal(await eventBlock(page, 'Team lunch').count(), 1, 'the week shows them too')
    await page.getByRole('link', { name: 'Day', exact: true }).click()
    t.equal(navigations, 0, 'no reload')
  })

  await t.test('the server stops accepting the password: the banner asks for it again, prefilled', async (t) => {
    await radicale.setPassword(USER, 'qrst-uvwx-yzab-cdef')
    await page.getByRole('button', { name: 'Refresh events' }).click()
    const banner = page.getByRole('region', { name: 'Calendar connection' })
    await banner.waitFor({ timeout: 20_000 })
    t.match(await banner.textContent(), /no longer accepts the password/)
    t.equal(await page.getByRole('dialog', { name: 'Sign in' }).count(), 0, 'an app password is no sign-in: the session goes on')
    await banner.getByRole('button', { name: 'Enter password again' }).click()
    const dialog = page.getByRole('dialog', { name: 'Enter the CalDAV password again' })
    await dialog.waitFor()
    t.equal(await dialog.getByLabel('Server address').inputValue(), radicale.url, 'the server address from the last connect')
    t.equal(await dialog.getByLabel('User name').inputValue(), USER)
    t.equal(await focused(page), 'caldav-password', 'straight to the password')
    const repaired = page.waitForRequest((request) => request.method() === 'POST' && request.url() === `${stack.backendOrigin}/api/connections/caldav`)
    await dialog.getByLabel('App password').fill('qrst-uvwx-yzab-cdef')
    await dialog.getByRole('button', { name: 'Save password' }).click()
    t.match((await repaired).postDataJSON(), { serverUrl: radicale.url, username: USER, connectionId: /^[0-9a-f]{24}$/ }, 'the connection is named')
    await dialog.waitFor({ state: 'hidden' })
    await banner.waitFor({ state: 'detached', timeout: 20_000 })
    await status.filter({ hasText: 'CalDAV calendar up to date' }).waitFor({ timeout: 20_000 })
    t.equal(navigations, 0, 'still no reload')
  })

  // Chromium logs every 4xx resource: the refused connect (422) is an answer the page expects, and
  // before the sign-up the session library tries a refresh, answered 401: there is no session yet.
  t.same(errors.filter((error) => !/status of (401|422)/.test(error)), [], 'no errors in the page')
})
