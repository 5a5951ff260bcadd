// A Google calendar through the whole system (the backend, the Sync service with its worker, the
// Google stand-in), against baselines measured in the same run:
//  1. Importing a 10,000-event calendar (200 series, 500 exceptions) into the backend, against
//     reading the same pages from the stand-in with Google's client and bulk-writing the same
//     documents (the ones the import stored) with the driver into a collection with the same
//     indexes. Target: at most 1.5x.
//  2. A change at the provider until `eventsChanged` on an open stream, over 100 changes, with the
//     change-feed bridge's real 2 s poll. Target: p99 at most 3 s.
//  3. Provider list requests caused by a burst of 100 notifications on one calendar. Target: at most 2.
import { calendar as googleCalendar } from '@googleapis/calendar'
import { OAuth2Client } from 'google-auth-library'
import tap from 'tap'
import type { Document } from 'mongodb'
import { RawSseReader } from '../test/realtime/sse-reader.js'
import { connectGoogle, startFullStack, userWithGoogleAccount, GOOGLE_CLIENT, type FullStack } from '../test/e2e/stack.js'

// The stacks of the tests are reused here; their runner must not end the benchmark after 30 s.
tap.setTimeout(0)
const closers: Array<() => unknown> = []
const teardown = { teardown: (fn: () => unknown) => { closers.push(fn) } }
const stack: FullStack = await startFullStack(teardown, { feedPollIntervalMs: 2000 })
const SEED = { singles: 9300, series: 200, exceptions: 500 }
const TOTAL = SEED.singles + SEED.series + SEED.exceptions

async function until (condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await condition()) {
    if (Date.now() > deadline) throw new Error('gave up waiting')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const events = stack.backend.app.mongo.db.collection('events')

/** Our import: from the moment the browser comes back from the consent to every event stored. */
async function importThroughTheSystem (round: number): Promise<{ took: number, user: Awaited<ReturnType<typeof userWithGoogleAccount>> }> {
  const user = await userWithGoogleAccount(stack, `importer-${round}`)
  stack.google.control.seed(user.email, { generate: { ...SEED, days: 365 } })
  const started = performance.now()
  await connectGoogle(stack, user)
  await until(async () => await events.countDocuments({ user: user.userId }) >= TOTAL, 300_000)
  return { took: performance.now() - started, user }
}

/**
 * The floor: the same pages read with Google's client, and the documents the import stored for
 * them written again in bulk, page by page, into a collection with the events' indexes.
 */
async function readAndBulkWrite (round: number, user: Awaited<ReturnType<typeof userWithGoogleAccount>>): Promise<number> {
  const stored = await events.find({ user: user.userId }).toArray()
  const target = stack.backend.app.mongo.db.collection(`baseline_${round}`)
  for (const index of await events.indexes()) {
    if (index.name === '_id_') continue
    const { key, name, unique, partialFilterExpression } = index
    await target.createIndex(key, { name, ...(unique === undefined ? {} : { unique }), ...(partialFilterExpression === undefined ? {} : { partialFilterExpression }) })
  }
  // A token the stand-in accepts, obtained the way any client does (consent, code exchange).
  const oauth = new OAuth2Client({ clientId: GOOGLE_CLIENT.clientId, clientSecret: GOOGLE_CLIENT.clientSecret, redirectUri: `${stack.backendOrigin}/sync/oauth/google/callback`, endpoints: { oauth2AuthBaseUrl: `${stack.google.url}/o/oauth2/v2/auth`, oauth2TokenUrl: `${stack.google.url}/token` } })
  const consent = new URL(oauth.generateAuthUrl({ access_type: 'offline', scope: ['https://www.googleapis.com/auth/calendar'], login_hint: user.email }))
  consent.searchParams.set('approve', '1')
  const code = new URL((await fetch(consent, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? ''
  const { tokens } = await oauth.getToken(code)
  oauth.setCredentials(tokens)
  const api = googleCalendar({ version: 'v3', rootUrl: stack.google.rootUrl, auth: oauth })
  const byProviderId = new Map(stored.map((document) => [document.providerEventId as string, document]))
  const started = performance.now()
  let pageToken: string | undefined
  do {
    const { data } = await api.events.list({ calendarId: user.email, maxResults: 2500, singleEvents: false, showDeleted: true, ...(pageToken === undefined ? {} : { pageToken }) })
    const documents = (data.items ?? []).flatMap((item): Document[] => {
      const document = byProviderId.get(item.id ?? '')
      return document === undefined ? [] : [{ ...document, _id: `${round}:${String(document._id)}` }]
    })
    if (documents.length > 0) await target.insertMany(documents, { ordered: false })
    pageToken = data.nextPageToken ?? undefined
  } while (pageToken !== undefined)
  return performance.now() - started
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
const ours: number[] = []
const floor: number[] = []
for (let round = 0; round < 3; round++) {
  const imported = await importThroughTheSystem(round)
  ours.push(imported.took)
  floor.push(await readAndBulkWrite(round, imported.user))
}
const importRatio = median(ours) / median(floor)
console.log(`provider-sync import (Google): ${TOTAL} events, read + bulk write ${median(floor).toFixed(0)} ms, through the system ${median(ours).toFixed(0)} ms, ratio ${importRatio.toFixed(2)} (target <= 1.5)`)

// 2. Latency of a change at the provider to the stream.
const watcher = await userWithGoogleAccount(stack, 'watcher')
const watched = stack.google.control.insertEvent(watcher.email, { summary: 'Watched', start: { dateTime: '2026-11-24T10:00:00Z' }, end: { dateTime: '2026-11-24T11:00:00Z' } })
await connectGoogle(stack, watcher)
await until(async () => await events.countDocuments({ user: watcher.userId }) >= 1, 30_000)
const stream = await RawSseReader.open(`${stack.backendOrigin}/api/events/stream`, { authorization: watcher.headers.authorization ?? '' })
const changed = () => stream.messages().filter((message) => (message as { type: string }).type === 'eventsChanged').length
await new Promise((resolve) => setTimeout(resolve, 3000))
const latencies: number[] = []
for (let change = 0; change < 100; change++) {
  const before = changed()
  const started = performance.now()
  stack.google.control.patchEvent(watcher.email, String(watched['id']), { summary: `Watched ${change}` })
  await stream.until(() => changed() > before, 15_000)
  latencies.push(performance.now() - started)
}
stream.close()
latencies.sort((a, b) => a - b)
const p50 = latencies[49] ?? 0
const p99 = latencies[98] ?? 0
console.log(`provider-sync change -> eventsChanged (Google, bridge poll 2 s): p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms over 100 changes, ratio p99/target ${(p99 / 3000).toFixed(2)} (target p99 <= 3000 ms)`)

// 3. Provider requests per burst of notifications.
await stack.google.notificationsSettled()
await new Promise((resolve) => setTimeout(resolve, 1000))
const lists = () => stack.google.control.counts().operations['calendar.events.list']?.total ?? 0
const listsBefore = lists()
for (let change = 0; change < 100; change++) stack.google.control.patchEvent(watcher.email, String(watched['id']), { summary: `Burst ${change}` })
await stack.google.notificationsSettled()
await until(async () => (await events.findOne({ user: watcher.userId, title: 'Burst 99' })) !== null, 30_000)
await new Promise((resolve) => setTimeout(resolve, 1000))
const pulls = lists() - listsBefore
console.log(`provider-sync burst (Google): 100 notifications on one calendar caused ${pulls} list requests, ratio ${(pulls / 2).toFixed(2)} of the target (target <= 2)`)

for (const close of closers.reverse()) await close()
process.exit(0)
