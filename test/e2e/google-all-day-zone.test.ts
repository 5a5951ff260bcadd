import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { connectGoogle, startFullStack, userWithGoogleAccount, primaryCalendarId } from './stack.js'

// An all-day event keeps the zone it was made with after a round trip through Google, whose
// calendar has a zone of its own (Europe/Berlin here) and whose all-day events need none.

interface Stored { title: string, startDate: string, endDate: string, isAllDay: boolean, timeZone: string, providerEventId?: string }

test('all-day events made here keep their own zone after sync with Google', async (t) => {
  const stack = await startFullStack(t)
  const user = await userWithGoogleAccount(stack, 'zoe')
  const google = stack.google.control
  const app = stack.backend.app
  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)
  const get = async (id: string): Promise<Stored> => (await app.inject({ method: 'GET', url: `/api/event/${id}`, headers: user.headers })).json()

  for (const [id, timeZone] of [['a7'.repeat(12), 'America/Los_Angeles'], ['b8'.repeat(12), 'UTC']] as const) {
    await t.test(`an all-day event in ${timeZone}`, async (t) => {
      const title = `Offsite (${timeZone})`
      t.equal((await app.inject({ method: 'POST', url: '/api/event', headers: user.headers, payload: { _id: id, calendarId: await primaryCalendarId(app, user.headers), title, startDate: '2026-12-10', endDate: '2026-12-12', isAllDay: true, timeZone } })).statusCode, 204)
      await waitUntil(async () => (await get(id)).providerEventId !== undefined, 'the link back', 20_000)
      // Another device renames it at Google; its arrival here is the pull that also carried the echo of our write.
      google.patchEvent(user.email, (await get(id)).providerEventId ?? '', { summary: `${title}!` })
      await waitUntil(async () => (await get(id)).title === `${title}!`, 'the change from Google', 20_000)
      t.match(await get(id), { startDate: '2026-12-10', endDate: '2026-12-12', isAllDay: true, timeZone }, 'same dates, and its own zone, not the Google calendar\'s')
    })
  }
})
