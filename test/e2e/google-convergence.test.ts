import tap, { test } from 'tap'
import type fc from 'fast-check'
import { waitFor } from '../processes.js'
import { connectGoogle, startFullStack, userWithGoogleAccount, type FullStack } from './stack.js'
import { googleItems, providerOccurrences } from './occurrences.js'
import {
  CancelOccurrenceThere as CancelOccurrenceAtGoogle, CreateHere, DeleteHere, EditTitleHere,
  DELETIONS, DELETION_RACES, OCCURRENCE_DELETIONS, EDIT_RACES, EVERY_KIND, EVERY_KIND_WITH_OCCURRENCE_EDITS, WINDOW, basic, convergenceSuite, runsOf, type Connected, type Device, type Model, type Real
} from './convergence.js'

// Two-way sync with Google converges, whatever the order of what happens on both sides (the
// machinery and the operations are in ./convergence.ts): "another device" is the Google stand-in's
// control surface, and an outage is its fault control answering Sync 503.

const RUNS = runsOf(4)
// A sequence takes about 12 s on this machine (a new user connects, then each operation and the settling).
tap.setTimeout(Math.max(120_000, RUNS * 60_000))

/** Google's answer to "another device", or nothing when the target is gone there meanwhile (a 404 is a fact, not a failure). */
function atGoogle (act: () => unknown): void {
  try {
    act()
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === undefined) throw error
  }
}

async function faults (stack: FullStack, down: boolean): Promise<void> {
  const answer = await fetch(`${stack.google.url}/_control/faults`, down
    ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pathPrefix: '/calendar/v3/', status: 503, count: 100_000 }) }
    : { method: 'DELETE' })
  if (!answer.ok) throw new Error(`the fault control answered ${answer.status}`)
}

async function connect (stack: FullStack, label: string): Promise<Connected> {
  const user = await userWithGoogleAccount(stack, label)
  const landed = await connectGoogle(stack, user)
  if (landed.searchParams.get('status') !== 'connected') throw new Error(`connect ended ${landed.searchParams.get('status') ?? 'nowhere'}`)
  if (!await waitFor(async () => (await stack.sync.syncConnections.listByUser(user.userId))[0]?.state === 'healthy', 20_000)) throw new Error('the connection never became healthy')
  const control = stack.google.control
  const at = (ms: number) => ({ dateTime: new Date(ms).toISOString(), timeZone: 'America/New_York' })
  const device: Device = {
    editTitle: async (googleId, title) => { atGoogle(() => control.patchEvent(user.email, googleId, { summary: title })) },
    moveOccurrence: async (googleId, original, start, end) => { atGoogle(() => control.patchEvent(user.email, `${googleId}_${basic(original)}`, { start: at(start), end: at(end) })) },
    cancelOccurrence: async (googleId, original) => { atGoogle(() => control.deleteEvent(user.email, `${googleId}_${basic(original)}`)) },
    occurrences: async () => providerOccurrences(googleItems(control.storedEvents(user.email)), WINDOW),
    fault: async (down) => { await faults(stack, down) },
    // Google tells Sync of its changes by push notification.
    nudge: async () => {}
  }
  return { user, device }
}

/** Failures the generator found, shrunk, kept as plain sequences that run first. */
const FOUND: Array<Array<fc.AsyncCommand<Model, Real>>> = [
  // A series created and renamed here, an occurrence cancelled at Google, the series deleted here.
  [new CreateHere(true, 3, 8), new EditTitleHere(3), new CancelOccurrenceAtGoogle(0, 1), new DeleteHere(6)]
]

test('Google: generated sequences of changes on both sides converge', async (t) => {
  const stack = await startFullStack(t)
  await convergenceSuite(t, { provider: 'google', stack, connect: async (label) => await connect(stack, label), found: [...FOUND, DELETIONS, OCCURRENCE_DELETIONS, ...DELETION_RACES, EVERY_KIND, ...EDIT_RACES, EVERY_KIND_WITH_OCCURRENCE_EDITS], defaultRuns: RUNS, occurrenceEdits: true })
})
