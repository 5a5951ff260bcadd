import tap, { test } from 'tap'
import { waitFor } from '../processes.js'
import { graphClient, type GraphClient } from './graph-client.js'
import { connectMicrosoft, defaultMicrosoftCalendar, startFullStack, userWithMicrosoftAccount, withMicrosoft, type FullStackWithMicrosoft } from './stack.js'
import { microsoftOccurrences } from './occurrences.js'
import { DELETIONS, DELETION_RACES, OCCURRENCE_DELETIONS, EDIT_RACES, EVERY_KIND, EVERY_KIND_WITH_OCCURRENCE_EDITS, WINDOW, convergenceSuite, runsOf, type Command, type Connected, type Device } from './convergence.js'

// Two-way sync with Microsoft converges (the machinery and the operations are in ./convergence.ts):
// "another device" is the Microsoft stand-in's control surface, with a Graph client of its own for
// what only Graph tells (an occurrence's id) and for what Microsoft shows (its calendar view); an
// outage is the stand-in's fault control answering Sync's Graph requests 503.

const RUNS = runsOf(3)
tap.setTimeout(Math.max(150_000, RUNS * 60_000))

// Sync reaches calendars and events under /me/calendars/ and /me/events/, subscriptions under
// /subscriptions; the device reads through /me/calendar/ (the default calendar), which stays up.
const SYNC_PATHS = ['/v1.0/me/calendars/', '/v1.0/me/events/', '/v1.0/subscriptions']

async function faults (stack: FullStackWithMicrosoft, down: boolean): Promise<void> {
  const control = `${stack.microsoft.url}/_control/faults`
  if (!down) {
    const answer = await fetch(control, { method: 'DELETE' })
    if (!answer.ok) throw new Error(`the fault control answered ${answer.status}`)
    return
  }
  for (const pathPrefix of SYNC_PATHS) {
    const answer = await fetch(control, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pathPrefix, status: 503, count: 100_000 }) })
    if (!answer.ok) throw new Error(`the fault control answered ${answer.status}`)
  }
}

/** Microsoft's answer to "another device", or nothing when the target is gone there meanwhile (a 404 is a fact, not a failure). */
function atMicrosoft (act: () => unknown): void {
  try {
    act()
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === undefined) throw error
  }
}

/** The id of the occurrence of a series that starts at `start`, or null when there is none (moved or cancelled already). */
async function occurrenceAt (graph: GraphClient, seriesId: string, start: number): Promise<string | null> {
  const query = new URLSearchParams({ startDateTime: new Date(start).toISOString(), endDateTime: new Date(start + 60_000).toISOString() })
  try {
    const page = await graph.get<{ value: Array<{ id: string, start: { dateTime: string } }> }>(`/me/calendar/events/${encodeURIComponent(seriesId)}/instances?${query.toString()}`)
    return page.value.find((instance) => Date.parse(`${instance.start.dateTime.replace(/Z$/, '')}Z`) === start)?.id ?? null
  } catch {
    // Not a series (any more) at Microsoft: nothing there to move or cancel.
    return null
  }
}

async function connect (stack: FullStackWithMicrosoft, label: string): Promise<Connected> {
  const user = await userWithMicrosoftAccount(stack, label, 'Eastern Standard Time')
  const landed = await connectMicrosoft(stack, user)
  if (landed.searchParams.get('status') !== 'connected') throw new Error(`connect ended ${landed.searchParams.get('status') ?? 'nowhere'}`)
  if (!await waitFor(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 20_000)) throw new Error('the connection never became healthy')
  const graph = await graphClient(stack.microsoft, user.email, `${stack.backendOrigin}/sync/oauth/microsoft/callback`)
  const control = stack.microsoft.control
  const calendarId = defaultMicrosoftCalendar(stack, user.email)
  const at = (ms: number) => ({ dateTime: new Date(ms).toISOString().replace(/Z$/, ''), timeZone: 'UTC' })
  const device: Device = {
    editTitle: async (id, title) => { atMicrosoft(() => control.patchEvent(calendarId, id, { subject: title })) },
    moveOccurrence: async (seriesId, original, start, end) => {
      const occurrence = await occurrenceAt(graph, seriesId, original)
      if (occurrence !== null) atMicrosoft(() => control.patchEvent(calendarId, occurrence, { start: at(start), end: at(end) }))
    },
    cancelOccurrence: async (seriesId, original) => {
      const occurrence = await occurrenceAt(graph, seriesId, original)
      if (occurrence !== null) atMicrosoft(() => control.deleteEvent(calendarId, occurrence))
    },
    occurrences: async () => await microsoftOccurrences({ get: async <T>(path: string) => await graph.get<T>(path.replace(/^\/me\/calendarView/, '/me/calendar/calendarView')) }, WINDOW),
    fault: async (down) => { await faults(stack, down) },
    // Microsoft tells Sync by change notification; the comparison waits for those in flight.
    nudge: async () => { await stack.microsoft.notificationsSettled() }
  }
  return { user, device }
}

/** Failures the generator found, shrunk, kept as plain sequences that run first. */
const FOUND: Command[][] = []

test('Microsoft: generated sequences of changes on both sides converge', async (t) => {
  const stack = withMicrosoft(await startFullStack(t, { microsoft: true }))
  await convergenceSuite(t, {
    provider: 'microsoft',
    stack,
    connect: async (label) => await connect(stack, label),
    found: [...FOUND, EVERY_KIND, DELETIONS, OCCURRENCE_DELETIONS, ...DELETION_RACES, ...EDIT_RACES, EVERY_KIND_WITH_OCCURRENCE_EDITS],
    defaultRuns: RUNS,
    occurrenceEdits: true
  })
})
