import { test } from 'tap'
import { waitUntil } from '../processes.js'
import { mintEventId } from '../../lib/events/ids.js'
import { planEdit } from '../../web/src/lib/series-edit.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'
import { sendPlan } from '../web-plans.js'
import { graphClient, occurrenceOn } from './graph-client.js'
import { connectMicrosoft, defaultMicrosoftCalendar, startFullStack, userWithMicrosoftAccount, withMicrosoft } from './stack.js'
import { microsoftOccurrences, ourOccurrences, waitConverged } from './occurrences.js'

// A daily series at Microsoft with a day deleted and a day renamed there, moved here from 10:00 to
// 14:00 as the web client's dialog sends it. Outlook drops a series' exceptions when its times
// change, so Sync writes them again where they moved, by the rule the backend applies here.

const WINDOW = { from: '2026-11-30T00:00:00Z', to: '2026-12-08T00:00:00Z' }
const BERLIN = 'W. Europe Standard Time'

test('Microsoft: a series moved here takes its deleted and renamed days along, on both sides', async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { microsoft: true }))
  const user = await userWithMicrosoftAccount(stack, 'ms-move', BERLIN)
  const microsoft = stack.microsoft.control
  const calendarId = defaultMicrosoftCalendar(stack, user.email)
  const app = stack.backend.app
  const device = await graphClient(stack.microsoft, user.email, `${stack.backendOrigin}/sync/oauth/microsoft/callback`)
  const master = microsoft.insertEvent(calendarId, {
    subject: 'Stand-up',
    start: { dateTime: '2026-12-01T10:00:00', timeZone: BERLIN },
    end: { dateTime: '2026-12-01T10:30:00', timeZone: BERLIN },
    recurrence: { pattern: { type: 'daily', interval: 1 }, range: { type: 'numbered', startDate: '2026-12-01', numberOfOccurrences: 6 } }
  })
  const masterId = String(master['id'])
  microsoft.deleteEvent(calendarId, await occurrenceOn(device, masterId, '2026-12-03'))
  microsoft.patchEvent(calendarId, await occurrenceOn(device, masterId, '2026-12-05'), { subject: 'Stand-up (renamed there)' })
  t.equal((await connectMicrosoft(stack, user)).searchParams.get('status'), 'connected')
  await waitUntil(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 'the connection healthy', 20_000)

  const ours = async () => await ourOccurrences(app, user.headers, WINDOW)
  const theirs = async () => await microsoftOccurrences(device, WINDOW)
  const converged = async (what: string) => {
    await stack.microsoft.notificationsSettled()
    await waitConverged(ours, theirs, what, async () => await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers }))
  }
  const at = (day: number, hour: number, title: string) => `2026-12-0${day}T${String(hour - 1).padStart(2, '0')}:00:00.000Z|2026-12-0${day}T${String(hour - 1).padStart(2, '0')}:30:00.000Z|${title}`

  await converged('the imported series')
  t.same(await ours(), [at(1, 10, 'Stand-up'), at(2, 10, 'Stand-up'), at(4, 10, 'Stand-up'), at(5, 10, 'Stand-up (renamed there)'), at(6, 10, 'Stand-up')], 'imported as Outlook shows it')

  const range = (await app.inject({ method: 'GET', url: `/api/event?start=${WINDOW.from}&end=${WINDOW.to}`, headers: user.headers })).json<CalendarEvent[]>()
  const first = range.find((event) => event.startDate.startsWith('2026-12-01')) as CalendarEvent
  const series = (await app.inject({ method: 'GET', url: `/api/event/${first._id.split('_')[0] ?? ''}`, headers: user.headers })).json<CalendarEvent>()
  const draft = { title: 'Stand-up', description: '', location: '', isAllDay: false, startDate: '2026-12-01T14:00:00+01:00', endDate: '2026-12-01T14:30:00+01:00', timeZone: series.timeZone, frequency: 'DAILY' as const }
  t.same(await sendPlan(app, user.headers, planEdit(first, draft, 'all', series, mintEventId())), [204], 'moved to 14:00, all events')

  const moved = [at(1, 14, 'Stand-up'), at(2, 14, 'Stand-up'), at(4, 14, 'Stand-up'), at(5, 14, 'Stand-up (renamed there)'), at(6, 14, 'Stand-up')]
  t.same(await ours(), moved, 'here at once')
  await waitUntil(async () => (await theirs()).some((line) => line.startsWith('2026-12-01T13:00')), 'the move at Microsoft', 20_000)
  await converged('both sides after the move')
  t.same(await theirs(), moved, 'Outlook shows the same: 3 December still deleted, 5 December still renamed')

  // Another device moves the 4th to 16:00 (its title unchanged); the series is then renamed here.
  microsoft.patchEvent(calendarId, await occurrenceOn(device, masterId, '2026-12-04'), {
    start: { dateTime: '2026-12-04T16:00:00', timeZone: BERLIN },
    end: { dateTime: '2026-12-04T16:30:00', timeZone: BERLIN }
  })
  await waitUntil(async () => (await ours()).some((line) => line.startsWith('2026-12-04T15:00')), 'the moved occurrence here', 20_000)
  const again = (await app.inject({ method: 'GET', url: `/api/event?start=${WINDOW.from}&end=${WINDOW.to}`, headers: user.headers })).json<CalendarEvent[]>()
  const firstAgain = again.find((event) => event.startDate.startsWith('2026-12-01')) as CalendarEvent
  const seriesAgain = (await app.inject({ method: 'GET', url: `/api/event/${series._id}`, headers: user.headers })).json<CalendarEvent>()
  t.same(await sendPlan(app, user.headers, planEdit(firstAgain, { ...draft, title: 'Stand-up (team)', startDate: seriesAgain.startDate, endDate: seriesAgain.endDate }, 'all', seriesAgain, mintEventId())), [204], 'renamed, all events')
  const renamed = [at(1, 14, 'Stand-up (team)'), at(2, 14, 'Stand-up (team)'), at(4, 16, 'Stand-up (team)'), at(5, 14, 'Stand-up (renamed there)'), at(6, 14, 'Stand-up (team)')]
  t.same(await ours(), renamed, 'here: the moved occurrence takes the new title, the one renamed there keeps its own')
  await waitUntil(async () => (await theirs()).some((line) => line.endsWith('|Stand-up (team)')), 'the rename at Microsoft', 20_000)
  await converged('both sides after the rename')
  t.same(await theirs(), renamed, 'the same at Outlook')
})
