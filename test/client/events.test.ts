// The client module's typed event reads and writes against a real app (test/helper.ts): what a
// client writes comes back as the server stores it, refusals arrive as typed errors with the
// server's code, and sign-in, sign-up and sign-out report what the session library answered.
import { randomBytes } from 'node:crypto'
import tap, { test } from 'tap'
import { buildApp, listen, startDependencies, uniqueEmail } from '../helper.js'
import { ApiError, CalendarClient, MemoryTokenStore, SessionEndedError, UnavailableError, type EventChangeInput, type EventView } from '../../client/index.js'

const deps = await startDependencies(tap)
const { app } = await buildApp(tap, deps)
const apiUrl = `${await listen(app)}/api`

async function signedInClient (label: string): Promise<{ client: CalendarClient, userId: string, email: string }> {
  const client = new CalendarClient({ apiUrl: `${apiUrl}/` })
  const email = uniqueEmail(label)
  const result = await client.signUp({ name: label, email, password: `pw-${randomBytes(6).toString('hex')}` })
  if (result.status !== 'OK') throw new Error(`sign-up failed: ${result.status}`)
  return { client, userId: result.userId, email }
}

test('an event written through the client reads back typed, is listed, updated, and deleted', async (t) => {
  const { client, userId } = await signedInClient('roundtrip')
  const change: EventChangeInput = {
    title: 'Planning',
    description: 'Quarterly\tplan',
    startDate: '2026-11-23T09:00:00+01:00',
    endDate: '2026-11-23T09:30:00+01:00',
    timeZone: 'Europe/Berlin',
    priority: 'work'
  }
  const id = await client.saveEvent(change)
  t.match(id, /^[0-9a-f]{24}$/, 'the client chose the id the server stored')

  const stored: EventView = await client.getEvent(id)
  t.match(stored, { _id: id, user: userId, title: 'Planning', description: 'Quarterly\tplan', isAllDay: false, timeZone: 'Europe/Berlin', priority: 'work', status: 'confirmed', origin: 'compass' })
  t.equal(Date.parse(stored.startDate), Date.parse(change.startDate), 'the start as written')
  t.ok(Date.parse(stored.lastUpdated) > Date.now() - 60_000, 'lastUpdated set by the server')

  const range = { start: '2026-11-23T00:00:00Z', end: '2026-11-24T00:00:00Z' }
  t.same((await client.listEvents(range)).map((event) => event._id), [id], 'listed in its range')
  t.same(await client.listEvents({ start: '2026-11-24T00:00:00Z', end: '2026-11-25T00:00:00Z' }), [], 'and not outside it')

  await client.updateEvent(id, { ...change, title: 'Planning (moved)', startDate: '2026-11-23T10:00:00+01:00', endDate: '2026-11-23T10:30:00+01:00' })
  t.equal((await client.getEvent(id)).title, 'Planning (moved)')

  const [a, b] = await client.saveEvents([
    { title: 'Day off', startDate: '2026-11-24', endDate: '2026-11-25', isAllDay: true },
    { _id: `optimistic-${randomBytes(12).toString('hex')}`, title: 'Call', startDate: '2026-11-24T15:00:00Z', endDate: '2026-11-24T15:15:00Z' }
  ])
  t.same((await client.listEvents({ start: '2026-11-24T00:00:00Z', end: '2026-11-25T00:00:00Z' })).map((event) => event._id).sort(), [a, b].sort(),
    'several at once, the optimistic id stored bare')

  await client.deleteEvent(id)
  const missing = await client.getEvent(id).then(() => null, (error: unknown) => error)
  t.ok(missing instanceof ApiError)
  t.match(missing, { status: 404, code: 'EVENT_NOT_FOUND' })
})

test('a series occurrence is deleted with applyTo', async (t) => {
  const { client } = await signedInClient('series')
  const id = await client.saveEvent({
    title: 'Stand-up',
    startDate: '2026-11-02T09:00:00Z',
    endDate: '2026-11-02T09:15:00Z',
    recurrence: { rule: ['RRULE:FREQ=DAILY;COUNT=5'] }
  })
  const week = { start: '2026-11-02T00:00:00Z', end: '2026-11-09T00:00:00Z' }
  const occurrences = await client.listEvents(week)
  t.equal(occurrences.length, 5)
  const third = occurrences[2]?._id ?? ''
  t.match(third, new RegExp(`^${id}_`), 'an occurrence is addressed by its series id')
  await client.deleteEvent(third, 'thisAndFollowing')
  t.equal((await client.listEvents(week)).length, 2, 'this and the following occurrences are gone')
})

test('refusals arrive typed and change nothing', async (t) => {
  const { client } = await signedInClient('refused')
  const invalid = await client.saveEvent({ title: 'Backwards', startDate: '2026-11-23T10:00:00Z', endDate: '2026-11-23T09:00:00Z' }).then(() => null, (error: unknown) => error)
  t.ok(invalid instanceof ApiError)
  t.match(invalid, { status: 400, code: 'EVENT_INVALID', message: /endDate must be after startDate/ })
  const tooLong = await client.listEvents({ start: '2026-01-01T00:00:00Z', end: '2027-06-01T00:00:00Z' }).then(() => null, (error: unknown) => error)
  t.match(tooLong, { status: 400 }, 'a range beyond 400 days')
  t.same(await client.listEvents({ start: '2026-11-23T00:00:00Z', end: '2026-11-24T00:00:00Z' }), [], 'nothing was stored')
})

test('sign-in and sign-up answers, sign-out, and a signed-out client', async (t) => {
  const email = uniqueEmail('answers')
  const client = new CalendarClient({ apiUrl })
  await t.rejects(client.profile(), SessionEndedError, 'no session yet')
  t.equal(await client.userId(), null)
  t.equal(await client.accessTokenExpiresAt(), null)

  const blank = await client.signUp({ name: ' ', email, password: 'pw-for-answers-1' })
  t.same(blank, { status: 'FIELD_ERROR', fields: [{ id: 'name', error: 'Enter your name' }] })
  const long = await client.signUp({ name: 'n'.repeat(101), email, password: 'pw-for-answers-1' })
  t.match(long, { status: 'FIELD_ERROR', fields: [{ id: 'name' }] }, 'a field longer than any valid one (answered 400) is a field error too')
  t.equal((await client.signUp({ name: 'Answers', email, password: 'pw-for-answers-1' })).status, 'OK')
  t.equal((await client.signUp({ name: 'Again', email, password: 'pw-for-answers-1' })).status, 'FIELD_ERROR', 'the email is taken')
  t.same(await client.signIn({ email, password: 'wrong-password-1' }), { status: 'WRONG_CREDENTIALS_ERROR' })

  const store = new MemoryTokenStore()
  const device = new CalendarClient({ apiUrl, tokenStore: store })
  const signedIn = await device.signIn({ email: `  ${email.toUpperCase()} `, password: 'pw-for-answers-1' })
  t.equal(signedIn.status, 'OK', 'the email is normalized')
  t.equal((await device.profile()).email, email)
  const tokens = store.load()
  await device.signOut()
  t.equal(store.load(), null, 'signed out here')
  await device.signOut()
  const old = await fetch(`${apiUrl}/user/profile`, { headers: { authorization: `Bearer ${tokens?.accessToken ?? ''}` } })
  t.equal(old.status, 401, 'and at the server: the old access token is refused')
})

test('a backend that does not answer is an outage, not a sign-out', async (t) => {
  const { client } = await signedInClient('nobody-home')
  const elsewhere = new CalendarClient({ apiUrl: 'http://127.0.0.1:9/api', tokenStore: new MemoryTokenStore() })
  const refused = await elsewhere.signIn({ email: 'someone@example.com', password: 'irrelevant-1' }).then(() => null, (error: unknown) => error)
  t.ok(refused instanceof UnavailableError, 'connection refused')
  t.equal((refused as UnavailableError).retryAfterMs, null)
  t.ok(await client.userId(), 'the signed-in client is untouched')
})
