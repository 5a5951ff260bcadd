import { test } from 'tap'
import { RawSseReader } from '../realtime/sse-reader.js'
import { waitUntil } from '../processes.js'
import { connectGoogle, connectMicrosoft, defaultMicrosoftCalendar, startFullStack, userWithGoogleAccount, userWithMicrosoftAccount, withMicrosoft } from './stack.js'

// The benchmarks run the Google and Microsoft stand-ins on threads of their own. The same stack
// must then behave as with them in process: control calls answer at once, with the stand-in's
// values and errors, a connect imports, and a change there arrives by notification.

const RANGE = 'start=2026-11-01T00:00:00Z&end=2027-01-01T00:00:00Z'

test('the stand-ins on threads of their own serve the whole stack', async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { microsoft: true, standInThreads: true }))

  await t.test('control calls answer synchronously, values and errors as in process', async (t) => {
    const email = 'threaded@example.com'
    const account = stack.google.control.createAccount({ email, name: 'Threaded', timeZone: 'Europe/Berlin' })
    t.equal(account.email, email)
    const seeded = stack.google.control.seed(email, { generate: { singles: 30, series: 2, exceptions: 1, days: 60 } })
    t.equal(seeded.inserted, 33)
    t.equal(stack.google.control.storedEvents(email).length, 33, 'the next call sees what the last one did')
    const refused = (() => {
      try {
        stack.google.control.createAccount({ email, timeZone: 'Mars/Olympus' })
        return null
      } catch (error) {
        return error as Error & { statusCode?: number }
      }
    })()
    t.match(refused, { message: 'unknown time zone Mars/Olympus', statusCode: 400 }, 'the stand-in\'s own error, with its status')
    t.throws(() => (stack.google.control as unknown as { noSuchOperation: () => void }).noSuchOperation(), /the google stand-in's control has no noSuchOperation/)
    const discovery = await fetch(stack.google.discoveryUrl)
    t.equal(discovery.status, 200)
    t.equal((await discovery.json() as { issuer: string }).issuer, stack.google.url)
  })

  await t.test('Google: a connect imports, and a change there arrives by notification', async (t) => {
    const user = await userWithGoogleAccount(stack, 'threaded-google')
    const dentist = stack.google.control.insertEvent(user.email, { summary: 'Dentist', start: { dateTime: '2026-11-23T15:00:00Z' }, end: { dateTime: '2026-11-23T16:00:00Z' } })
    const stream = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: user.headers.authorization ?? '' })
    t.teardown(() => stream.close())
    const titles = async () => (await stack.backend.app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).json<Array<{ title: string }>>().map((event) => event.title)
    t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
    await waitUntil(async () => (await titles()).includes('Dentist'), 'the imported event', 20_000)
    await waitUntil(async () => stack.google.control.listChannels().some((channel) => channel.calendarId === user.email), 'the calendar watched', 20_000)
    stack.google.control.patchEvent(user.email, String(dentist['id']), { summary: 'Dentist (moved)' })
    await stack.google.notificationsSettled()
    await waitUntil(async () => (await titles()).includes('Dentist (moved)'), 'the change from Google', 20_000)
    t.pass('imported, and the change arrived')
  })

  await t.test('Microsoft: a connect imports', async (t) => {
    const user = await userWithMicrosoftAccount(stack, 'threaded-microsoft')
    const calendarId = defaultMicrosoftCalendar(stack, user.email)
    stack.microsoft.control.insertEvent(calendarId, { subject: 'Standup', start: { dateTime: '2026-11-24T09:00:00', timeZone: 'UTC' }, end: { dateTime: '2026-11-24T09:15:00', timeZone: 'UTC' } })
    t.equal((await connectMicrosoft(stack, user)).searchParams.get('status'), 'connected')
    await waitUntil(async () => (await stack.backend.app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).json<Array<{ title: string }>>().some((event) => event.title === 'Standup'), 'the imported event', 20_000)
    t.pass('imported')
  })

  await t.test('close ends the thread: its address answers no more', async (t) => {
    const url = stack.google.url
    await stack.google.close()
    await t.rejects(fetch(url), 'nothing listens once closed')
  })
})
