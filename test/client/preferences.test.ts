// The client module's preferences: what a client stores comes back as the server keeps it (zones
// under their current name), a refused body is a typed 400 that stores nothing, and a signed-out
// client is told so before anything is sent.
import { randomBytes } from 'node:crypto'
import tap, { test } from 'tap'
import { buildApp, listen, startDependencies, uniqueEmail } from '../helper.js'
import { ApiError, CalendarClient, SessionEndedError, type UserPreferences } from '../../client/index.js'

const deps = await startDependencies(tap)
const { app } = await buildApp(tap, deps)
const apiUrl = `${await listen(app)}/api`

test('preferences through the client: stored, read back, refused, signed out', async (t) => {
  const client = new CalendarClient({ apiUrl })
  const result = await client.signUp({ name: 'Prefs', email: uniqueEmail('client-prefs'), password: `pw-${randomBytes(6).toString('hex')}` })
  t.equal(result.status, 'OK')
  t.same(await client.preferences(), {}, 'nothing chosen yet')

  const chosen: UserPreferences = {
    weekStart: 'monday',
    timeFormat: '24h',
    locale: 'de-de',
    timeZone: 'Asia/Calcutta',
    secondTimeZone: 'UTC',
    workingHours: { start: '09:00', end: '17:30', days: [1, 2, 3, 4, 5] },
    defaultEventMinutes: 45,
    defaultReminderMinutes: 15,
    calendarColors: { own: '#8e24aa' }
  }
  const stored = await client.setPreferences(chosen)
  t.same(stored, { ...chosen, locale: 'de-DE', timeZone: 'Asia/Kolkata' }, 'answered as stored: canonical locale, the zone\'s current name')
  t.same(await client.preferences(), stored, 'read back')

  const refused = await client.setPreferences({ ...chosen, timeZone: 'Nowhere/Special' }).catch((error: unknown) => error)
  t.ok(refused instanceof ApiError, 'a typed error')
  t.equal((refused as ApiError).status, 400)
  t.equal((refused as ApiError).code, 'FST_ERR_VALIDATION')
  t.same(await client.preferences(), stored, 'nothing stored')

  await client.signOut()
  const signedOut = await client.preferences().catch((error: unknown) => error)
  t.ok(signedOut instanceof SessionEndedError, 'signed out: sign in again')
})
