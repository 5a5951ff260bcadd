// In Chromium against the whole system with the Google stand-in: a person connects their Google
// calendar through the stand-in's consent page and sees its events; a change made at Google (the
// stand-in's control surface, "another device") appears without a reload; a revocation at Google
// sends the person back to sign in, then the reconnect banner takes them through consent again and
// the calendar is writable afterwards. Signed out, "Continue with Google" signs a new person in with
// their calendar.
import { test } from 'tap'
import { launchBrowser, newContext, collectErrors } from './browser.js'
import { consent, createEventThroughUi, eventBlock, openEvent, signInThroughUi, signUpThroughUi } from './ui.js'
import { startFullStack } from '../e2e/stack.js'
import { uniqueEmail } from '../helper.js'
import { waitUntil } from '../processes.js'
import { startAnalyticsStandIn } from '../../dev/analytics/index.js'

// A Monday before the summer time change, so the zone's offset is +01:00 all along.
const DAY = '2026-03-02'

test('Google Calendar in the browser: connect, live change, revoke and reconnect', async (t) => {
  const analytics = await startAnalyticsStandIn()
  t.teardown(analytics.close)
  const stack = await startFullStack(t, { web: true, analytics: { key: 'phc_web_project', host: analytics.url }, placesApiKey: 'places-test-key' })
  const google = stack.google.control
  const email = uniqueEmail('ada')
  const password = 'correct horse 1'
  google.createAccount({ email, name: 'Ada Example', timeZone: 'Europe/Berlin' })
  const dentist = google.insertEvent(email, { summary: 'Dentist', start: { dateTime: `${DAY}T15:00:00+01:00`, timeZone: 'Europe/Berlin' }, end: { dateTime: `${DAY}T16:00:00+01:00`, timeZone: 'Europe/Berlin' } })
  google.insertEvent(email, {
    summary: 'Weekly review',
    start: { dateTime: '2026-02-16T09:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-02-16T10:00:00+01:00', timeZone: 'Europe/Berlin' },
    recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10']
  })

  const browser = await launchBrowser(t)
  const page = await (await newContext(browser)).newPage()
  // The stand-in's consent page has no favicon; that is not the client's error.
  const errors = collectErrors(page, { foreign: (url) => url.startsWith(stack.google.url) })
  const status = page.locator('p.status')

  await t.test('connect: the browser\'s pending events go to the account first; only then the consent page, back through /auth/extprovider/callback, the imported events', async (t) => {
    // An event made signed out whose carry at sign-up fails stays pending in the browser.
    await page.goto(`${stack.webUrl}/day?date=${DAY}`)
    await createEventThroughUi(page, { title: 'Passport renewal', day: DAY, start: '08:00', end: '08:30' })
    const eventWrites = `${stack.backendOrigin}/api/event`
    await page.route(eventWrites, async (route) => { await route.fulfill({ status: 503, contentType: 'application/json', body: '{"message":"down for a moment"}' }) })
    await signUpThroughUi(page, stack.webUrl, { name: 'Ada', email, password }, `/day?date=${DAY}`)
    await page.getByRole('status').filter({ hasText: 'could not be added to your account yet' }).first().waitFor()

    const leftForGoogle: string[] = []
    page.on('request', (request) => { if (request.url().startsWith(stack.google.url)) leftForGoogle.push(request.url()) })
    // The sign-up's own carry said so already: this click's carry has failed once a second notice
    // (each with its Dismiss) says it.
    const carryFailures = page.getByRole('button', { name: /^Dismiss: .*down for a moment/ })
    const failuresBefore = await carryFailures.count()
    await page.getByRole('button', { name: 'Connect Google Calendar' }).click()
    await waitUntil(async () => await carryFailures.count() > failuresBefore, 'the connect\'s carry refused', 20_000)
    t.same(leftForGoogle, [], 'a carry that fails keeps the person here: no redirect to Google')
    t.match(page.url(), `${stack.webUrl}/day`)

    await page.unroute(eventWrites)
    const order: string[] = []
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url() === eventWrites) order.push('carry')
      if (request.url().startsWith(`${stack.google.url}/o/oauth2`)) order.push('google')
    })
    const callback = page.waitForRequest((request) => request.url().startsWith(`${stack.webUrl}/auth/extprovider/callback?`))
    const connect = page.waitForRequest((request) => request.method() === 'POST' && request.url() === `${stack.backendOrigin}/api/auth/extprovider/connect`)
    // Both are awaited below: should the consent page not come, that failure is this test's, and
    // their own timeouts must not end the process the other files of its batch share.
    callback.catch(() => {})
    connect.catch(() => {})
    const seen: string[] = []
    page.on('requestfinished', (request) => {
      request.response().then((response) => { seen.push(`${request.method()} ${request.url()} ${response?.status() ?? '-'}`) }, () => {})
    })
    page.on('requestfailed', (request) => { seen.push(`${request.method()} ${request.url()} failed: ${request.failure()?.errorText ?? ''}`) })
    await page.getByRole('button', { name: 'Connect Google Calendar' }).click()
    await consent(page, stack.google.url, email).catch(async (error: unknown) => {
      // What the page did instead of leaving for Google, for whoever reads the failure.
      t.comment(`requests after the click: ${seen.join(' | ')}; shown: ${(await page.getByRole('status').allTextContents()).join(' | ')}`)
      throw error
    })
    t.same(order.slice(0, 2), ['carry', 'google'], 'the pending event was posted before the page left for Google')
    t.match(new URL((await callback).url()).searchParams.get('code'), /.+/, 'the stand-in sent the browser back with a code')
    const connected = await (await connect).response()
    t.equal(connected?.status(), 200, `the client posted the code to the backend: ${await connected?.text() ?? ''} ${(await connect).postData() ?? ''}`)
    await page.waitForURL(`${stack.webUrl}/day?date=${DAY}`)
    await eventBlock(page, 'Dentist').waitFor({ timeout: 20_000 })
    t.match(await eventBlock(page, 'Dentist').textContent(), /15:00 – 16:00/, 'in the browser\'s zone')
    t.equal(await eventBlock(page, 'Weekly review').count(), 1, 'a series occurrence on this day')
    t.equal(await eventBlock(page, 'Passport renewal').count(), 1, 'the carried event is in the account beside the imported ones')
    await status.filter({ hasText: 'Google Calendar up to date' }).waitFor({ timeout: 20_000 })
    t.equal(await page.getByRole('button', { name: 'Connect Google Calendar' }).count(), 0, 'no connect button once connected')

    // The round trip's two funnel events share the correlation id the client sent with the code.
    const correlationId = ((await connect).postDataJSON() as { correlationId?: string }).correlationId
    t.match(correlationId, /^[A-Za-z0-9_-]{4,64}$/, 'the client sent a correlation id with the code')
    await stack.backend.app.analytics.flush()
    const funnel = async () => analytics.events().filter((event) => event.properties['correlationId'] === correlationId)
    await waitUntil(async () => (await funnel()).length === 3, 'oauth_callback, oauth_return and calendar_connected')
    const byName = Object.fromEntries((await funnel()).map((event) => [event.event, event]))
    t.match(byName['oauth_callback'], { apiKey: 'phc_web_project', properties: { provider: 'google', outcome: 'connected', intent: 'connect' } }, 'the backend\'s event')
    t.match(byName['oauth_return'], { apiKey: 'phc_web_project', properties: { provider: 'google', status: 'connected', intent: 'connect' } }, 'the browser\'s event')
    t.match(byName['calendar_connected'], { properties: { provider: 'google', intent: 'connect' } })

    await page.getByRole('link', { name: 'Week' }).click()
    await eventBlock(page, 'Weekly review').waitFor()
    t.match(page.url(), /\/week\?date=2026-03-02$/)
    t.equal(await eventBlock(page, 'Weekly review').count(), 1, 'the week shows the series once, on Monday')
    t.equal(await eventBlock(page, 'Dentist').count(), 1)
    await page.getByRole('link', { name: 'Day', exact: true }).click()
  })

  await t.test('a change at Google appears without a reload', async (t) => {
    let navigations = 0
    page.on('framenavigated', (frame) => { if (frame === page.mainFrame()) navigations++ })
    google.patchEvent(email, String(dentist['id']), { summary: 'Dentist (moved)', start: { dateTime: `${DAY}T17:00:00+01:00`, timeZone: 'Europe/Berlin' }, end: { dateTime: `${DAY}T18:00:00+01:00`, timeZone: 'Europe/Berlin' } })
    await eventBlock(page, 'Dentist (moved)').waitFor({ timeout: 20_000 })
    t.match(await eventBlock(page, 'Dentist (moved)').textContent(), /17:00 – 18:00/)
    t.equal(await eventBlock(page, 'Dentist').count(), 1, 'the old version is gone')
    t.equal(navigations, 0, 'no reload')
  })

  await t.test('revoked at Google: back to sign-in, the reconnect banner, consent again, writable again', async (t) => {
    google.revoke(email)
    // The next pull meets invalid_grant; the person asks for one.
    await page.getByRole('button', { name: 'Refresh events' }).click()
    const signIn = page.getByRole('dialog', { name: 'Sign in' })
    await signIn.waitFor({ timeout: 20_000 })
    t.pass('the ended session sends the person to sign in')
    await signInThroughUi(page, { email, password })
    await signIn.waitFor({ state: 'hidden' })

    const banner = page.getByRole('region', { name: 'Calendar connection' })
    await banner.waitFor({ timeout: 20_000 })
    t.match(await banner.textContent(), /access was revoked/)
    await status.filter({ hasText: 'Google Calendar access was revoked' }).waitFor()

    const begin = page.waitForRequest((request) => request.method() === 'POST' && request.url() === `${stack.backendOrigin}/api/auth/connections/begin`)
    await banner.getByRole('button', { name: 'Reconnect Google Calendar' }).click()
    const body = (await begin).postDataJSON() as Record<string, unknown>
    t.match(body, { provider: 'google', intent: 'reconnect', connectionId: /.+/ }, 'begin with intent reconnect and the connection')
    await consent(page, stack.google.url, email)
    await page.waitForURL((url) => url.origin === stack.webUrl && url.pathname === '/day')
    await page.getByRole('status').filter({ hasText: 'Google Calendar is reconnected.' }).waitFor()
    t.notMatch(page.url(), /status=|cid=/, 'the redirect\'s parameters left the URL')
    await banner.waitFor({ state: 'detached', timeout: 20_000 })
    await status.filter({ hasText: 'Google Calendar up to date' }).waitFor({ timeout: 20_000 })
    t.pass('the banner is gone and the connection is healthy')

    await page.goto(`${stack.webUrl}/day?date=${DAY}`)
    const dialog = await openEvent(page, 'Dentist (moved)')
    // maps.placesApiKey is in this bundle: the location input asks Google Places for suggestions.
    const placesKeys: Array<string | undefined> = []
    await page.route('https://places.googleapis.com/v1/places:autocomplete', async (route) => {
      placesKeys.push(route.request().headers()['x-goog-api-key'])
      await route.fulfill({ contentType: 'application/json', body: JSON.stringify({ suggestions: [{ placePrediction: { text: { text: 'Dental Clinic, Main Street 1, Berlin' } } }] }) })
    })
    await dialog.getByLabel('Location').fill('Dental')
    await dialog.locator('#event-location-suggestions option[value="Dental Clinic, Main Street 1, Berlin"]').waitFor({ state: 'attached' })
    t.same(placesKeys.slice(0, 1), ['places-test-key'], 'the suggestions came from the places lookup with the bundle\'s key')
    await dialog.getByLabel('Location').fill('')
    await dialog.getByLabel('Title').fill('Dentist (confirmed)')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await dialog.waitFor({ state: 'hidden' })
    await eventBlock(page, 'Dentist (confirmed)').waitFor()
    await waitUntil(() => google.storedEvents(email).some((event) => event['summary'] === 'Dentist (confirmed)'), 'the edit at Google', 20_000)
    t.pass('an edit of an imported event reaches Google again')
  })

  await t.test('Continue with Google from the sign-in dialog: consent, back through the callback, signed in with the calendar', async (t) => {
    const grace = uniqueEmail('grace')
    google.createAccount({ email: grace, name: 'Grace Example', timeZone: 'Europe/Berlin' })
    google.insertEvent(grace, { summary: 'Flight to Lisbon', start: { dateTime: `${DAY}T07:00:00+01:00`, timeZone: 'Europe/Berlin' }, end: { dateTime: `${DAY}T10:00:00+01:00`, timeZone: 'Europe/Berlin' } })
    const visitor = await (await newContext(browser)).newPage()
    const visitorErrors = collectErrors(visitor, { foreign: (url) => url.startsWith(stack.google.url) })
    await visitor.goto(`${stack.webUrl}/day?date=${DAY}&auth=login`)
    const signInUp = visitor.waitForRequest((request) => request.method() === 'POST' && request.url() === `${stack.backendOrigin}/api/auth/signinup`)
    await visitor.getByRole('dialog', { name: 'Sign in' }).getByRole('button', { name: 'Continue with Google' }).click()
    await visitor.waitForURL((url) => url.href.startsWith(`${stack.google.url}/o/oauth2/v2/auth`))
    t.match(new URL(visitor.url()).searchParams.get('scope'), /https:\/\/www\.googleapis\.com\/auth\/calendar/, 'the sign-in asks for the calendar, as the backend requires')
    await consent(visitor, stack.google.url, grace)
    const answer = await (await signInUp).response()
    t.match(await answer?.json(), { status: 'OK', summary: { provider: 'google', mode: 'SIGNUP', calendar: 'import' } })
    await visitor.waitForURL(`${stack.webUrl}/day?date=${DAY}`)
    await visitor.getByRole('banner').getByText(grace, { exact: true }).waitFor()
    t.pass('signed in as the Google account, on the page the sign-in started from')
    await eventBlock(visitor, 'Flight to Lisbon').waitFor({ timeout: 20_000 })
    t.pass('the Google calendar came along')
    t.same(visitorErrors.filter((error) => !/status of 401/.test(error)), [], 'no errors in the page')
  })

  await t.test('a page without WebCrypto (plain http from another machine): Continue with Google says why it cannot start, and stays', async (t) => {
    const context = await newContext(browser)
    // What a browser gives a page that is not a secure context: no crypto.subtle. (Text, not a
    // function: the test's compiled functions call helpers the page does not have.)
    await context.addInitScript({
      content: "Object.defineProperty(Crypto.prototype, 'subtle', { get: () => undefined }); Object.defineProperty(window, 'isSecureContext', { get: () => false })"
    })
    const visitor = await context.newPage()
    const visitorErrors = collectErrors(visitor)
    await visitor.goto(`${stack.webUrl}/day?date=${DAY}&auth=login`)
    const dialog = visitor.getByRole('dialog', { name: 'Sign in' })
    await dialog.getByRole('button', { name: 'Continue with Google' }).click()
    await dialog.getByRole('alert').filter({ hasText: 'Signing in with Google needs this page to be opened over https' }).waitFor()
    t.ok(visitor.url().startsWith(stack.webUrl), 'still on the calendar, not half-way to Google')
    t.same(visitorErrors.filter((error) => !/status of 401/.test(error)), [], 'and no unhandled error in the page')
    await context.close()
  })

  await t.test('a sign-up the form cannot finish sends signup_failed, naming no address', async (t) => {
    const visitor = await (await newContext(browser)).newPage()
    await visitor.goto(`${stack.webUrl}/day?auth=signup`)
    const dialog = visitor.getByRole('dialog', { name: 'Create your account' })
    await dialog.getByLabel('Name').fill('Ada Again')
    await dialog.getByLabel('Email').fill(email)
    await dialog.getByLabel('Password').fill('another horse 2')
    await dialog.getByRole('button', { name: 'Create account' }).click()
    await waitUntil(() => analytics.events().some((event) => event.event === 'signup_failed'), 'signup_failed', 10_000)
    const failed = analytics.events().find((event) => event.event === 'signup_failed')
    t.match(failed, { apiKey: 'phc_web_project', properties: { method: 'emailpassword', reason: 'fieldError' } })
    t.notOk(JSON.stringify(failed).includes(email), 'the address stays out of analytics')
    t.equal(await dialog.isVisible(), true, 'the person stays in the dialog')
  })

  await t.test('a Google account of another email: the refusal says what to do, and stays until the person dismisses it', async (t) => {
    const googleEmail = uniqueEmail('bea-at-google')
    google.createAccount({ email: googleEmail, name: 'Bea at Google', timeZone: 'Europe/Berlin' })
    const other = await (await newContext(browser)).newPage()
    await signUpThroughUi(other, stack.webUrl, { name: 'Bea', email: uniqueEmail('bea'), password: 'correct horse 3' }, `/day?date=${DAY}`)
    await other.getByRole('button', { name: 'Connect Google Calendar' }).click()
    await consent(other, stack.google.url, googleEmail)
    await other.waitForURL(`${stack.webUrl}/day?date=${DAY}`)
    const refusal = other.locator('.notice-error').filter({ hasText: 'That Google account has a different email' })
    await refusal.waitFor()
    // Longer than an information notice is shown.
    await other.waitForTimeout(6500)
    t.equal(await refusal.count(), 1, 'still there')
    t.equal(await other.getByRole('complementary', { name: 'Calendars' }).getByLabel(googleEmail).count(), 0, 'nothing of the other account was connected')
    await other.getByRole('button', { name: /^Dismiss: That Google account/ }).click()
    await refusal.waitFor({ state: 'detached' })
    t.pass('gone once dismissed')
    await other.context().close()
  })

  // The 503s are the ones this test answered for the event writes it held back.
  t.same(errors.filter((error) => !/status of (401|503)/.test(error)), [], 'no errors in the page')
})
