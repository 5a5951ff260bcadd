// The client module's calendar files against a real app: a calendar exported as .ics text and
// imported into another account's calendar, twice, and a file that is no calendar as an ApiError.
import { randomBytes } from 'node:crypto'
import tap, { test } from 'tap'
import { buildApp, listen, startDependencies, uniqueEmail } from '../helper.js'
import { ApiError, CalendarClient } from '../../client/index.js'

const deps = await startDependencies(tap)
const { app } = await buildApp(tap, deps)
const apiUrl = `${await listen(app)}/api`

async function signedInClient (label: string): Promise<CalendarClient> {
  const client = new CalendarClient({ apiUrl })
  const result = await client.signUp({ name: label, email: uniqueEmail(label), password: `pw-${randomBytes(6).toString('hex')}` })
  if (result.status !== 'OK') throw new Error(`sign-up failed: ${result.status}`)
  return client
}

test('exportIcs and importIcs carry a calendar from one account to another', async (t) => {
  const ada = await signedInClient('ics-ada')
  const bob = await signedInClient('ics-bob')
  await ada.saveEvents([
    { title: 'Planning', startDate: '2026-12-01T09:00:00+01:00', endDate: '2026-12-01T09:30:00+01:00', timeZone: 'Europe/Berlin' },
    { title: 'Stand-up', startDate: '2026-12-02T09:30:00Z', endDate: '2026-12-02T09:45:00Z', recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=3'] } }
  ])
  const range = { start: '2026-12-01T00:00:00Z', end: '2026-12-10T00:00:00Z' }
  const file = await ada.exportIcs({ calendarId: 'own', ...range })
  t.match(file, /^BEGIN:VCALENDAR\r\n/, 'the answer is the file\'s text')
  t.match(file, /RRULE:FREQ=DAILY;COUNT=3/)

  t.same(await bob.importIcs(file), { imported: 2, skipped: 0, errors: [] })
  t.same(await bob.importIcs(file, { calendarId: 'own' }), { imported: 0, skipped: 2, errors: [] }, 'a second import stores nothing twice')
  const titles = (events: Array<{ title: string, startDate: string }>) => events.map((event) => `${event.title} ${event.startDate}`)
  t.same(titles(await bob.listEvents(range)), titles(await ada.listEvents(range)), 'Bob has Ada\'s events')

  const refused = await bob.importIcs('not a calendar').catch((error: unknown) => error)
  t.ok(refused instanceof ApiError, 'a refusal is an ApiError')
  t.match(refused, { status: 400, code: 'EVENT_INVALID' })
})
