// A backup of the local stack (npm start), restored into a fresh data directory, gives back every
// account, event, connection and queued job, and Sync carries on from its cursors: the restored
// CalDAV connection is pulled, not imported again. The configuration's secrets go with it, as an
// operator keeps config.yaml beside the backup (the Sync database's credentials are sealed with
// one of them); Radicale's own data is the provider's, not ours, and is carried over as it is.
import { execFile } from 'node:child_process'
import { cp, mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'tap'
import { MongoClient, ObjectId } from 'mongodb'
import { jobKeys } from '../../sync/services/connection-jobs.js'
import { freePort } from '../helper.js'
import { fetchPatiently, startScript, temporaryDirectory, waitFor } from '../processes.js'
import { metricValue, scrape } from '../metrics-text.js'

const run = promisify(execFile)
const root = new URL('../../', import.meta.url).pathname

interface Listed { _id: string, title: string }
interface JobRow { _id: unknown, type: string, status: string, runAt: Date, coalescingKey: string }

test('npm run backup of the local stack, npm run restore into a fresh one: everything back, Sync resumes', { timeout: 540_000 }, async (t) => {
  const names = ['mongo', 'sessionCore', 'sync', 'backend', 'backendMetrics', 'syncMetrics', 'mail', 'mailSmtp', 'google', 'microsoft', 'caldav', 'stripe', 'web'] as const
  const ports = Object.fromEntries(await Promise.all(names.map(async (name) => [name, await freePort()] as const))) as Record<typeof names[number], number>
  const env = (dataDir: string): NodeJS.ProcessEnv => ({
    DEV_DATA_DIR: dataDir,
    DEV_MONGO_PORT: String(ports.mongo),
    DEV_SESSION_CORE_PORT: String(ports.sessionCore),
    DEV_SYNC_PORT: String(ports.sync),
    DEV_BACKEND_PORT: String(ports.backend),
    DEV_BACKEND_METRICS_PORT: String(ports.backendMetrics),
    DEV_SYNC_METRICS_PORT: String(ports.syncMetrics),
    DEV_MAIL_PORT: String(ports.mail),
    DEV_MAIL_SMTP_PORT: String(ports.mailSmtp),
    DEV_GOOGLE_PORT: String(ports.google),
    DEV_MICROSOFT_PORT: String(ports.microsoft),
    DEV_CALDAV_PORT: String(ports.caldav),
    DEV_STRIPE_PORT: String(ports.stripe),
    DEV_WEB_PORT: String(ports.web),
    LOG_LEVEL: 'warn'
  })
  const api = `http://127.0.0.1:${ports.backend}/api`
  const json = { 'content-type': 'application/json', 'sx-auth-mode': 'header' }
  const fields = (values: Record<string, string>) => Object.entries(values).map(([id, value]) => ({ id, value }))
  const email = 'restored@example.com'
  const password = 'kept-through-a-restore-1'
  // Around today (the CalDAV demo's events) to the account's own in March 2027, within the 400 days a read may span.
  const range = 'start=2026-10-01T00:00:00Z&end=2027-06-01T00:00:00Z'

  const start = async (dataDir: string) => {
    const stack = startScript(t, 'dev/start.ts', [], env(dataDir))
    // Stopped with Ctrl-C, as a person stops it, also when the test fails: killed, it would leave its
    // children (the services, Radicale) running. Teardowns run last first, so this one comes before
    // startScript's kill, which then finds nothing to kill.
    t.teardown(async () => {
      if (stack.child.exitCode !== null || stack.child.signalCode !== null) return
      stack.child.kill('SIGINT')
      await Promise.race([stack.exited, new Promise((resolve) => setTimeout(resolve, 20_000))])
    })
    await waitFor(() => stack.output().includes('Local stack is up'), 150_000, () => stack.child.exitCode !== null)
    if (!stack.output().includes('Local stack is up')) throw new Error(`the local stack did not start:\n${stack.output().slice(-2000)}`)
    return stack
  }
  const stop = async (stack: ReturnType<typeof startScript>) => {
    stack.child.kill('SIGINT')
    t.equal(await stack.exited, 0, 'the stack stops cleanly')
  }
  const signIn = async () => await fetchPatiently(`${api}/auth/signin`, { method: 'POST', headers: { ...json, rid: 'emailpassword' }, body: JSON.stringify({ formFields: fields({ email, password }) }) })
  const rootUri = async (dataDir: string) => {
    const { rootPassword } = JSON.parse(await readFile(join(dataDir, 'dev-secrets.json'), 'utf8')) as { rootPassword: string }
    return `mongodb://root:${encodeURIComponent(rootPassword)}@127.0.0.1:${ports.mongo}/?authSource=admin&replicaSet=rs0`
  }
  const syncState = async (dataDir: string) => {
    const client = new MongoClient(await rootUri(dataDir))
    try {
      const sync = client.db('sync')
      const jobs = (await sync.collection<JobRow>('jobs').find({}).toArray()).map((job) => ({ id: String(job._id), type: job.type, status: job.status, runAt: job.runAt.toISOString(), key: job.coalescingKey }))
      const connections = (await sync.collection('connections').find({}).toArray()).map((connection) => ({ id: String(connection._id), provider: connection['provider'] as string, state: connection['state'] as string, userId: connection['userId'] as string }))
      return { jobs, connections }
    } finally {
      await client.close()
    }
  }

  // The stack as a person left it: an account with its own events and a CalDAV calendar connected.
  const first = await temporaryDirectory('calendar-backup-a-')
  const stackA = await start(first)
  const signedUp = await fetchPatiently(`${api}/auth/signup`, { method: 'POST', headers: { ...json, rid: 'emailpassword' }, body: JSON.stringify({ formFields: fields({ name: 'Restored Person', email, password }) }) })
  t.equal(signedUp.status, 200)
  const authorization = `Bearer ${signedUp.headers.get('sx-access-token') ?? ''}`
  for (const [index, title] of ['Dentist', 'Team lunch', 'Piano lesson'].entries()) {
    const created = await fetch(`${api}/event`, { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body: JSON.stringify({ title, startDate: `2027-03-0${index + 1}T09:00:00Z`, endDate: `2027-03-0${index + 1}T10:00:00Z` }) })
    t.equal(created.status, 204)
  }
  const { caldavDemoPassword } = JSON.parse(await readFile(join(first, 'dev-secrets.json'), 'utf8')) as { caldavDemoPassword: string }
  const connected = await fetch(`${api}/connections/caldav`, { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body: JSON.stringify({ serverUrl: `http://127.0.0.1:${ports.caldav}`, username: 'demo', password: caldavDemoPassword }) })
  t.equal(connected.status, 200, await connected.clone().text())
  await waitFor(async () => (await syncState(first)).connections.some((connection) => connection.provider === 'caldav' && connection.state === 'healthy'), 60_000)
  // A pull that failed once and waits for its retry in an hour, as the queue keeps one: the backup
  // must carry work that is queued, not only what is done. (A healthy stack's own pulls run within
  // moments of being queued, so none may be waiting at the instant of the backup.)
  const client = new MongoClient(await rootUri(first))
  const [calendar] = await client.db('sync').collection<{ connectionId: string, calendarId: string, userId: string }>('calendars').find({}).toArray()
  if (calendar === undefined) throw new Error('no CalDAV calendar discovered')
  const now = new Date()
  await client.db('sync').collection('jobs').insertOne({
    _id: new ObjectId(),
    type: 'pull',
    coalescingKey: jobKeys.calendarPull(calendar.connectionId, calendar.calendarId),
    userId: calendar.userId,
    connectionId: calendar.connectionId,
    payload: { calendarId: calendar.calendarId },
    status: 'queued',
    attempts: 1,
    requeueCount: 0,
    runAt: new Date(now.getTime() + 3_600_000),
    rerun: false,
    leaseOwner: null,
    leaseUntil: null,
    lastError: 'CalDavServerError: the server answered 503',
    failedAt: null,
    createdAt: now,
    updatedAt: now
  })
  await client.close()
  const eventsBefore = (await (await fetch(`${api}/event?${range}`, { headers: { authorization } })).json() as Listed[]).map((event) => `${event._id} ${event.title}`).sort()
  t.ok(eventsBefore.length > 3, `${eventsBefore.length} events: the three and the CalDAV calendar's`)
  const before = await syncState(first)
  t.ok(before.jobs.some((job) => job.type === 'pull' && job.status === 'queued'), 'the retry is queued')

  const backupDir = join(await temporaryDirectory('calendar-backup-'), 'backup')
  const backedUp = await run('npm', ['run', '--silent', 'backup', '--', '--local', '--out', backupDir], { cwd: root, env: { ...process.env, ...env(first) } })
  t.match(backedUp.stdout, `backup written to ${backupDir}`)
  t.match(backedUp.stdout, /calendar: \d+ documents/)
  const manifest = JSON.parse(await readFile(join(backupDir, 'backup.json'), 'utf8')) as { databases: Record<string, Record<string, number>> }
  t.same(Object.keys(manifest.databases).sort(), ['calendar', 'sessions', 'sync'], 'the API\'s, Sync\'s and the session core\'s databases')
  t.notMatch(backedUp.stdout, (await rootUri(first)).split(':')[2] ?? 'no password', 'no password printed')
  await stop(stackA)

  // A fresh data directory: the configuration's secrets and the CalDAV server's data, no database.
  const second = await temporaryDirectory('calendar-backup-b-')
  await cp(join(first, 'dev-secrets.json'), join(second, 'dev-secrets.json'))
  await cp(join(first, 'radicale'), join(second, 'radicale'), { recursive: true })
  await mkdir(join(second, 'mongo'), { recursive: true })
  const stackB = await start(second)
  t.match(await (await signIn()).json(), { status: 'WRONG_CREDENTIALS_ERROR' }, 'before the restore the account is not there')
  const restored = await run('npm', ['run', '--silent', 'restore', '--', '--local', '--from', backupDir, '--drop'], { cwd: root, env: { ...process.env, ...env(second) } })
  t.match(restored.stdout, `restored from ${backupDir}`)
  const refused = await run('npm', ['run', '--silent', 'restore', '--', '--local', '--from', backupDir], { cwd: root, env: { ...process.env, ...env(second) } }).then(() => null, (error: { stderr: string }) => error.stderr)
  t.match(refused, /already holds \d+ documents; restore into an empty deployment, or pass --drop/, 'restoring over data needs --drop')
  // The services read what is restored; the stack restarts as an operator's would after a restore.
  await stop(stackB)
  const stackC = await start(second)

  const again = await signIn()
  t.match(await again.json(), { status: 'OK' }, 'the account signs in with its password')
  const restoredAuthorization = `Bearer ${again.headers.get('sx-access-token') ?? ''}`
  const eventsAfter = (await (await fetch(`${api}/event?${range}`, { headers: { authorization: restoredAuthorization } })).json() as Listed[]).map((event) => `${event._id} ${event.title}`).sort()
  t.same(eventsAfter, eventsBefore, 'every event, with its id')
  const after = await syncState(second)
  t.same(after.connections, before.connections, 'every connection, in its state')
  t.same(after.jobs, before.jobs, 'every queued job, with its id and its time')

  // Sync carries on from the restored cursors: a refresh pulls the CalDAV calendar, nothing is imported again.
  // As the web client does: a 503 while Sync is still starting is tried again after its Retry-After.
  let refreshed = await fetch(`${api}/connections/refresh`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: restoredAuthorization }, body: '{}' })
  for (let tries = 1; refreshed.status === 503 && tries < 6; tries++) {
    await new Promise((resolve) => setTimeout(resolve, Number(refreshed.headers.get('retry-after') ?? '5') * 1000))
    refreshed = await fetch(`${api}/connections/refresh`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: restoredAuthorization }, body: '{}' })
  }
  t.equal(refreshed.status, 200)
  await waitFor(async () => (metricValue((await scrape(ports.syncMetrics)).samples, 'sync_job_runs_total', { type: 'pull', outcome: 'done' }) ?? 0) >= 1, 60_000)
  const figures = (await scrape(ports.syncMetrics)).samples
  t.ok((metricValue(figures, 'sync_job_runs_total', { type: 'pull', outcome: 'done' }) ?? 0) >= 1, 'the restored connection was pulled')
  t.equal(metricValue(figures, 'sync_job_runs_total', { type: 'import' }) ?? 0, 0, 'and not imported again')
  t.equal(metricValue(figures, 'sync_connections', { provider: 'caldav', state: 'healthy' }), 1, 'it stays healthy')
  await stop(stackC)
})
