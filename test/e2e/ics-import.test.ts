import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { connectGoogle, primaryCalendarId, startFullStack, userWithGoogleAccount } from './stack.js'

// An .ics file imported into a Google calendar, through the real stack: the backend writes the
// events through its outbox, the Sync service's worker writes them to the Google stand-in, and a
// second import of the same file writes nothing more there.

const RANGE = 'start=2026-11-01T00:00:00Z&end=2027-02-01T00:00:00Z'
const FILE = [
  'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Apple Inc.//macOS 15.0//EN',
  'BEGIN:VEVENT', 'UID:ics-e2e-dinner', 'DTSTAMP:20261101T100000Z', 'DTSTART;TZID=Europe/Berlin:20261204T190000', 'DTEND;TZID=Europe/Berlin:20261204T210000',
  'SUMMARY:Dinner from a file', 'LOCATION:Kreuzberg', 'END:VEVENT',
  'BEGIN:VEVENT', 'UID:ics-e2e-series', 'DTSTAMP:20261101T100000Z', 'DTSTART;TZID=Europe/Berlin:20261207T080000', 'DTEND;TZID=Europe/Berlin:20261207T083000',
  'RRULE:FREQ=WEEKLY;COUNT=4', 'SUMMARY:Run from a file', 'END:VEVENT',
  'END:VCALENDAR', ''
].join('\r\n')

interface Listed { _id: string, title: string, calendarId?: string, providerEventId?: string }

test('an .ics import into a Google calendar reaches Google', async (t) => {
  const stack = await startFullStack(t)
  const user = await userWithGoogleAccount(stack, 'ics')
  const google = stack.google.control
  const landed = await connectGoogle(stack, user)
  t.equal(landed.searchParams.get('status'), 'connected')
  // The calendars are listed once the connection's first import has run.
  let calendarId = ''
  await waitUntil(async () => {
    calendarId = await primaryCalendarId(stack.backend.app, user.headers).catch(() => '')
    return calendarId !== ''
  }, 'the Google calendar listed', 20_000)
  const events = async (): Promise<Listed[]> => (await stack.backend.app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).json()
  const importFile = async () => await stack.backend.app.inject({
    method: 'POST', url: `/api/events/import?calendarId=${encodeURIComponent(calendarId)}`, headers: { ...user.headers, 'content-type': 'text/calendar' }, payload: FILE
  })

  const first = await importFile()
  t.equal(first.statusCode, 200, first.body)
  t.same(first.json(), { imported: 2, skipped: 0, errors: [] })
  const atGoogle = () => google.storedEvents(user.email).filter((event) => String(event['summary']).endsWith('from a file'))
  await waitUntil(() => atGoogle().length === 2, 'both events at Google', 30_000)
  const series = atGoogle().find((event) => event['summary'] === 'Run from a file')
  t.same(series?.['recurrence'], ['RRULE:FREQ=WEEKLY;COUNT=4'], 'the series is a series at Google')
  t.match(atGoogle().find((event) => event['summary'] === 'Dinner from a file'), { location: 'Kreuzberg', start: { dateTime: /^2026-12-04T19:00:00/ } })
  await waitUntil(async () => (await events()).filter((event) => event.title.endsWith('from a file')).every((event) => event.calendarId === calendarId && event.providerEventId !== undefined),
    'the events linked to their Google copies', 30_000)

  const again = await importFile()
  t.same(again.json(), { imported: 0, skipped: 2, errors: [] }, 'the same file again')
  t.equal(atGoogle().length, 2, 'Google holds each event once')
  t.equal((await events()).filter((event) => event.title === 'Dinner from a file').length, 1, 'and so does the calendar')
})
