import { test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'yaml'
import type { CaughtMail } from '../../dev/mail/index.js'
import { escapeHtml } from '../../dev/mail/page.js'
import { ed25519KeyPair } from '../../lib/maintenance-token.js'
import { basic, radicaleMissing } from '../../dev/radicale.js'
import { freePort } from '../helper.js'
import { fetchPatiently, startScript, waitFor } from '../processes.js'
import { pageConfig } from '../web-page.js'

function isRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function answers (url: string): Promise<boolean> {
  try {
    return (await fetch(url)).status === 200
  } catch {
    return false
  }
}

/** `npm run cli -- ...` as a user types it; `input` goes to its standard input. */
async function runCli (args: string[], env: Record<string, string>, input = ''): Promise<{ status: number | null, stdout: string, stderr: string }> {
  const child = spawn('npm', ['run', '--silent', 'cli', '--', ...args], {
    cwd: new URL('../../', import.meta.url).pathname,
    env: { ...process.env, CONFIG_FILE: '', ...env },
    stdio: ['pipe', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => { stdout += chunk })
  child.stderr.on('data', (chunk) => { stderr += chunk })
  child.stdin.end(input)
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { status, stdout, stderr }
}

interface GeneratedConfig {
  web: { port: number, url: string }
  backend: { apiUrl: string, originsAllowed: string[] }
  extprovider?: { clientId?: string, clientSecret?: string, endpointBase?: string }
  extprovider2?: { clientId?: string, clientSecret?: string, endpointBase?: string }
  sync: { callbackBaseUrl: string, postConnectRedirectUrl?: string, backendUrl?: string, execution?: string, maintenanceCaller?: string, maintenanceKey?: { x: string } }
}

interface DemoAccount {
  email: string
  name: string
  emailVerified: boolean
  calendars: Array<{ id: string, primary: boolean, summary: string, events: number }>
}

interface MicrosoftDemoAccount {
  email: string
  name: string
  calendars: Array<{ id: string, isDefaultCalendar: boolean, items: number }>
}

// `npm start` with no configuration, as a newcomer runs it: the whole stack comes up, the calendar
// answers in the browser, the Google and Microsoft stand-ins hold their demo accounts, the demo
// Microsoft account signs in and its calendar is imported, the health endpoint answers
// 200, a user can sign up, reset a forgotten password through the mail the stack catches, a crashed
// Sync service comes back by itself, the scheduler's watch maintenance runs and the call that found
// Sync down is reported at the mail catcher, and Ctrl-C stops everything with status 0.
// A start takes about 60 s on a 2-core machine shared at a load average of 20 (measured): the
// waits leave room for that, and the test's time (within the file's 600 s, with three other files beside it) for two starts and the client's run.
test('npm start brings up the local stack', { timeout: 540_000 }, async (t) => {
  const ports = {
    mongo: await freePort(),
    core: await freePort(),
    sync: await freePort(),
    backend: await freePort(),
    backendMetrics: await freePort(),
    syncMetrics: await freePort(),
    mail: await freePort(),
    mailSmtp: await freePort(),
    google: await freePort(),
    microsoft: await freePort(),
    caldav: await freePort(),
    stripe: await freePort(),
    web: await freePort()
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'calendar-stack-'))
  const env = {
    DEV_DATA_DIR: dataDir,
    DEV_MONGO_PORT: String(ports.mongo),
    DEV_SESSION_CORE_PORT: String(ports.core),
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
    // A call every 1.2 s instead of 30 min, so one falls in the seconds a killed Sync is away.
    DEV_MAINTENANCE_MINUTES: '0.02',
    LOG_LEVEL: 'warn'
  }
  const webUrl = `http://localhost:${ports.web}`
  const googleOrigin = `http://127.0.0.1:${ports.google}`
  const demoAccount = async () => await fetch(`${googleOrigin}/_control/accounts/${encodeURIComponent('demo@example.com')}`)
  const microsoftOrigin = `http://127.0.0.1:${ports.microsoft}`
  const microsoftDemoEmail = 'outlook-demo@example.com'
  const microsoftDemoAccount = async () => await fetch(`${microsoftOrigin}/_control/accounts/${encodeURIComponent(microsoftDemoEmail)}`)
  const api = `http://127.0.0.1:${ports.backend}/api`
  const mailbox = `http://127.0.0.1:${ports.mail}`
  const email = 'newcomer@example.com'
  const post = async (path: string, body: unknown) => await fetch(`${api}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', rid: 'emailpassword' },
    body: JSON.stringify(body)
  })
  const fields = (values: Record<string, string>) => Object.entries(values).map(([id, value]) => ({ id, value }))
  // The whole answer, so a failure shows what came instead.
  const signIn = async (password: string) => {
    const answer = await fetchPatiently(`${api}/auth/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', rid: 'emailpassword' },
      body: JSON.stringify({ formFields: fields({ email, password }) })
    })
    return { httpStatus: answer.status, ...await answer.json() as { status?: string, code?: string } }
  }

  const stack = startScript(t, 'dev/start.ts', [], env)
  await waitFor(() => stack.output().includes('Local stack is up'), 150_000, () => stack.child.exitCode !== null)
  t.match(stack.output(), 'Local stack is up', 'the stack reports its URLs')
  t.match(stack.output(), `http://localhost:${ports.backend}/api`)
  t.match(stack.output(), `mail catcher    ${mailbox}`, 'and the mail catcher page')
  t.match(stack.output(), /Local stack is up:\n {2}calendar {8}(\S+)\n/, 'the calendar comes first')
  t.match(stack.output(), `calendar        ${webUrl}/day`)
  t.match(stack.output(), `Google stand-in ${googleOrigin}   (control page: ${googleOrigin}/_control/)`)
  t.match(stack.output(), 'demo account demo@example.com', 'and how to connect the demo account')
  t.match(stack.output(), `Microsoft       ${microsoftOrigin}   (stand-in; control page: ${microsoftOrigin}/_control/)`, 'the Microsoft stand-in is listed')
  t.match(stack.output(), `demo account ${microsoftDemoEmail}`, 'with its demo account')
  t.match(stack.output(), `metrics         http://127.0.0.1:${ports.backendMetrics}/metrics (backend), http://127.0.0.1:${ports.syncMetrics}/metrics (Sync)`, 'and the internal ports')
  for (const [service, port] of [['backend', ports.backendMetrics], ['sync', ports.syncMetrics]] as const) {
    const scraped = await fetchPatiently(`http://127.0.0.1:${port}/metrics`, {})
    t.match(await scraped.text(), new RegExp(`^calendar_build_info\\{[^}]*service="${service}"[^}]*\\} 1$`, 'm'), `${service}'s metrics answer`)
    t.equal((await fetchPatiently(`http://127.0.0.1:${port}/ready`, {})).status, 200, `${service} is ready`)
  }

  const maintenanceUrl = `http://127.0.0.1:${ports.sync}/maintenance`
  const acceptedCall = /^local stack: maintenance: renewed \d+, stopped \d+, failed \d+$/m
  await t.test('the scheduler calls watch maintenance, and Sync counts the run', async (t) => {
    t.match(stack.output(), `maintenance     POST ${maintenanceUrl} every 0.02 min (a failure is reported at ${mailbox}/hooks/maintenance, shown on the mail catcher's page)`, 'the stack says where maintenance goes and where a failure shows')
    t.ok(await waitFor(() => acceptedCall.test(stack.stdout()), 30_000, () => stack.child.exitCode !== null), 'the loop prints each accepted call')
    let done = 0
    await waitFor(async () => {
      const scraped = await (await fetch(`http://127.0.0.1:${ports.syncMetrics}/metrics`)).text()
      done = Number(/^sync_maintenance_runs_total\{[^}]*outcome="done"[^}]*\} (\d+)$/m.exec(scraped)?.[1] ?? 0)
      return done > 0
    }, 30_000)
    t.ok(done >= 1, `Sync accepted the scheduler's token and counted the run (sync_maintenance_runs_total{outcome="done"} ${done})`)
  })

  const health = await fetch(`${api}/health`)
  t.equal(health.status, 200, 'the backend starts with the generated configuration, Google included')
  t.equal((await health.json() as { status: string }).status, 'ok')

  const configPath = join(dataDir, 'config.dev.yaml')
  const config = parse(await readFile(configPath, 'utf8')) as GeneratedConfig
  await t.test('the generated configuration points at the web client and the Google stand-in', async (t) => {
    t.equal(config.web.url, webUrl)
    t.equal(config.web.port, ports.web)
    t.ok(config.backend.originsAllowed.includes(webUrl), 'the web client may call the API')
    t.equal(config.extprovider?.endpointBase, googleOrigin)
    t.equal(config.extprovider?.clientId, 'local-calendar.apps.googleusercontent.com')
    t.ok((config.extprovider?.clientSecret ?? '').length >= 32, 'with a generated client secret')
    t.notMatch(stack.output(), config.extprovider?.clientSecret ?? 'no secret', 'which never reaches the output')
    t.equal(config.sync.callbackBaseUrl, `http://localhost:${ports.backend}/sync`)
    t.equal(config.sync.postConnectRedirectUrl, webUrl)
    t.equal(config.sync.backendUrl, `http://127.0.0.1:${ports.backend}`)
    t.equal(config.sync.execution, 'active')
    t.equal(config.sync.maintenanceCaller, 'scheduler@calendar.invalid', 'the scheduler is the trusted maintenance caller')
    const { schedulerSigningSeed } = JSON.parse(await readFile(join(dataDir, 'dev-secrets.json'), 'utf8')) as { schedulerSigningSeed: string }
    t.equal(config.sync.maintenanceKey?.x, ed25519KeyPair(Buffer.from(schedulerSigningSeed, 'base64url')).publicJwk.x, 'with the public half of the key kept with the data')
    t.notMatch(await readFile(configPath, 'utf8'), schedulerSigningSeed, 'whose private half the services\' configuration does not hold')
  })

  await t.test('the generated configuration names the Microsoft stand-in as extprovider2', async (t) => {
    t.equal(config.extprovider2?.endpointBase, microsoftOrigin)
    t.match(config.extprovider2?.clientId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'an application id shaped like Entra\'s')
    t.ok((config.extprovider2?.clientSecret ?? '').length >= 32, 'with a generated client secret')
    t.notMatch(stack.output(), config.extprovider2?.clientSecret ?? 'no secret', 'which never reaches the output')
  })

  await t.test('the calendar answers in the browser', async (t) => {
    const page = await fetch(`${webUrl}/day`)
    t.equal(page.status, 200)
    t.match(page.headers.get('content-type'), 'text/html')
    const html = await page.text()
    const script = /<script[^>]+src="([^"]+\.js)"/.exec(html)?.[1]
    t.ok(script, 'the page loads the app\'s JavaScript')
    const asset = await fetch(new URL(script ?? '/missing.js', webUrl))
    t.equal(asset.status, 200)
    t.match(asset.headers.get('content-type'), 'javascript')
    const values = pageConfig(html)
    t.equal(values?.['apiUrl'], `http://localhost:${ports.backend}/api`, 'served for this backend')
    t.equal(values?.['microsoftClientId'], config.extprovider2?.clientId ?? 'no client id', 'offering Microsoft sign-in with the registered client')
    t.equal(values?.['microsoftAuthorizationEndpoint'], `${microsoftOrigin}/common/oauth2/v2.0/authorize`, 'through the Microsoft stand-in')
  })

  await t.test('the Google stand-in holds the demo account and the OAuth client', async (t) => {
    const discovery = await (await fetch(`${googleOrigin}/.well-known/openid-configuration`)).json() as { issuer: string, authorization_endpoint: string }
    t.equal(discovery.issuer, googleOrigin)
    t.equal(discovery.authorization_endpoint, `${googleOrigin}/o/oauth2/v2/auth`)
    const answer = await demoAccount()
    t.equal(answer.status, 200)
    const demo = await answer.json() as DemoAccount
    t.equal(demo.name, 'Demo User')
    t.equal(demo.emailVerified, true)
    t.equal(demo.calendars.length, 2, 'a primary calendar and a second one')
    t.ok(demo.calendars.every((calendar) => calendar.events > 0), 'each with events')
    const events = await (await fetch(`${googleOrigin}/_control/calendars/demo%40example.com/events`)).json() as { items: Array<{ recurrence?: string[], recurringEventId?: string, status: string, start?: { date?: string } }> }
    t.ok(events.items.some((event) => event.start?.date !== undefined), 'an all-day event')
    t.ok(events.items.some((event) => event.recurrence !== undefined), 'a series')
    t.ok(events.items.some((event) => event.recurringEventId !== undefined && event.status === 'cancelled'), 'with a cancelled occurrence')
    t.ok(events.items.some((event) => event.recurringEventId !== undefined && event.status === 'confirmed'), 'and a changed one')
    const { clients } = await (await fetch(`${googleOrigin}/_control/clients`)).json() as { clients: Array<{ clientId: string, redirectUris: string[] }> }
    t.same(clients, [{
      clientId: config.extprovider?.clientId,
      redirectUris: [`http://localhost:${ports.backend}/sync/oauth/google/callback`, `${webUrl}/auth/extprovider/callback`]
    }])
  })

  await t.test('the Microsoft stand-in holds the demo account and the OAuth client', async (t) => {
    const discovery = await fetch(`${microsoftOrigin}/common/v2.0/.well-known/openid-configuration`)
    t.equal(discovery.status, 200, 'the stand-in answers')
    t.match(await discovery.json(), { authorization_endpoint: `${microsoftOrigin}/common/oauth2/v2.0/authorize` })
    const answer = await microsoftDemoAccount()
    t.equal(answer.status, 200)
    const demo = await answer.json() as MicrosoftDemoAccount
    t.equal(demo.name, 'Outlook Demo')
    const calendar = demo.calendars.find((entry) => entry.isDefaultCalendar)
    t.ok((calendar?.items ?? 0) >= 3, 'its default calendar holds the demo events')
    const { clients } = await (await fetch(`${microsoftOrigin}/_control/clients`)).json() as { clients: Array<{ clientId: string, redirectUris: string[] }> }
    t.match(clients, [{
      clientId: config.extprovider2?.clientId,
      redirectUris: [`http://localhost:${ports.backend}/sync/oauth/microsoft/callback`, `${webUrl}/auth/extprovider/callback`]
    }])
  })

  // What the web client does after "Continue with Microsoft" (test/e2e/stack.ts signInWithProvider),
  // over HTTP: the authorization URL for the web callback, consent at the stand-in without its page,
  // and the sign-in-up route with the code the browser came back with.
  await t.test('the Microsoft demo account signs in and its calendar is imported', async (t) => {
    const callback = `${webUrl}/auth/extprovider/callback`
    const begun = await fetch(`${api}/auth/authorisationurl?thirdPartyId=microsoft&redirectURIOnProviderDashboard=${encodeURIComponent(callback)}`)
    t.equal(begun.status, 200)
    const { urlWithQueryParams, pkceCodeVerifier } = await begun.json() as { urlWithQueryParams: string, pkceCodeVerifier?: string }
    const consent = new URL(urlWithQueryParams)
    t.equal(consent.origin, microsoftOrigin, 'the sign-in goes to the stand-in')
    consent.searchParams.set('login_hint', microsoftDemoEmail)
    consent.searchParams.set('approve', '1')
    const back = new URL((await fetch(consent, { redirect: 'manual' })).headers.get('location') ?? 'http://missing.invalid/')
    t.equal(`${back.origin}${back.pathname}`, callback, 'the stand-in sends the browser back to the web client')
    const signedIn = await fetch(`${api}/auth/signinup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', rid: 'thirdparty' },
      body: JSON.stringify({
        thirdPartyId: 'microsoft',
        redirectURIInfo: {
          redirectURIOnProviderDashboard: callback,
          redirectURIQueryParams: Object.fromEntries(back.searchParams),
          ...(pkceCodeVerifier === undefined ? {} : { pkceCodeVerifier })
        }
      })
    })
    t.equal(signedIn.status, 200)
    t.match(await signedIn.json(), { status: 'OK', summary: { provider: 'microsoft', calendar: 'import' } })
    const accessToken = signedIn.headers.get('sx-access-token')
    t.ok(accessToken, 'signed in as the demo account')
    const authorization = `Bearer ${accessToken ?? ''}`
    const now = Date.now()
    const range = `start=${new Date(now - 86_400_000).toISOString()}&end=${new Date(now + 7 * 86_400_000).toISOString()}`
    let titles: string[] = []
    // The import arrives page by page (the weeks around today first): wait for all of it.
    const expected = ['Lunch with Alex', 'Dentist', 'Company offsite', 'Team stand-up (Outlook)']
    await waitFor(async () => {
      const listed = await (await fetch(`${api}/event?${range}`, { headers: { authorization } })).json() as Array<{ title: string }>
      titles = Array.isArray(listed) ? listed.map((event) => event.title) : []
      return expected.every((title) => titles.includes(title))
    }, 20_000)
    t.ok(expected.every((title) => titles.includes(title)),
      `the Sync service imported the Outlook calendar (${titles.join(', ')})`)
  })

  const signUp = await post('/auth/signup', { formFields: fields({ name: 'New Comer', email, password: 'first-try-pw-1' }) })
  t.equal(signUp.status, 200)
  t.equal((await signUp.json() as { status: string }).status, 'OK')
  const accessToken = signUp.headers.get('sx-access-token')
  t.ok(accessToken, 'a session was issued through the whole stack')

  // The command-line client (client/cli.ts, `npm run cli`) against this stack, as a user runs it.
  await t.test('the command-line client signs up, adds and lists an event, and watches the stream', async (t) => {
    const configDir = await mkdtemp(join(tmpdir(), 'calendar-cli-'))
    const cliEnv = { CALENDAR_API_URL: api, CALENDAR_CONFIG_DIR: configDir, CALENDAR_PASSWORD: 'cli-password-1' }
    const cli = async (...args: string[]) => await runCli(args, cliEnv)

    const signedUp = await cli('signup', '--name', 'Cli User', '--email', 'cli-user@example.com')
    t.equal(signedUp.status, 0, signedUp.stderr)
    t.match(signedUp.stdout, /^signed up \(user [0-9a-f]{24}\)\n$/)
    const tokenFile = join(configDir, 'tokens.json')
    t.equal((await stat(tokenFile)).mode & 0o777, 0o600, 'the session file is readable by its owner only')
    t.notMatch(await readFile(tokenFile, 'utf8'), 'cli-password-1', 'and holds no password')
    t.match((await cli('whoami')).stdout, /^cli-user@example\.com \(Cli User\) [0-9a-f]{24}\n$/)

    const watch = startScript(t, 'client/cli.ts', ['watch'], cliEnv)
    await waitFor(() => watch.stdout().includes('"type":"userMetadataChanged"'), 30_000, () => watch.child.exitCode !== null)
    t.match(watch.stdout(), /^\{"type":"userMetadataChanged"/, 'watch prints the replay first, as JSON')

    const added = await cli('add', '--title', 'Written from the CLI', '--start', '2026-11-24T09:00:00Z', '--end', '2026-11-24T10:00:00Z')
    t.equal(added.status, 0, added.stderr)
    const eventId = added.stdout.trim()
    t.match(eventId, /^[0-9a-f]{24}$/, 'add prints the new event\'s id')
    const listed = await cli('list', '--from', '2026-11-24', '--to', '2026-11-25')
    t.equal(listed.stdout, `2026-11-24T09:00:00Z  2026-11-24T10:00:00Z  Written from the CLI  ${eventId}\n`)

    t.ok(await waitFor(() => watch.stdout().includes(eventId), 20_000, () => watch.child.exitCode !== null), 'the write came back on the stream through the Sync service')
    const line = watch.stdout().split('\n').find((candidate) => candidate.includes(eventId)) ?? '{}'
    t.same(JSON.parse(line), { type: 'eventsChanged', reasons: ['event'], refetchAll: false, eventIds: [eventId] })
    watch.child.kill('SIGINT')
    t.equal(await watch.exited, 0, 'Ctrl-C ends watch cleanly')

    t.equal((await cli('signout')).stdout, 'signed out\n')
    const after = await cli('list')
    t.equal(after.status, 1)
    t.equal(after.stderr, 'not signed in: run signin first\n')
    const wrong = await runCli(['signin', '--email', 'cli-user@example.com'], { ...cliEnv, CALENDAR_PASSWORD: 'not-the-password' })
    t.same([wrong.status, wrong.stderr], [1, 'wrong email or password\n'])
    const usage = await cli('list', '--from', 'yesterday')
    t.same([usage.status, usage.stderr.split('\n')[0]], [2, 'not a date: yesterday'])
    const signedIn = await runCli(['signin', '--email', 'cli-user@example.com'], { ...cliEnv, CALENDAR_PASSWORD: '' }, 'cli-password-1\n')
    t.equal(signedIn.status, 0, 'the password can come on standard input')
    t.match((await cli('list', '--from', '2026-11-24', '--to', '2026-11-25', '--json')).stdout, `"_id":"${eventId}"`)
  })

  const caldavOrigin = `http://127.0.0.1:${ports.caldav}`
  await t.test('Radicale runs with a demo account, which the new user connects', { skip: radicaleMissing() ?? false }, async (t) => {
    t.match(stack.output(), `CalDAV server   ${caldavOrigin}   (Radicale; data in ${join(dataDir, 'radicale')})`)
    t.match(stack.output(), `user name demo and the app password kept as\ncaldavDemoPassword in ${join(dataDir, 'dev-secrets.json')}`)
    const { caldavDemoPassword } = JSON.parse(await readFile(join(dataDir, 'dev-secrets.json'), 'utf8')) as { caldavDemoPassword: string }
    t.notMatch(stack.output(), caldavDemoPassword, 'the password itself is not printed')
    const authorization = `Bearer ${accessToken ?? ''}`
    const connected = await fetch(`${api}/connections/caldav`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ serverUrl: caldavOrigin, username: 'demo', password: caldavDemoPassword })
    })
    t.equal(connected.status, 200)
    t.match(await connected.json(), { created: true, calendars: 1 })
    const now = Date.now()
    const range = `start=${new Date(now - 86_400_000).toISOString()}&end=${new Date(now + 7 * 86_400_000).toISOString()}`
    let titles: string[] = []
    await waitFor(async () => {
      const listed = await (await fetch(`${api}/event?${range}`, { headers: { authorization } })).json() as Array<{ title: string }>
      titles = listed.map((event) => event.title)
      return titles.includes('Dinner with friends')
    }, 20_000)
    t.ok(titles.includes('Yoga') && titles.includes('Weekend trip') && titles.includes('Dinner with friends'), 'the demo calendar\'s events were imported')
  })

  await t.test('a forgotten password is reset through the mail the stack catches', async (t) => {
    const requested = await post('/auth/user/password/reset/token', { formFields: fields({ email }) })
    t.equal((await requested.json() as { status: string }).status, 'OK')

    let mail: CaughtMail | undefined
    await waitFor(async () => {
      const mails = await (await fetch(`${mailbox}/messages.json`)).json() as CaughtMail[]
      // The welcome sequence (the email block is on in the local stack) writes to the same address.
      mail = mails.find((candidate) => candidate.envelope.to.includes(email) && candidate.subject === 'Password reset instructions')
      return mail !== undefined
    }, 10_000)
    t.ok(mail, 'the reset mail arrived in the mail catcher')
    t.equal(mail?.envelope.from, 'calendar@localhost')

    const link = new URL(mail?.links[0] ?? 'http://missing.invalid/')
    t.equal(`${link.origin}${link.pathname}`, `${webUrl}/day`, 'the link leads to the web app (web.url)')
    t.equal(link.searchParams.get('auth'), 'reset')
    const token = link.searchParams.get('token') ?? ''
    t.ok(token.length > 10, 'with its token')
    const page = await (await fetch(mailbox)).text()
    t.match(page, `href="${link.href.replaceAll('&', '&amp;')}"`, 'a person can click it on the mail catcher page')

    const reset = await post('/auth/user/password/reset', { token, formFields: fields({ password: 'a-brand-new-pw-2' }) })
    t.equal((await reset.json() as { status: string }).status, 'OK')
    t.match(await signIn('first-try-pw-1'), { status: 'WRONG_CREDENTIALS_ERROR' }, 'the old password no longer works')
    t.match(await signIn('a-brand-new-pw-2'), { status: 'OK' }, 'the new one does')
  })

  const pids: { sync?: number, backend?: number } = {}
  await t.test('a killed Sync service is restarted and the backend stays up', async (t) => {
    pids.sync = Number(/Sync service {4}\S+ {3}\(pid (\d+)\)/.exec(stack.output())?.[1])
    pids.backend = Number(/backend API .*pid (\d+)\)/.exec(stack.output())?.[1])
    t.ok(pids.sync > 0 && pids.backend > 0, 'the stack names the pids of its services')
    process.kill(pids.sync, 'SIGKILL')

    const restartLine = new RegExp(`local stack: Sync service \\(pid ${pids.sync}\\) exited with signal SIGKILL; restarting in \\d+ ms \\(attempt 1\\)`)
    const startedAgain = /local stack: Sync service started again \(pid (\d+)\)/
    t.ok(await waitFor(() => startedAgain.test(stack.output()), 15_000, () => stack.child.exitCode !== null), 'started again')
    t.match(stack.output(), restartLine, 'the restart is logged with its cause, delay and attempt')
    const newSync = Number(startedAgain.exec(stack.output())?.[1])
    t.not(newSync, pids.sync)
    pids.sync = newSync
    t.ok(await waitFor(() => answers(`http://127.0.0.1:${ports.sync}/health/live`), 30_000), 'Sync answers health again')

    // Sync was away for seconds, the scheduler calls every 1.2 s: at least one call found it down.
    const unreachable = `maintenance: ${maintenanceUrl} could not be reached: fetch failed (ECONNREFUSED)`
    let notice: CaughtMail | undefined
    await waitFor(async () => {
      const entries = await (await fetch(`${mailbox}/messages.json`)).json() as CaughtMail[]
      notice = entries.find((entry) => entry.source === 'webhook' && entry.notice?.['reason'] === unreachable)
      return notice !== undefined
    }, 10_000)
    t.match(notice, { subject: `Calendar: watch maintenance failed (${unreachable}); the scheduler tries again at its next run`, notice: { event: 'maintenance_failed', at: /^\d{4}-/ } }, 'the failed maintenance call was reported at the mail catcher')
    t.match(stack.stderr(), `local stack: ${unreachable}; trying again in 1.2 s`, 'and said on the stack\'s output')
    t.match(await (await fetch(mailbox)).text(), `<h2>${escapeHtml(notice?.subject ?? 'no notice')}</h2>`, 'a developer sees it on the mail catcher\'s page')
    const failedAt = stack.stdout().length
    t.ok(await waitFor(() => acceptedCall.test(stack.stdout().slice(failedAt)), 30_000), 'the next calls are accepted again')

    t.equal(stack.child.exitCode, null, 'the stack kept running')
    t.ok(isRunning(pids.backend ?? 0), 'the backend process was left alone')
    t.equal((await fetch(`${api}/health`)).status, 200, 'and answers')
    t.match(await signIn('a-brand-new-pw-2'), { status: 'OK' }, 'and signs in')
  })

  const { schedulerSigningSeed } = JSON.parse(await readFile(join(dataDir, 'dev-secrets.json'), 'utf8')) as { schedulerSigningSeed: string }
  t.notMatch(stack.output(), schedulerSigningSeed, 'the scheduler\'s signing key never reaches the output')
  stack.child.kill('SIGINT')
  t.equal(await stack.exited, 0, 'Ctrl-C stops everything cleanly, after a restart too')
  t.notOk(isRunning(pids.sync ?? 0), 'the restarted Sync service is stopped')
  t.notOk(isRunning(pids.backend ?? 0), 'the backend is stopped')

  // The same data directory: the account, with its new password, is still there.
  const again = startScript(t, 'dev/start.ts', [], env)
  t.ok(await waitFor(() => again.output().includes('Local stack is up'), 150_000, () => again.child.exitCode !== null), 'the stack starts again on the same data')
  t.match(await signIn('a-brand-new-pw-2'), { httpStatus: 200, status: 'OK' }, 'the account survived the restart')
  t.equal((await demoAccount()).status, 200, 'the demo account is there again in the new Google stand-in')
  t.equal((await microsoftDemoAccount()).status, 200, 'and the Microsoft one in the new Microsoft stand-in')
  const configAgain = parse(await readFile(configPath, 'utf8')) as GeneratedConfig
  t.equal(configAgain.extprovider?.clientSecret, config.extprovider?.clientSecret, 'the client secret is kept with the data')
  t.equal(configAgain.extprovider2?.clientSecret, config.extprovider2?.clientSecret, 'the Microsoft one too')
  if (radicaleMissing() === null) {
    const { caldavDemoPassword } = JSON.parse(await readFile(join(dataDir, 'dev-secrets.json'), 'utf8')) as { caldavDemoPassword: string }
    const demoCalendar = await fetch(`${caldavOrigin}/demo/personal/`, { headers: { authorization: basic('demo', caldavDemoPassword) } })
    t.equal((await demoCalendar.text()).match(/BEGIN:VEVENT/g)?.length, 3, 'Radicale kept the demo calendar, and it was not seeded twice')
  }
  again.child.kill('SIGINT')
  t.equal(await again.exited, 0)
  t.notOk(await answers(`${caldavOrigin}/.web/`), 'Radicale stopped with the stack')
})
