import { ObjectId } from 'mongodb'
import { test } from 'tap'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'

// GET/PUT /api/user/preferences: a person's display preferences kept on the user record, so every
// browser and device shows the calendar alike. What the schema cannot say (zones and locales Intl
// knows, working hours in order) is refused the same way as what it can: 400, nothing changed.
test('display preferences are kept with the account', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const user = await signUp(app, { email: uniqueEmail('prefs'), password: 'pw-for-prefs-1' })
  const other = await signUp(app, { email: uniqueEmail('prefs-other'), password: 'pw-for-prefs-2' })
  const read = async (headers: Record<string, string> = user.headers) => await app.inject({ method: 'GET', url: '/api/user/preferences', headers })
  const write = async (payload: unknown, headers: Record<string, string> = user.headers) =>
    await app.inject({ method: 'PUT', url: '/api/user/preferences', headers, payload: payload as object })
  const stored = async () => (await app.mongo.db.collection('users').findOne({ _id: new ObjectId(user.userId) }))?.preferences as unknown

  await t.test('a session is required', async (t) => {
    t.equal((await read({})).statusCode, 401)
    t.equal((await write({ weekStart: 'monday' }, {})).statusCode, 401)
    t.equal(await stored(), undefined, 'nothing stored without a session')
  })

  await t.test('nothing chosen at first: the browser decides', async (t) => {
    const answer = await read()
    t.equal(answer.statusCode, 200)
    t.same(answer.json(), {})
  })

  const chosen = {
    weekStart: 'sunday',
    timeFormat: '12h',
    locale: 'de-DE',
    timeZone: 'America/New_York',
    secondTimeZone: 'Asia/Kolkata',
    workingHours: { start: '08:30', end: '17:00', days: [1, 2, 3, 4, 5] },
    defaultEventMinutes: 30,
    defaultReminderMinutes: 10,
    calendarReminderMinutes: { own: 0, 'family@group.calendar.google.com': 1440 },
    calendarColors: { own: '#0b8043', 'family@group.calendar.google.com': '#8e24aa' }
  }

  await t.test('stored, answered and read back; another user keeps their own', async (t) => {
    const answer = await write(chosen)
    t.equal(answer.statusCode, 200)
    t.same(answer.json(), chosen)
    t.same(await stored(), chosen, 'on the user record')
    t.same((await read()).json(), chosen, 'read back, as another browser of the account would')
    t.same((await read(other.headers)).json(), {}, 'another user\'s preferences are their own')
  })

  await t.test('zones under their current name, locales in canonical form', async (t) => {
    const answer = await write({ ...chosen, timeZone: 'Asia/Calcutta', secondTimeZone: 'europe/kiev', locale: 'en-us' })
    t.equal(answer.statusCode, 200)
    t.match(answer.json(), { timeZone: 'Asia/Kolkata', secondTimeZone: 'Europe/Kyiv', locale: 'en-US' })
    t.match(await stored(), { timeZone: 'Asia/Kolkata', secondTimeZone: 'Europe/Kyiv', locale: 'en-US' })
    await write(chosen)
  })

  await t.test('bad input: 400 with the schema\'s message, and nothing changed', async (t) => {
    for (const [payload, why, message] of [
      [{ weekStart: 'tuesday' }, 'a week start that is not offered', /body\/weekStart/],
      [{ timeFormat: '36h' }, 'an unknown time format', /body\/timeFormat/],
      [{ timeZone: 'Mars/Olympus_Mons' }, 'a zone Intl does not know', /body\/timeZone must be an IANA time zone name/],
      [{ timeZone: '+05:30' }, 'an offset, not a zone', /body\/timeZone must be an IANA time zone name/],
      [{ secondTimeZone: 'Europe/Nowhere' }, 'an unknown second zone', /body\/secondTimeZone must be an IANA time zone name/],
      [{ timeZone: 'A'.repeat(65) }, 'a zone name longer than any', /body\/timeZone must NOT have more than 64 characters/],
      [{ locale: 'not a locale' }, 'a locale with spaces', /body\/locale/],
      [{ locale: 'x'.repeat(36) }, 'a locale too long', /body\/locale must NOT have more than 35 characters/],
      [{ locale: 'de-DE-1234567890' }, 'a tag Intl refuses', /body\/locale must be a BCP 47 language tag/],
      [{ workingHours: { start: '17:00', end: '09:00', days: [1] } }, 'working hours ending before they start', /body\/workingHours\/start must be before/],
      [{ workingHours: { start: '9:00', end: '17:00', days: [1] } }, 'a time not as HH:mm', /body\/workingHours\/start/],
      [{ workingHours: { start: '09:00', end: '17:00', days: [0] } }, 'a weekday number out of range', /body\/workingHours\/days/],
      [{ workingHours: { start: '09:00', end: '17:00', days: [1, 1] } }, 'a weekday twice', /body\/workingHours\/days/],
      [{ defaultEventMinutes: 0 }, 'an event of no length', /body\/defaultEventMinutes must be >= 5/],
      [{ defaultEventMinutes: 1441 }, 'an event longer than a day', /body\/defaultEventMinutes must be <= 1440/],
      [{ defaultEventMinutes: 30.5 }, 'a fraction of a minute', /body\/defaultEventMinutes must be integer/],
      [{ defaultReminderMinutes: -1 }, 'a reminder after the start', /body\/defaultReminderMinutes must be >= 0/],
      [{ calendarReminderMinutes: { own: -5 } }, 'a calendar\'s reminder after the start', /body\/calendarReminderMinutes\/own must be >= 0/],
      [{ calendarReminderMinutes: { own: 40_321 } }, 'a calendar\'s reminder more than four weeks before', /body\/calendarReminderMinutes\/own must be <= 40320/],
      [{ calendarReminderMinutes: { own: 7.5 } }, 'a calendar\'s reminder at a fraction of a minute', /body\/calendarReminderMinutes\/own must be integer/],
      [{ calendarReminderMinutes: { '': 10 } }, 'a calendar\'s reminder without its calendar', /calendarReminderMinutes/],
      [{ calendarReminderMinutes: Object.fromEntries(Array.from({ length: 501 }, (_, index) => [`c${index}`, 10])) }, 'more than 500 calendars\' reminders', /calendarReminderMinutes/],
      [{ calendarColors: { own: 'red' } }, 'a colour not as #rrggbb', /calendarColors/],
      [{ calendarColors: { own: '#FFFFFF' } }, 'a colour in capitals', /calendarColors/],
      [{ calendarColors: { '': '#0b8043' } }, 'an empty calendar key', /calendarColors/],
      [{ calendarColors: Object.fromEntries(Array.from({ length: 501 }, (_, index) => [`c${index}`, '#0b8043'])) }, 'more than 500 colours', /calendarColors/],
      [{ theme: 'dark' }, 'an unknown field', /must NOT have additional properties/],
      [[], 'not an object', /body must be object/]
    ] as const) {
      const refused = await write(payload)
      t.equal(refused.statusCode, 400, why)
      t.match(refused.json(), { statusCode: 400, error: 'Bad Request', message }, `${why}: says what is wrong`)
    }
    t.same(await stored(), chosen, 'refused bodies changed nothing')
    t.same((await read()).json(), chosen)
  })

  await t.test('a PUT replaces the whole: what is left out goes back to the browser\'s own', async (t) => {
    const answer = await write({ weekStart: 'monday' })
    t.same(answer.json(), { weekStart: 'monday' })
    t.same(await stored(), { weekStart: 'monday' })
    t.same((await write({})).json(), {})
    t.same((await read()).json(), {})
  })
})
