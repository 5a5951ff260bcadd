import { test } from 'tap'
import { waitFor, waitUntil } from '../processes.js'
import { ManualClock } from '../sync/helper.js'
import { mintEventId } from '../../lib/events/ids.js'
import { planEdit, type EventDraft } from '../../web/src/lib/series-edit.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'
import { sendPlan } from '../web-plans.js'
import { connectGoogle, startFullStack, userWithGoogleAccount } from './stack.js'

// Two people change the same event at once, each a different part: one at Google while Sync cannot
// reach it, the other here. Both changes survive on both sides (a merge per part against the version
// the change here was made on), where the newer change used to overwrite the whole event.

const RANGE = 'start=2026-12-01T00:00:00Z&end=2026-12-31T00:00:00Z'
const ZONE = 'Europe/Berlin'

test('Google: a change made there and one made here to other parts of the same event both survive, on both sides', async (t) => {
  const clock = new ManualClock(Date.now())
  const stack = await startFullStack(t, { syncClock: clock })
  const user = await userWithGoogleAccount(stack, 'merge')
  const google = stack.google
  const primary = user.email
  const app = stack.backend.app
  const budget = google.control.insertEvent(primary, { summary: 'Budget review', start: { dateTime: '2026-12-10T10:00:00+01:00', timeZone: ZONE }, end: { dateTime: '2026-12-10T11:00:00+01:00', timeZone: ZONE } })
  const atGoogle = () => google.control.storedEvents(primary).find((event) => event['id'] === budget['id']) ?? {}
  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)

  const ours = async () => (await app.inject({ method: 'GET', url: `/api/event?${RANGE}`, headers: user.headers })).json<CalendarEvent[]>().find((event) => event.providerEventId === budget['id'])
  await waitUntil(async () => (await ours()) !== undefined, 'the event imported', 20_000)
  const faults = async (method: 'POST' | 'DELETE') => {
    const answer = await fetch(`${google.url}/_control/faults`, { method, ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pathPrefix: '/calendar/v3/', status: 503, count: 100_000 }) } : {}) })
    t.ok(answer.ok, `faults ${method}`)
  }
  const edit = async (change: Partial<EventDraft>) => {
    const event = await ours() as CalendarEvent
    const draft: EventDraft = { title: event.title, description: event.description ?? '', location: event.location ?? '', isAllDay: false, startDate: event.startDate, endDate: event.endDate, timeZone: event.timeZone, frequency: null, ...change }
    t.same(await sendPlan(app, user.headers, planEdit(event, draft, 'all', null, mintEventId())), [204])
  }
  const recover = async (done: () => Promise<boolean>) => {
    await faults('DELETE')
    const started = clock.now().getTime()
    while (!await done() && clock.now().getTime() - started < 180_000) {
      clock.advance(5_000)
      await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
      await waitFor(done, 1_500)
    }
  }

  await t.test('a room set at Google, then the title changed here a moment later', async (t) => {
    await faults('POST')
    google.control.patchEvent(primary, String(budget['id']), { location: 'Room 4' })
    await edit({ title: 'Budget review (Q4)' })
    await recover(async () => atGoogle()['summary'] === 'Budget review (Q4)' && (await ours())?.location === 'Room 4')
    t.equal(atGoogle()['summary'], 'Budget review (Q4)', 'the title made here reached Google')
    t.equal(atGoogle()['location'], 'Room 4', 'and Google kept its room')
    t.match(await ours(), { title: 'Budget review (Q4)', location: 'Room 4' }, 'both here too')
  })

  await t.test('a rename at Google during an outage, then a move here', async (t) => {
    await faults('POST')
    clock.advance(60_000)
    google.control.patchEvent(primary, String(budget['id']), { summary: 'Budget review (Q4, with finance)' })
    await edit({ startDate: '2026-12-10T15:00:00+01:00', endDate: '2026-12-10T16:00:00+01:00' })
    await recover(async () => Date.parse(String((atGoogle()['start'] as { dateTime?: string } | undefined)?.dateTime)) === Date.parse('2026-12-10T15:00:00+01:00') &&
      (await ours())?.title === 'Budget review (Q4, with finance)')
    t.equal(atGoogle()['summary'], 'Budget review (Q4, with finance)', 'Google kept its rename')
    t.equal(Date.parse(String((atGoogle()['start'] as { dateTime?: string }).dateTime)), Date.parse('2026-12-10T15:00:00+01:00'), 'and took the move made here')
    const here = await ours()
    t.match(here, { title: 'Budget review (Q4, with finance)', location: 'Room 4' }, 'the rename reached here')
    t.equal(Date.parse(here?.startDate ?? ''), Date.parse('2026-12-10T15:00:00+01:00'), 'with the move')
  })

  await t.test('both sides change the same part: the later change wins that part', async (t) => {
    await faults('POST')
    google.control.patchEvent(primary, String(budget['id']), { summary: 'Budget (theirs)' })
    clock.advance(60_000)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    await edit({ title: 'Budget (ours, later)' })
    await recover(async () => atGoogle()['summary'] === 'Budget (ours, later)' && (await ours())?.title === 'Budget (ours, later)')
    t.equal(atGoogle()['summary'], 'Budget (ours, later)', 'the later title, made here, at Google')
    t.match(await ours(), { title: 'Budget (ours, later)', location: 'Room 4' })
  })
})
