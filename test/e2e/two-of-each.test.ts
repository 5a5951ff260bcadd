// Two backend processes and two Sync processes over one database (a replica set, as far as the
// driver knows) and one session core, as `docker compose up --scale backend=2 --scale sync=2`
// runs them behind the web server's proxy. Each backend talks to "its" Sync and each Sync hands
// provider events to "its" backend; the provider's callbacks come through a proxy in front of both
// backends that, for notifications, delivers each one to both (the worst a load balancer or a
// provider's redelivery can do). Every job runs once, every notification is handled once, every
// stream gets each change once, and a session ended on one backend ends on the other.
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { MongoClient } from 'mongodb'
import { test } from 'tap'
import { stringify } from 'yaml'
import { startGoogle } from '../../dev/google/index.js'
import { authFields, freePort, startDependencies, testConfig, uniqueEmail } from '../helper.js'
import { startScript, waitFor, waitUntil, writeTempFile, type RunningProcess } from '../processes.js'
import { RawSseReader } from '../realtime/sse-reader.js'
import { GOOGLE_CLIENT } from './stack.js'

const RANGE = 'start=2026-10-01T00:00:00Z&end=2027-03-01T00:00:00Z'
const IMPORTED = 40

interface Listed { _id: string, title: string, providerEventId?: string }
interface Message { type: string, eventIds?: string[], status?: string, code?: string }
interface LogLine { msg?: string, jobId?: string, type?: string, coalescingKey?: string, worker?: string }

interface FrontProxy {
  server: Server
  /** While true, the copy of a notification for the second backend waits for `releaseCopies`. */
  holdCopies: boolean
  /** Delivers the held copies; answers their statuses. */
  releaseCopies: () => Promise<number[]>
}

/**
 * The proxy in front of both backends: notifications (POST .../webhooks/...) go to both backends,
 * everything else to `others` (the browser's return from the provider lands on the backend the
 * connect did not start on).
 */
async function startFrontProxy (port: number, both: [string, string], others: string): Promise<FrontProxy> {
  let held: Array<() => Promise<Response>> = []
  const forward = async (origin: string, request: IncomingMessage, body: Buffer): Promise<Response> => {
    const headers = new Headers()
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined || ['host', 'connection', 'content-length'].includes(name)) continue
      headers.set(name, Array.isArray(value) ? value.join(', ') : value)
    }
    return await fetch(`${origin}${request.url ?? '/'}`, {
      method: request.method ?? 'GET',
      headers,
      redirect: 'manual',
      ...(body.length === 0 ? {} : { body })
    })
  }
  const server = createServer((request: IncomingMessage, reply: ServerResponse) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks)
      const notification = request.method === 'POST' && (request.url ?? '').startsWith('/sync/webhooks/')
      if (notification && front.holdCopies) held.push(async () => await forward(both[1], request, body))
      const answered = notification
        ? Promise.all(both.slice(0, front.holdCopies ? 1 : 2).map(async (origin) => await forward(origin, request, body))).then(([first]) => first as Response)
        : forward(others, request, body)
      answered.then(async (response) => {
        const location = response.headers.get('location')
        reply.writeHead(response.status, location === null ? {} : { location })
        reply.end(Buffer.from(await response.arrayBuffer()))
      }, () => { reply.writeHead(502).end() })
    })
  })
  const front: FrontProxy = {
    server,
    holdCopies: false,
    releaseCopies: async () => {
      const copies = held
      held = []
      return await Promise.all(copies.map(async (send) => (await send()).status))
    }
  }
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return front
}

function logLines (process: RunningProcess): LogLine[] {
  return process.stdout().split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return []
    try { return [JSON.parse(line) as LogLine] } catch { return [] }
  })
}

test('two backends and two Sync processes over one database: each job once, each notification once, each change once per stream, sign-out and revocation everywhere', { timeout: 240_000 }, async (t) => {
  const deps = await startDependencies(t, { replicaSet: true })
  const [proxyPort, backendA, backendB, syncA, syncB] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()]
  const front = `http://127.0.0.1:${proxyPort}`
  const google = await startGoogle({
    clients: [{ ...GOOGLE_CLIENT, redirectUris: [`${front}/sync/oauth/google/callback`] }],
    notificationRetries: 0
  })
  t.teardown(() => google.close())

  const internalAuthToken = randomBytes(16).toString('hex')
  const shared = testConfig(deps, { apiDatabase: `calendar_two_of_each_${Date.now()}`, internalAuthToken })
  const pairs = [{ name: 'a', backendPort: backendA, syncPort: syncA }, { name: 'b', backendPort: backendB, syncPort: syncB }]
  const processes: Array<{ backend: RunningProcess, sync: RunningProcess, origin: string }> = []
  for (const pair of pairs) {
    const document = (logLevel: 'info' | 'debug') => stringify({
      ...shared,
      runtime: { ...shared.runtime, logLevel },
      backend: { ...shared.backend, port: pair.backendPort },
      extprovider: { ...GOOGLE_CLIENT, endpointBase: google.url },
      sync: {
        ...shared.sync,
        port: pair.syncPort,
        serviceUrl: `http://127.0.0.1:${pair.syncPort}`,
        backendUrl: `http://127.0.0.1:${pair.backendPort}`,
        callbackBaseUrl: `${front}/sync`,
        execution: 'active'
      }
    })
    // One at a time: four processes compiling at once on a busy machine can outlast a plugin's start-up timeout.
    // Sync at debug: its worker logs each job it finished, with the worker's id.
    const sync = startScript(t, 'sync/server.ts', ['--config', await writeTempFile(`sync-${pair.name}.yaml`, document('debug'))])
    const syncUp = await waitFor(() => fetch(`http://127.0.0.1:${pair.syncPort}/health/ready`).then((response) => response.ok, () => false), 60_000, () => sync.child.exitCode !== null)
    const backend = startScript(t, 'server.ts', ['--config', await writeTempFile(`backend-${pair.name}.yaml`, document('info'))])
    const origin = `http://127.0.0.1:${pair.backendPort}`
    const backendUp = await waitFor(() => fetch(`${origin}/api/health`).then((response) => response.ok, () => false), 60_000, () => backend.child.exitCode !== null)
    if (!syncUp || !backendUp) t.comment(sync.output(), backend.output())
    t.ok(syncUp && backendUp, `Sync and backend ${pair.name} answer`)
    processes.push({ backend, sync, origin })
  }
  const [a, b] = processes.map((entry) => entry.origin) as [string, string]
  const syncClient = new MongoClient(shared.sync.databaseUri)
  t.teardown(() => syncClient.close())
  const syncDatabase = syncClient.db()
  const proxy = await startFrontProxy(proxyPort, [a, b], b)
  t.teardown(() => new Promise((resolve) => proxy.server.close(resolve)))

  const email = uniqueEmail('two-of-each')
  const password = 'pw-for-two-of-each-1'
  google.control.createAccount({ email, name: 'Two', timeZone: 'Europe/Berlin' })
  for (let index = 0; index < IMPORTED; index++) {
    const day = String(1 + (index % 28)).padStart(2, '0')
    const month = index < 28 ? '11' : '12'
    google.control.insertEvent(email, { summary: `Imported ${index}`, start: { dateTime: `2026-${month}-${day}T09:00:00Z` }, end: { dateTime: `2026-${month}-${day}T10:00:00Z` } })
  }
  const signedUp = await fetch(`${a}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', rid: 'emailpassword' },
    body: JSON.stringify(authFields({ name: 'Two', email, password }))
  })
  t.equal(signedUp.status, 200, 'signed up through A')
  const headers = { authorization: `Bearer ${String(signedUp.headers.get('sx-access-token'))}` }
  const events = async (origin: string): Promise<Listed[]> => await (await fetch(`${origin}/api/event?${RANGE}`, { headers })).json() as Listed[]

  const streamA = await RawSseReader.open(`${a}/api/events/stream`, headers)
  const streamB = await RawSseReader.open(`${b}/api/events/stream`, headers)
  t.teardown(() => { streamA.close(); streamB.close() })
  t.equal(streamA.status, 200, 'a stream on A')
  t.equal(streamB.status, 200, 'a stream on B')
  const messages = (stream: RawSseReader): Message[] => stream.messages() as Message[]

  const jobsDone = (): LogLine[] => processes.flatMap(({ sync }) => logLines(sync)).filter((line) => line.msg === 'job done')

  await t.test('a connect begun on A and returned through B imports each event once, in one import job', async (t) => {
    const begun = await fetch(`${a}/api/auth/connections/begin`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'google', intent: 'connect' })
    })
    t.equal(begun.status, 200)
    // The browser keeps the connect binder the begin set; cookies go by host, so B's proxy gets it too.
    const binder = begun.headers.getSetCookie().find((cookie) => cookie.startsWith('calendar_connect_google='))?.split(';')[0] ?? ''
    t.match(binder, /^calendar_connect_google=[A-Za-z0-9_-]{43}$/)
    const authorization = new URL((await begun.json() as { authorizationUrl: string }).authorizationUrl)
    authorization.searchParams.set('login_hint', email)
    authorization.searchParams.set('approve', '1')
    const consent = await fetch(authorization, { redirect: 'manual' })
    const callback = consent.headers.get('location') ?? ''
    t.ok(callback.startsWith(`${front}/sync/oauth/google/callback`), 'the provider sends the browser back through the front proxy')
    const landed = new URL((await fetch(callback, { redirect: 'manual', headers: { cookie: binder } })).headers.get('location') ?? 'about:blank')
    t.equal(landed.searchParams.get('status'), 'connected', 'B finished the connect A began')

    await waitUntil(async () => (await events(b)).length >= IMPORTED, 'the imported events on B', 60_000)
    await streamA.until(() => messages(streamA).some((message) => message.type === 'importCompleted'), 30_000)
    await streamB.until(() => messages(streamB).some((message) => message.type === 'importCompleted'), 30_000)
    for (const origin of [a, b]) {
      const listed = await events(origin)
      t.equal(listed.length, IMPORTED, `${origin === a ? 'A' : 'B'} lists each imported event once`)
      t.equal(new Set(listed.map((event) => event.providerEventId)).size, IMPORTED, 'one row per provider event')
    }
    await waitUntil(() => jobsDone().some((line) => line.type === 'import'), 'the import job finished', 30_000)
    const imports = jobsDone().filter((line) => line.type === 'import')
    t.equal(imports.length, 1, 'one import job ran, in one of the two Sync processes')
  })

  await t.test('a change at Google: its notification, delivered to both Syncs (the second copy after the pull), is one pull', async (t) => {
    await waitUntil(() => google.control.listChannels().some((channel) => channel.account === email && channel.state === 'active'), 'the calendar watched', 30_000)
    // Whatever ran after the import (the first pull that makes the connection healthy) is over.
    await streamB.until(() => messages(streamB).some((message) => message.type === 'syncStatusChanged' && message.status === 'healthy'), 30_000)
    // The healthy status is told while that pull is still being recorded done: it is counted before, not as this change's.
    await waitUntil(async () => await syncDatabase.collection('jobs').countDocuments({ type: 'pull', status: 'running' }) === 0, 'the pull after the import recorded', 30_000)
    const pullsBefore = jobsDone().filter((line) => line.type === 'pull').length
    google.control.resetCounts()
    proxy.holdCopies = true
    const target = (await events(b)).find((event) => event.title === 'Imported 3')
    google.control.patchEvent(email, target?.providerEventId ?? '', { summary: 'Imported 3 (moved)' })
    await waitUntil(async () => (await events(a)).some((event) => event.title === 'Imported 3 (moved)'), 'the change on A', 30_000)
    await waitUntil(() => jobsDone().filter((line) => line.type === 'pull').length > pullsBefore, 'the pull job logged', 10_000)
    // The copy for B comes after the pull has run, as a provider's redelivery would.
    proxy.holdCopies = false
    t.same(await proxy.releaseCopies(), [204], 'B took its copy of the notification')
    // A copy taken for a new message queues its pull before it is answered (due half a second
    // later): the Sync database shows at once whether it did.
    const queuedPulls = await syncDatabase.collection('jobs').countDocuments({ type: 'pull', status: { $in: ['queued', 'running'] } })
    t.equal(queuedPulls, 0, 'the copy queued no second pull')
    const delivered = google.control.listChannels().filter((channel) => channel.account === email).reduce((sum, channel) => sum + channel.delivered, 0)
    t.ok(delivered >= 2, 'Google delivered the notification (to the proxy, which gave it to both backends)')
    t.equal(google.control.counts().operations['calendar.events.list']?.total, 1, 'Google was read once for it')
    t.equal(jobsDone().filter((line) => line.type === 'pull').length - pullsBefore, 1, 'one pull job ran')
  })

  await t.test('a write on A: each stream, on A and on B, gets the change once', async (t) => {
    const first = randomBytes(12).toString('hex')
    const second = randomBytes(12).toString('hex')
    const write = async (origin: string, id: string) => await fetch(`${origin}/api/event`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ _id: id, title: `Own ${id}`, startDate: '2026-11-25T12:00:00Z', endDate: '2026-11-25T13:00:00Z', calendarId: email })
    })
    t.equal((await write(a, first)).status, 204, 'written on A')
    const mentions = (stream: RawSseReader, id: string) => messages(stream).filter((message) => message.type === 'eventsChanged' && (message.eventIds ?? []).includes(id)).length
    await streamA.until(() => mentions(streamA, first) > 0, 30_000)
    await streamB.until(() => mentions(streamB, first) > 0, 30_000)
    // A later change marks the point by which a duplicate of the first would have arrived (the
    // feed is read in order).
    t.equal((await write(b, second)).status, 204, 'a second write, on B')
    await streamA.until(() => mentions(streamA, second) > 0, 30_000)
    await streamB.until(() => mentions(streamB, second) > 0, 30_000)
    t.equal(mentions(streamA, first), 1, 'the stream on A got the write once')
    t.equal(mentions(streamB, first), 1, 'the stream on B got the write once')
    t.equal(messages(streamA).filter((message) => message.type === 'importCompleted').length, 1, 'the stream on A got the import\'s completion once')
    t.equal(messages(streamB).filter((message) => message.type === 'importCompleted').length, 1, 'the stream on B got the import\'s completion once')
    // The outbox's reports became provider writes: each ran once, in one process or the other.
    await waitUntil(() => google.control.storedEvents(email).filter((event) => String(event['summary']).startsWith('Own ')).length === 2, 'both writes at Google', 30_000)
    const perJob = new Map<string, number>()
    for (const line of jobsDone()) perJob.set(line.jobId ?? '', (perJob.get(line.jobId ?? '') ?? 0) + 1)
    t.same([...perJob.values()].filter((count) => count !== 1), [], 'no job row was done twice')
    t.equal(google.control.storedEvents(email).length, IMPORTED + 2, 'nothing was created twice at Google')
    const workers = new Set(jobsDone().map((line) => line.worker))
    t.comment(`${perJob.size} jobs done by ${workers.size} worker(s)`)
  })

  await t.test('signed out on A: refused on B within a few seconds, and B closes its stream', async (t) => {
    const signedOut = await fetch(`${a}/api/auth/signout`, { method: 'POST', headers: { ...headers, 'sx-auth-mode': 'header', rid: 'session' } })
    t.equal(signedOut.status, 200)
    t.ok(await waitFor(async () => (await fetch(`${b}/api/user/profile`, { headers })).status === 401, 5000), 'B refuses the access token')
    await streamB.untilEnded(5000)
    t.ok(streamB.ended, 'the stream on B ended')
    t.equal((await fetch(`${a}/api/user/profile`, { headers })).status, 401, 'A refuses it too')
  })

  await t.test('the grant revoked at Google, met by a pull asked of B: both backends end the sessions and refuse writes to the calendar', async (t) => {
    const signedIn = await fetch(`${b}/api/auth/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', rid: 'emailpassword' },
      body: JSON.stringify(authFields({ email, password }))
    })
    t.equal(signedIn.status, 200, 'signed in again, through B')
    const again = { authorization: `Bearer ${String(signedIn.headers.get('sx-access-token'))}` }
    const onA = await RawSseReader.open(`${a}/api/events/stream`, again)
    const onB = await RawSseReader.open(`${b}/api/events/stream`, again)
    t.teardown(() => { onA.close(); onB.close() })
    await onA.until((reader) => reader.text.startsWith('retry:'))
    await onB.until((reader) => reader.text.startsWith('retry:'))
    google.control.revoke(email)
    t.equal((await fetch(`${b}/api/connections/refresh`, { method: 'POST', headers: again })).status, 200, 'a refresh asked of B')
    // A dead grant ends every session of the user (the client goes back to login); the attention
    // message may or may not reach a stream before its session's end closes it.
    // Whichever Sync ran the pull told its own backend; the other learns it from the database.
    for (const origin of [a, b]) {
      t.ok(await waitFor(async () => (await fetch(`${origin}/api/user/profile`, { headers: again })).status === 401, 15_000), `${origin === a ? 'A' : 'B'} refuses the session`)
    }
    await onA.untilEnded(10_000)
    await onB.untilEnded(10_000)
    t.ok(onA.ended && onB.ended, 'both streams of that session closed')

    const back = await fetch(`${a}/api/auth/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', rid: 'emailpassword' },
      body: JSON.stringify(authFields({ email, password }))
    })
    t.equal(back.status, 200, 'signed in again, through A')
    const third = { authorization: `Bearer ${String(back.headers.get('sx-access-token'))}`, 'content-type': 'application/json' }
    const imported = (await (await fetch(`${a}/api/event?${RANGE}`, { headers: third })).json() as Array<Listed & { calendarId?: string }>).find((event) => event.title === 'Imported 5')
    for (const origin of [a, b]) {
      const refused = await fetch(`${origin}/api/event/${imported?._id ?? ''}`, {
        method: 'PUT',
        headers: third,
        body: JSON.stringify({ title: 'Imported 5, edited', startDate: '2026-11-06T09:00:00Z', endDate: '2026-11-06T10:00:00Z', calendarId: imported?.calendarId })
      })
      t.equal(refused.status, 410, `${origin === a ? 'A' : 'B'} refuses a write to the revoked calendar`)
      t.equal((await refused.json() as { code?: string }).code, 'CONNECTION_REVOKED')
    }
  })
})
