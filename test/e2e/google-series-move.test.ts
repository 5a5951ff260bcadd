import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { mintEventId } from '../../lib/events/ids.js'
import { planEdit } from '../../web/src/lib/series-edit.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'
import { sendPlan } from '../web-plans.js'
import { connectGoogle, startFullStack, userWithGoogleAccount } from './stack.js'
import { googleItems, ourOccurrences, providerOccurrences, waitConverged } from './occurrences.js'

// A daily series at Google with a day cancelled and a day renamed there, moved here from 10:00 to
// 14:00 (as the web client's dialog sends it), then by a whole day: Google keeps a series'
// exceptions where they were when the series moves, so they must be moved there as they move here.

const WINDOW = { from: '2026-11-30T00:00:00Z', to: '2026-12-09T00:00:00Z' }
const ZONE = 'Europe/Berlin'

test('Google: a series moved here takes its cancelled and renamed days along, on both sides', async (t) => {
  const stack = await startFullStack(t)
  const user = await userWithGoogleAccount(stack, 'gmove')
  const google = stack.google.control
  const primary = user.email
  const app = stack.backend.app
  const series = google.insertEvent(primary, {
    summary: 'Stand-up',
    start: { dateTime: '2026-12-01T10:00:00+01:00', timeZone: ZONE },
    end: { dateTime: '2026-12-01T10:30:00+01:00', timeZone: ZONE },
    recurrence: ['RRULE:FREQ=DAILY;COUNT=6']
  })
  const googleId = String(series['id'])
  google.deleteEvent(primary, `${googleId}_20261203T090000Z`)
  google.patchEvent(primary, `${googleId}_20261205T090000Z`, { summary: 'Stand-up (renamed there)' })
  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)

  const ours = async () => await ourOccurrences(app, user.headers, WINDOW)
  const theirs = () => providerOccurrences(googleItems(google.storedEvents(primary)), WINDOW)
  const refresh = async () => await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
  const at = (day: number, hour: number, title: string) => `2026-12-0${day}T${String(hour - 1).padStart(2, '0')}:00:00.000Z|2026-12-0${day}T${String(hour - 1).padStart(2, '0')}:30:00.000Z|${title}`
  const move = async (startDate: string, endDate: string, title = 'Stand-up') => {
    const range = (await app.inject({ method: 'GET', url: `/api/event?start=${WINDOW.from}&end=${WINDOW.to}`, headers: user.headers })).json<CalendarEvent[]>()
    const first = range.find((event) => event.title === 'Stand-up' && event._id.includes('_')) as CalendarEvent
    const master = (await app.inject({ method: 'GET', url: `/api/event/${first._id.split('_')[0] ?? ''}`, headers: user.headers })).json<CalendarEvent>()
    const atFirst = range.find((event) => event.startDate.slice(0, 10) === master.startDate.slice(0, 10)) as CalendarEvent
    const draft = { title, description: '', location: '', isAllDay: false, startDate, endDate, timeZone: ZONE, frequency: 'DAILY' as const }
    t.same(await sendPlan(app, user.headers, planEdit(atFirst, draft, 'all', master, mintEventId())), [204])
  }

  await waitConverged(ours, theirs, 'the imported series', refresh)
  t.same(await ours(), [at(1, 10, 'Stand-up'), at(2, 10, 'Stand-up'), at(4, 10, 'Stand-up'), at(5, 10, 'Stand-up (renamed there)'), at(6, 10, 'Stand-up')], 'imported as Google shows it')

  await move('2026-12-01T14:00:00+01:00', '2026-12-01T14:30:00+01:00')
  const moved = [at(1, 14, 'Stand-up'), at(2, 14, 'Stand-up'), at(4, 14, 'Stand-up'), at(5, 14, 'Stand-up (renamed there)'), at(6, 14, 'Stand-up')]
  t.same(await ours(), moved, 'here at once')
  await waitConverged(ours, theirs, 'both sides after the move to 14:00', refresh)
  t.same(theirs(), moved, 'Google shows the same: no orphaned exception at 10:00')

  // A whole day later: the old exceptions' times are occurrences of the moved series now.
  await move('2026-12-02T14:00:00+01:00', '2026-12-02T14:30:00+01:00')
  const dayLater = [at(2, 14, 'Stand-up'), at(3, 14, 'Stand-up'), at(5, 14, 'Stand-up'), at(6, 14, 'Stand-up (renamed there)'), at(7, 14, 'Stand-up')]
  t.same(await ours(), dayLater, 'here: the cancelled day is now the 4th, the renamed one the 6th')
  await waitConverged(ours, theirs, 'both sides after the move by a day', refresh)
  t.same(theirs(), dayLater, 'and at Google, where the 3rd and the 5th are plain occurrences again')

  // Another device moves the 3rd to 16:00 (its title unchanged); the series is then renamed here.
  google.patchEvent(primary, `${googleId}_20261203T130000Z`, { start: { dateTime: '2026-12-03T16:00:00+01:00', timeZone: ZONE }, end: { dateTime: '2026-12-03T16:30:00+01:00', timeZone: ZONE } })
  await waitUntil(async () => (await ours()).some((line) => line.startsWith('2026-12-03T15:00')), 'the moved occurrence here', 20_000)
  await move('2026-12-02T14:00:00+01:00', '2026-12-02T14:30:00+01:00', 'Stand-up (team)')
  const renamed = [at(2, 14, 'Stand-up (team)'), at(3, 16, 'Stand-up (team)'), at(5, 14, 'Stand-up (team)'), at(6, 14, 'Stand-up (renamed there)'), at(7, 14, 'Stand-up (team)')]
  t.same(await ours(), renamed, 'here: the moved occurrence takes the new title, the one renamed there keeps its own')
  await waitConverged(ours, theirs, 'both sides after the rename', refresh)
  t.same(theirs(), renamed, 'the same at Google')
})
