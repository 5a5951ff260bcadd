// Connect and import against the Microsoft stand-in: the OAuth round trip with PKCE, the calendars,
// the window pass then the whole range through delta pages, series masters with their rule,
// exceptions linked to them, occurrences deleted at Microsoft as EXDATEs of their series, all-day
// events, Windows zone names, and the mailbox's zone as the calendars' zone.
import { createHash, randomBytes } from 'node:crypto'
import { test, type Test } from 'tap'
import { compileSeries, expandSeries } from '../../../lib/events/recurrence.js'
import type { EventContent, ProviderEvent } from '../../../schemas/sync/index.js'
import { importWindow } from '../../../sync/lib/provider-sync.js'
import { MicrosoftCalendarAdapter } from '../../../sync/providers/microsoft/adapter.js'
import { ALICE, begin, CLIENT_ID, CLIENT_SECRET, connectAndSync, consent, defaultCalendar, followCallback, occurrenceOn, SAMPLE_EVENTS, startStack, WEB_CALLBACK } from './harness.js'
import { newUserId } from '../helper.js'

test('connect: the authorization URL asks for offline access with PKCE; the code exchange stores the credential and imports', async (t) => {
  const stack = await startStack(t)
  const userId = newUserId()
  const started = await begin(stack, userId)
  const url = new URL(started.authorizationUrl)
  t.equal(url.origin + url.pathname, `${stack.microsoft.url}/common/oauth2/v2.0/authorize`)
  t.match(url.searchParams.get('scope'), /offline_access/)
  t.match(url.searchParams.get('scope'), /Calendars\.ReadWrite/)
  t.equal(url.searchParams.get('code_challenge_method'), 'S256')
  t.equal(url.searchParams.get('redirect_uri'), `${stack.syncUrl}/oauth/microsoft/callback`)

  const done = await followCallback(await consent(started.authorizationUrl, ALICE))
  t.equal(done.location.origin + done.location.pathname, WEB_CALLBACK)
  t.equal(done.location.searchParams.get('status'), 'connected')
  t.equal(done.location.searchParams.get('provider'), 'microsoft')
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  t.equal(connection?.provider, 'microsoft')
  const credential = await stack.sync.syncCredentials.load(connection?._id.toHexString() ?? '')
  t.ok(credential?.['refreshToken'], 'a refresh token is stored')
  t.equal(credential?.['email'], ALICE)

  // The access token of the code exchange serves the import: no refresh before the weeks around
  // today (test/sync/microsoft/token-refresh.test.ts: a refresh stores the refresh token it rotates).
  await stack.drain()
  t.equal((await stack.sync.syncConnections.get(connection?._id.toHexString() ?? ''))?.state, 'healthy')
  t.equal(stack.microsoft.control.counts().operations['oauth2.token']?.total, 1, 'one token request: the code exchange')
  t.equal((await stack.sync.syncCredentials.load(connection?._id.toHexString() ?? ''))?.['refreshToken'], credential?.['refreshToken'], 'so the refresh token stays as issued')
  t.ok(stack.backend.batches.some((batch) => batch.complete === true), 'and the import went through')

  const refused = await followCallback(await consent((await begin(stack, newUserId())).authorizationUrl, ALICE, false))
  t.equal(refused.location.searchParams.get('status'), 'denied')
})

test('import: window pass then the whole range, in delta pages; masters with RRULE, exceptions, all-day, Windows zones', async (t) => {
  // Each page handed over on its own, as pages of the batch size are.
  const stack = await startStack(t, { pageSize: 2, importBatchEvents: 1 })
  const calendarId = defaultCalendar(stack)
  const control = stack.microsoft.control
  const timed = control.insertEvent(calendarId, SAMPLE_EVENTS.timed)
  const newYork = control.insertEvent(calendarId, SAMPLE_EVENTS.newYork)
  const allDay = control.insertEvent(calendarId, SAMPLE_EVENTS.allDay)
  const old = control.insertEvent(calendarId, SAMPLE_EVENTS.old)
  const series = control.insertEvent(calendarId, SAMPLE_EVENTS.series)
  const seriesId = String(series.id)
  const { connectionId } = await connectAndSync(stack)

  const events = stack.backend.events(calendarId)
  t.match(events.get(String(timed.id)), {
    status: 'confirmed',
    content: { title: 'Dentist', startDate: '2026-11-23T15:00:00+01:00', endDate: '2026-11-23T16:00:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin' }
  })
  t.match(events.get(String(newYork.id)), { content: { startDate: '2026-11-24T10:00:00-05:00', timeZone: 'America/New_York' } })
  t.match(events.get(String(allDay.id)), { content: { startDate: '2026-12-24', endDate: '2026-12-27', isAllDay: true } })
  t.ok(events.get(String(old.id)), 'the whole range reaches an event far from today')
  t.match(events.get(seriesId), {
    content: { title: 'Weekly review', startDate: '2026-11-02T09:00:00+01:00', recurrence: ['RRULE:FREQ=WEEKLY;BYDAY=MO;WKST=SU;COUNT=10'] }
  })
  const occurrences = [...events.values()].filter((event) => event.recurringEventId !== undefined)
  t.same(occurrences, [], 'plain occurrences are the master\'s rule, not events of their own')

  const batches = stack.backend.batches.filter((batch) => batch.calendarId === calendarId)
  t.ok(batches.length > 2, 'several pages')
  t.ok(batches.every((batch) => batch.generation !== undefined), 'every import page carries its generation')
  t.equal(batches.filter((batch) => batch.complete === true).length, 1, 'one last page')
  const record = await stack.sync.syncCalendars.get(connectionId, calendarId)
  t.match(record?.cursor, /deltatoken/, 'the deltaLink is the cursor')
  t.equal(record?.primary, true, 'the default calendar is primary')
})

test('import: an exception of a series is linked to its master with its original start', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const control = stack.microsoft.control
  const series = control.insertEvent(calendarId, SAMPLE_EVENTS.series)
  const seriesId = String(series.id)
  const { connectionId } = await connectAndSync(stack)
  t.ok(await stack.sync.syncCalendars.get(connectionId, calendarId))
  // The occurrence of 23 November moves two hours: an exception.
  const occurrence = await occurrenceOn(stack, connectionId, seriesId, '2026-11-23')
  control.patchEvent(calendarId, occurrence, { start: { dateTime: '2026-11-23T11:00:00', timeZone: 'W. Europe Standard Time' }, end: { dateTime: '2026-11-23T12:00:00', timeZone: 'W. Europe Standard Time' } })
  await stack.sync.syncEngine.restart((await stack.sync.syncConnections.get(connectionId))?.userId ?? '')
  await stack.drain()
  t.match(stack.backend.events(calendarId).get(occurrence), {
    recurringEventId: seriesId,
    originalStartDate: '2026-11-23T09:00:00+01:00',
    content: { startDate: '2026-11-23T11:00:00+01:00' }
  })
})

/** The original starts (UTC) or dates the backend shows of a series as stored there. */
function shownOccurrences (content: EventContent | undefined, from: string, to: string): string[] {
  if (content?.recurrence === undefined) throw new Error('not a series')
  const series = compileSeries({ startDate: content.startDate, endDate: content.endDate, isAllDay: content.isAllDay, timeZone: content.timeZone, rule: content.recurrence })
  return expandSeries(series, new Date(from), new Date(to), 100).map((occurrence) => content.isAllDay ? occurrence.startDate : occurrence.start.toISOString())
}

test('import: an occurrence deleted at Microsoft is excluded from its series (EXDATE), timed and all-day', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const control = stack.microsoft.control
  const seriesId = String(control.insertEvent(calendarId, SAMPLE_EVENTS.series).id)
  const daily = String(control.insertEvent(calendarId, {
    subject: 'Advent',
    isAllDay: true,
    start: { dateTime: '2026-12-01T00:00:00', timeZone: 'W. Europe Standard Time' },
    end: { dateTime: '2026-12-02T00:00:00', timeZone: 'W. Europe Standard Time' },
    recurrence: { pattern: { type: 'daily', interval: 1 }, range: { type: 'numbered', startDate: '2026-12-01', numberOfOccurrences: 24 } }
  }).id)
  const { connectionId } = await connectAndSync(stack)
  control.deleteEvent(calendarId, await occurrenceOn(stack, connectionId, seriesId, '2026-11-16'))
  control.deleteEvent(calendarId, await occurrenceOn(stack, connectionId, daily, '2026-12-06'))
  await stack.microsoft.notificationsSettled()
  // The queued pull finds its delta token gone and imports the calendar again: no @removed is read.
  control.expireDeltaTokens({ calendarId })
  const before = stack.backend.batches.length
  await stack.drain()

  const imported = stack.backend.batches.slice(before).filter((batch) => batch.generation !== undefined).flatMap((batch) => batch.events)
  t.match(imported.find((event) => event.providerEventId === seriesId), { content: { recurrence: ['RRULE:FREQ=WEEKLY;BYDAY=MO;WKST=SU;COUNT=10', 'EXDATE:20261116T080000Z'] } },
    'the import tells of the deleted occurrence')
  const series = stack.backend.events(calendarId).get(seriesId)
  t.same(shownOccurrences(series?.content, '2026-11-09T00:00:00Z', '2026-11-30T00:00:00Z'), ['2026-11-09T08:00:00.000Z', '2026-11-23T08:00:00.000Z'],
    'the backend shows the series without it')
  const advent = stack.backend.events(calendarId).get(daily)
  t.same(advent?.content?.recurrence, ['RRULE:FREQ=DAILY;COUNT=24', 'EXDATE;VALUE=DATE:20261206'])
  t.same(shownOccurrences(advent?.content, '2026-12-03T23:00:00Z', '2026-12-07T23:00:00Z'), ['2026-12-04', '2026-12-05', '2026-12-07'])
})

test('calendars take the zone of the mailbox (mailboxSettings), a Windows or an IANA name', async (t) => {
  const stack = await startStack(t, {
    accounts: [
      { email: ALICE, timeZone: 'W. Europe Standard Time', calendars: [{ name: 'Work' }] },
      { email: 'bo@example.com', timeZone: 'America/New_York' }
    ]
  })
  const alice = await connectAndSync(stack)
  const calendars = await stack.sync.syncCalendars.listByConnection(alice.connectionId)
  t.equal(calendars.length, 2)
  t.same(calendars.map((calendar) => calendar.timeZone), ['Europe/Berlin', 'Europe/Berlin'])
  const bo = await connectAndSync(stack, 'bo@example.com')
  t.same((await stack.sync.syncCalendars.listByConnection(bo.connectionId)).map((calendar) => calendar.timeZone), ['America/New_York'])
})

test('a grant from before the mailbox scope was asked for: refreshes still work and its calendars stay in UTC', async (t) => {
  const stack = await startStack(t)
  const adapter = new MicrosoftCalendarAdapter({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: stack.microsoft.url })
  const verifier = randomBytes(32).toString('base64url')
  const redirectUri = `${stack.syncUrl}/oauth/microsoft/callback`
  const url = new URL(adapter.authorizationUrl({ state: 'old', redirectUri, codeChallenge: createHash('sha256').update(verifier).digest('base64url'), intent: 'connect' }))
  url.searchParams.set('scope', 'openid email profile offline_access Calendars.ReadWrite')
  const code = new URL(await consent(url.toString(), ALICE)).searchParams.get('code') ?? ''
  const form = new URLSearchParams({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier })
  const tokens = await (await fetch(`${stack.microsoft.url}/common/oauth2/v2.0/token`, { method: 'POST', body: form })).json() as { refresh_token: string, scope: string }
  t.notMatch(tokens.scope, /MailboxSettings/)

  const calendars = await adapter.listCalendars({ connectionId: 'old-grant', userId: newUserId(), credential: { refreshToken: tokens.refresh_token, scope: tokens.scope } })
  t.same(calendars.map((calendar) => calendar.timeZone), ['UTC'])
  t.equal(stack.microsoft.control.counts().operations['mailboxSettings.get']?.statuses['403'], 1, 'Graph refused the mailbox settings')
})

/**
 * The two passes of an import as the Sync service runs them (the weeks around today, then the whole
 * range), through an adapter of its own, with `between` run after the window pass. Answers what each
 * pass handed over, and the Graph reads of series (masters and instances) the full pass made.
 */
async function twoPasses (
  t: Test,
  stack: Awaited<ReturnType<typeof startStack>>,
  between: (graphGet: <T>(path: string) => Promise<T>) => Promise<void> = async () => {},
  options: { windowInterruptedAfterFirstPage?: boolean } = {}
): Promise<{ window: ProviderEvent[], full: ProviderEvent[], fullPassReads: { masters: number, instancePages: number } }> {
  // A grant of the adapter's own (the Sync service is not connected, so it reads nothing meanwhile).
  const adapter = new MicrosoftCalendarAdapter({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: stack.microsoft.url, pageSize: 3, now: () => stack.clock.now() })
  const codeVerifier = randomBytes(32).toString('base64url')
  const redirectUri = `${stack.syncUrl}/oauth/microsoft/callback`
  const authorization = adapter.authorizationUrl({ state: 'passes', redirectUri, codeChallenge: createHash('sha256').update(codeVerifier).digest('base64url'), intent: 'connect' })
  const code = new URL(await consent(authorization, ALICE)).searchParams.get('code') ?? ''
  const { credential } = await adapter.exchangeCode({ code, codeVerifier, redirectUri })
  const connectionId = 'two-passes'
  const context = { connectionId, userId: newUserId(), credential }
  const [calendar] = await adapter.listCalendars(context)
  if (calendar === undefined) throw new Error('no calendar')
  const window: ProviderEvent[] = []
  const full: ProviderEvent[] = []
  const windowRange = importWindow(stack.clock.now())
  if (options.windowInterruptedAfterFirstPage === true) {
    // The job ends after the first page; the next one goes on from that page's checkpoint.
    let checkpoint: string | null = null
    await t.rejects(adapter.importCalendar(context, calendar, { window: windowRange }, async (page) => {
      window.push(...page.events)
      checkpoint = page.nextPageToken
      throw new Error('the job ends here')
    }))
    await adapter.importCalendar(context, calendar, { window: windowRange, pageToken: checkpoint }, async (page) => { window.push(...page.events) })
  } else {
    await adapter.importCalendar(context, calendar, { window: windowRange }, async (page) => { window.push(...page.events) })
  }
  await between(async <T>(path: string): Promise<T> => {
    const form = new URLSearchParams({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, grant_type: 'refresh_token', refresh_token: credential['refreshToken'] ?? '' })
    const token = await (await fetch(`${stack.microsoft.url}/common/oauth2/v2.0/token`, { method: 'POST', body: form })).json() as { access_token: string }
    return await (await fetch(`${stack.microsoft.graphUrl}${path}`, { headers: { authorization: `Bearer ${token.access_token}` } })).json() as T
  })
  const reads = () => {
    const { operations } = stack.microsoft.control.counts()
    return { masters: operations['event.get']?.total ?? 0, instancePages: operations['event.instances']?.total ?? 0 }
  }
  const before = reads()
  await adapter.importCalendar(context, calendar, {}, async (page) => { full.push(...page.events) })
  const after = reads()
  return { window, full, fullPassReads: { masters: after.masters - before.masters, instancePages: after.instancePages - before.instancePages } }
}

const WEEKLY_FROM_NOVEMBER = {
  ...SAMPLE_EVENTS.series,
  subject: 'Standup',
  start: { dateTime: '2026-11-03T09:00:00', timeZone: 'W. Europe Standard Time' },
  end: { dateTime: '2026-11-03T09:15:00', timeZone: 'W. Europe Standard Time' },
  recurrence: { ...SAMPLE_EVENTS.series.recurrence, pattern: { ...SAMPLE_EVENTS.series.recurrence.pattern, daysOfWeek: ['tuesday'] }, range: { type: 'numbered', startDate: '2026-11-03', numberOfOccurrences: 10 } }
}

test('import: the full pass takes the series the window pass read when Graph lists every instance as it was', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const review = String(stack.microsoft.control.insertEvent(calendarId, SAMPLE_EVENTS.series).id)
  const standup = String(stack.microsoft.control.insertEvent(calendarId, WEEKLY_FROM_NOVEMBER).id)
  const { window, full, fullPassReads } = await twoPasses(t, stack)
  t.same(fullPassReads, { masters: 0, instancePages: 0 }, 'no master or instances read again')
  for (const id of [review, standup]) {
    const first = window.find((event) => event.providerEventId === id)
    t.ok(first, 'the window pass hands the series over')
    t.same(full.find((event) => event.providerEventId === id), first, 'the full pass hands over the same series')
  }
})

test('import: a series changed between the window pass and the full pass is read again, never handed over as it was', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const control = stack.microsoft.control
  const review = String(control.insertEvent(calendarId, SAMPLE_EVENTS.series).id)
  const standup = String(control.insertEvent(calendarId, WEEKLY_FROM_NOVEMBER).id)
  const untouched = String(control.insertEvent(calendarId, { ...WEEKLY_FROM_NOVEMBER, subject: 'Untouched' }).id)
  const { full, fullPassReads } = await twoPasses(t, stack, async (graphGet) => {
    // Another device renames one series and deletes an occurrence of another.
    control.patchEvent(calendarId, review, { subject: 'Weekly review, new room' })
    const query = new URLSearchParams({ startDateTime: '2026-11-17T00:00:00Z', endDateTime: '2026-11-17T23:59:59Z' })
    const [occurrence] = (await graphGet<{ value: Array<{ id: string }> }>(`/me/events/${standup}/instances?${query.toString()}`)).value
    control.deleteEvent(calendarId, occurrence?.id ?? '')
  })
  const last = (id: string) => full.filter((event) => event.providerEventId === id).at(-1)
  t.equal(last(review)?.content?.title, 'Weekly review, new room', 'the renamed series goes over with its new name')
  t.same(last(standup)?.content?.recurrence, ['RRULE:FREQ=WEEKLY;BYDAY=TU;WKST=SU;COUNT=10', 'EXDATE:20261117T080000Z'], 'the occurrence deleted meanwhile is excluded')
  t.equal(last(untouched)?.content?.title, 'Untouched')
  t.equal(fullPassReads.masters, 2, 'the two changed series are read again, the third is not')
})

test('import: the full pass reads every series again after a window pass that was resumed, or one that ended long ago', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const control = stack.microsoft.control
  control.insertEvent(calendarId, SAMPLE_EVENTS.series)
  control.insertEvent(calendarId, WEEKLY_FROM_NOVEMBER)
  // Enough single events in the window for a second page of three.
  for (const day of ['2026-11-24', '2026-11-25', '2026-11-26', '2026-11-27']) {
    control.insertEvent(calendarId, { ...SAMPLE_EVENTS.timed, start: { ...SAMPLE_EVENTS.timed.start, dateTime: `${day}T15:00:00` }, end: { ...SAMPLE_EVENTS.timed.end, dateTime: `${day}T16:00:00` } })
  }
  const resumed = await twoPasses(t, stack, async () => {}, { windowInterruptedAfterFirstPage: true })
  t.equal(resumed.fullPassReads.masters, 2, 'a resumed window pass has no record of the series read before it stopped')

  const late = await twoPasses(t, stack, async () => { stack.clock.advance(16 * 60_000) })
  t.equal(late.fullPassReads.masters, 2, 'what a window pass read a quarter of an hour ago is read again')
})

test('import: a series deleted between the window pass and the full pass goes over as cancelled', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const review = String(stack.microsoft.control.insertEvent(calendarId, SAMPLE_EVENTS.series).id)
  const { window, full } = await twoPasses(t, stack, async () => { stack.microsoft.control.deleteEvent(calendarId, review) })
  t.equal(window.find((event) => event.providerEventId === review)?.status, 'confirmed')
  t.match(full.filter((event) => event.providerEventId === review).at(-1), { status: 'cancelled' })
})

test('import: the series of a page are read in JSON batches of ten (master and instances), and a series Graph throttles in a batch is read on its own', async (t) => {
  const stack = await startStack(t)
  const calendarId = defaultCalendar(stack)
  const control = stack.microsoft.control
  const ids = Array.from({ length: 12 }, (_, index) => String(control.insertEvent(calendarId, { ...WEEKLY_FROM_NOVEMBER, subject: `Series ${index}` }).id))
  const throttled = ids[3] ?? ''
  control.armFault({ pathPrefix: `/v1.0/me/events/${encodeURIComponent(throttled)}/instances`, status: 429, retryAfterSec: 1, count: 1 })
  await connectAndSync(stack)

  const { operations } = control.counts()
  t.equal(operations['batch']?.statuses['200'], 2, 'twelve series in two batches')
  t.equal(operations['event.instances']?.statuses['429'], 1, 'Graph throttled one series\' instances inside a batch')
  t.equal(operations['event.get']?.total, 13, 'each master once in a batch, the throttled series\' once more on its own')
  for (const [index, id] of ids.entries()) {
    t.match(stack.backend.events(calendarId).get(id)?.content, { title: `Series ${index}`, recurrence: ['RRULE:FREQ=WEEKLY;BYDAY=TU;WKST=SU;COUNT=10'] }, `series ${index} imported with its rule`)
  }
})
