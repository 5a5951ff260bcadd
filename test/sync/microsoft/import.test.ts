// Connect and import against the Microsoft stand-in: the OAuth round trip with PKCE, the calendars,
// the window pass then the whole range through delta pages, series masters with their rule,
// exceptions linked to them, occurrences deleted at Microsoft as EXDATEs of their series, all-day
// events, Windows zone names, and the mailbox's zone as the calendars' zone.
import { createHash, randomBytes } from 'node:crypto'
import { test } from 'tap'
import { compileSeries, expandSeries } from '../../../lib/events/recurrence.js'
import type { EventContent } from '../../../schemas/sync/index.js'
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

  // The first refresh answers a new refresh token: it replaces the stored one.
  await stack.drain()
  const after = await stack.sync.syncCredentials.load(connection?._id.toHexString() ?? '')
  t.ok(after?.['refreshToken'])
  t.not(after?.['refreshToken'], credential?.['refreshToken'], 'the rotated refresh token is stored')
  t.equal((await stack.sync.syncConnections.get(connection?._id.toHexString() ?? ''))?.state, 'healthy')

  const refused = await followCallback(await consent((await begin(stack, newUserId())).authorizationUrl, ALICE, false))
  t.equal(refused.location.searchParams.get('status'), 'denied')
})

test('import: window pass then the whole range, in delta pages; masters with RRULE, exceptions, all-day, Windows zones', async (t) => {
  const stack = await startStack(t, { pageSize: 2 })
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
