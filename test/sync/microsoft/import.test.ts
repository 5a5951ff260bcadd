// Connect and import against the Microsoft stand-in: the OAuth round trip with PKCE, the calendars,
// the window pass then the whole range through delta pages, series masters with their rule,
// exceptions linked to them, all-day events and Windows zone names.
import { test } from 'tap'
import { ALICE, begin, connectAndSync, consent, defaultCalendar, followCallback, occurrenceOn, SAMPLE_EVENTS, startStack, WEB_CALLBACK } from './harness.js'
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
