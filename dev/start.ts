// `npm start`. With a configuration file (--config FILE, CONFIG_FILE or ./config.yaml) it runs the
// backend alone against the services named there. Without one it runs the whole system on this
// machine: the MongoDB and session-core stand-ins (data under .data/), the Sync service and the
// backend, with a generated development configuration, a mail catcher that receives the account
// emails, the Google and Microsoft stand-ins with a demo account each to sign in with or connect,
// Radicale (a real CalDAV server, when Debian's package is installed) with a demo account to
// connect, the web client, and the watch-maintenance scheduler of the self-host stack (the same
// loop, every DEV_MAINTENANCE_MINUTES, 30 by default), whose failure notices land at the mail
// catcher. The Sync service and the backend are supervised: one that dies is
// restarted with backoff, as a container runtime would, and the rest keeps running (a service that
// never becomes healthy at start still ends the stack with status 1). Ctrl-C (or SIGTERM) stops
// everything, the last started first. DEV_DATA_DIR and
// DEV_{MONGO,SESSION_CORE,SYNC,BACKEND,MAIL,MAIL_SMTP,GOOGLE,MICROSOFT,CALDAV,WEB}_PORT move it when
// the defaults are taken.
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stringify } from 'yaml'
import { ed25519KeyPair, maintenanceAudience, type Ed25519PublicJwk } from '../lib/maintenance-token.js'
import { STACK_NAMES } from '../lib/production-config.js'
import { maintenanceLoop, type SchedulerFile } from '../lib/stack-steps.js'
import { startWebServer } from '../web/server.js'
import { DEMO_ACCOUNT, seedGoogleDemo } from './google-demo.js'
import { MICROSOFT_DEMO_ACCOUNT, seedMicrosoftDemo } from './microsoft-demo.js'
import { CALDAV_DEMO_USER, seedCalDavDemo } from './caldav-demo.js'
import { startGoogle } from './google/index.js'
import { MAINTENANCE_HOOK_PATH } from './mail/hooks.js'
import { startMailCatcher } from './mail/index.js'
import { DEFAULT_PRICE, startStripeStandIn } from './stripe/index.js'
import { startMicrosoft } from './microsoft/index.js'
import { startMongo } from './mongo/index.js'
import { radicaleMissing, startRadicale } from './radicale.js'
import { startSessionCore } from './session-core/index.js'
import { supervise, type Supervisor } from './supervisor.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
const configGiven = args.some((arg) => arg === '--config' || arg.startsWith('--config=')) ||
  (process.env.CONFIG_FILE !== undefined && process.env.CONFIG_FILE !== '') ||
  existsSync(resolve('config.yaml'))

interface DevSecrets {
  rootPassword: string
  apiPassword: string
  syncPassword: string
  sessionsPassword: string
  sessionsKey: string
  internalAuthToken: string
  serviceToken: string
  credentialEncryptionKey: string
  googleClientSecret: string
  microsoftClientSecret: string
  caldavDemoPassword: string
  resendApiKey: string
  resendWebhookSecret: string
  unsubscribeSecret: string
  /** The scheduler's Ed25519 seed (base64url), as `npm run setup` makes it for compose. */
  schedulerSigningSeed: string
}

const PORTS = {
  mongo: Number(process.env.DEV_MONGO_PORT ?? 27117),
  sessionCore: Number(process.env.DEV_SESSION_CORE_PORT ?? 3567),
  sync: Number(process.env.DEV_SYNC_PORT ?? 3010),
  backend: Number(process.env.DEV_BACKEND_PORT ?? 3000),
  backendMetrics: Number(process.env.DEV_BACKEND_METRICS_PORT ?? 9464),
  syncMetrics: Number(process.env.DEV_SYNC_METRICS_PORT ?? 9465),
  mail: Number(process.env.DEV_MAIL_PORT ?? 8025),
  mailSmtp: Number(process.env.DEV_MAIL_SMTP_PORT ?? 1025),
  google: Number(process.env.DEV_GOOGLE_PORT ?? 4010),
  microsoft: Number(process.env.DEV_MICROSOFT_PORT ?? 4020),
  caldav: Number(process.env.DEV_CALDAV_PORT ?? 5232),
  stripe: Number(process.env.DEV_STRIPE_PORT ?? 12111),
  web: Number(process.env.DEV_WEB_PORT ?? 9080)
}

// Compose's scheduler calls every 30 minutes; a test waits seconds, not half an hour, for a call.
const MAINTENANCE_MINUTES = Number(process.env.DEV_MAINTENANCE_MINUTES ?? 30)

// The browser reaches the web client and the backend as localhost, so the session cookies, the
// allowed origin and the OAuth redirect addresses all name the same host.
const WEB_URL = `http://localhost:${PORTS.web}`
const BACKEND_ORIGIN = `http://localhost:${PORTS.backend}`

// The OAuth client the local stack registers at the Google stand-in. The id is no secret (Google
// shows it to every browser); the secret is made once with the other secrets.
const GOOGLE_CLIENT_ID = 'local-calendar.apps.googleusercontent.com'
// The same for Microsoft, shaped like an Entra application (client) id, which is a GUID.
const MICROSOFT_CLIENT_ID = '6f1c0ca1-5eed-4d3e-9a1b-10ca15a7ac4e'

// Secrets are made once and kept with the data, so restarting keeps everyone signed in. A data
// directory from before a secret existed gets just that one added; the others stay as they are.
async function devSecrets (dataDir: string): Promise<DevSecrets> {
  const path = join(dataDir, 'dev-secrets.json')
  const kept = existsSync(path) ? JSON.parse(await readFile(path, 'utf8')) as Partial<DevSecrets> : {}
  // Hex only: the session core accepts letters, digits, '=' and '-' in its API key.
  const token = () => randomBytes(24).toString('hex')
  const secrets: DevSecrets = {
    rootPassword: kept.rootPassword ?? token(),
    apiPassword: kept.apiPassword ?? token(),
    syncPassword: kept.syncPassword ?? token(),
    sessionsPassword: kept.sessionsPassword ?? token(),
    sessionsKey: kept.sessionsKey ?? token(),
    internalAuthToken: kept.internalAuthToken ?? token(),
    serviceToken: kept.serviceToken ?? token(),
    credentialEncryptionKey: kept.credentialEncryptionKey ?? randomBytes(32).toString('base64'),
    googleClientSecret: kept.googleClientSecret ?? token(),
    microsoftClientSecret: kept.microsoftClientSecret ?? token(),
    caldavDemoPassword: kept.caldavDemoPassword ?? randomBytes(9).toString('base64url'),
    // Shaped like Resend's: an API key `re_...`, and a webhook signing secret `whsec_<base64>`.
    resendApiKey: kept.resendApiKey ?? `re_${token()}`,
    resendWebhookSecret: kept.resendWebhookSecret ?? `whsec_${randomBytes(24).toString('base64')}`,
    unsubscribeSecret: kept.unsubscribeSecret ?? token(),
    schedulerSigningSeed: kept.schedulerSigningSeed ?? randomBytes(32).toString('base64url')
  }
  if (Object.keys(secrets).some((key) => !(key in kept))) {
    await writeFile(path, JSON.stringify(secrets, null, 2), { mode: 0o600 })
    // The mode above applies only to a new file; a rewritten one is narrowed too.
    await chmod(path, 0o600)
  }
  return secrets
}

function mongoUri (user: string, password: string, database: string, authSource: string): string {
  return `mongodb://${user}:${encodeURIComponent(password)}@127.0.0.1:${PORTS.mongo}/${database}?authSource=${authSource}&replicaSet=rs0`
}

// Where Google sends the browser back after a grant: the Sync service's callback (the backend
// proxies it under /sync) for a calendar connect, and the web client's route for provider sign-in.
// Microsoft's are the same two, with Sync's callback for a Microsoft connect.
function redirectUris (provider: 'google' | 'microsoft'): string[] {
  return [`${BACKEND_ORIGIN}/sync/oauth/${provider}/callback`, `${WEB_URL}/auth/extprovider/callback`]
}

// Billing runs against the Stripe stand-in with keys made from the local secrets (test-mode shaped).
function stripeKeys (secrets: DevSecrets) {
  const derive = (label: string) => createHash('sha256').update(`${label}:${secrets.internalAuthToken}`).digest('hex').slice(0, 32)
  return { secretKey: `sk_test_${derive('stripe-secret')}`, webhookSecret: `whsec_${derive('stripe-webhook')}`, publishableKey: `pk_test_${derive('stripe-publishable')}` }
}

function developmentConfig (secrets: DevSecrets, sessionsUri: string, mail: { smtpPort: number, url: string }, googleOrigin: string, microsoftOrigin: string, stripeOrigin: string, maintenanceKey: Ed25519PublicJwk) {
  const mailSmtpPort = mail.smtpPort
  return {
    runtime: { nodeEnv: 'development', timezone: 'UTC', logLevel: process.env.LOG_LEVEL ?? 'info' },
    web: { port: PORTS.web, url: WEB_URL },
    backend: {
      port: PORTS.backend,
      apiUrl: `${BACKEND_ORIGIN}/api`,
      originsAllowed: [WEB_URL],
      serviceToken: secrets.serviceToken,
      metricsPort: PORTS.backendMetrics
    },
    database: { uri: mongoUri('calendar', secrets.apiPassword, 'calendar', 'calendar') },
    sessions: {
      uri: sessionsUri,
      key: secrets.sessionsKey,
      // The mail catcher accepts any login. A password is given all the same: nodemailer refuses
      // to log in with an empty one to a server that offers AUTH.
      smtp: {
        host: '127.0.0.1',
        port: mailSmtpPort,
        secure: false,
        user: 'calendar',
        password: 'local-mail-catcher',
        fromName: 'Calendar (local)',
        fromEmail: 'calendar@localhost'
      }
    },
    extprovider: {
      clientId: GOOGLE_CLIENT_ID,
      clientSecret: secrets.googleClientSecret,
      endpointBase: googleOrigin
    },
    // The backend signs in with it and Sync imports with it: one application, as in a deployment.
    extprovider2: {
      clientId: MICROSOFT_CLIENT_ID,
      clientSecret: secrets.microsoftClientSecret,
      endpointBase: microsoftOrigin
    },
    billing: { ...stripeKeys(secrets), priceId: DEFAULT_PRICE.id, endpointBase: stripeOrigin },
    sync: {
      port: PORTS.sync,
      metricsPort: PORTS.syncMetrics,
      databaseUri: mongoUri('sync', secrets.syncPassword, 'sync', 'sync'),
      internalAuthToken: secrets.internalAuthToken,
      // The browser comes back from Google through the backend, which proxies /sync to the Sync
      // service, so the Sync host itself never has to be reachable from the browser.
      callbackBaseUrl: `${BACKEND_ORIGIN}/sync`,
      postConnectRedirectUrl: WEB_URL,
      serviceUrl: `http://127.0.0.1:${PORTS.sync}`,
      backendUrl: `http://127.0.0.1:${PORTS.backend}`,
      // The stack's own Radicale listens on loopback, which Sync otherwise refuses for a user's server.
      privateAddressAllowlist: ['127.0.0.1'],
      execution: 'active',
      enforceLeastPrivilege: true,
      apiDatabase: 'calendar',
      credentialEncryptionKey: secrets.credentialEncryptionKey,
      // The public half only: the private one stays with the scheduler (this process), as in compose,
      // where neither service's copy of the configuration holds it.
      maintenanceCaller: STACK_NAMES.maintenanceCaller,
      maintenanceKey
    },
    // The welcome sequence through Resend's API, answered by the mail catcher; days are minutes,
    // so a person who signs up sees the welcome mail within a minute and the next one two later.
    email: {
      provider: 'mailer',
      apiKey: secrets.resendApiKey,
      from: 'Calendar (local) <calendar@localhost>',
      webhookSecret: secrets.resendWebhookSecret,
      unsubscribeSecret: secrets.unsubscribeSecret,
      scheduleProfile: 'fast',
      apiBase: mail.url
    }
  }
}

function superviseService (name: string, script: string, configPath: string): Supervisor {
  return supervise({
    name,
    start: () => spawn(process.execPath, ['--import', 'tsx', script, '--config', configPath], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, CONFIG_FILE: '' }
    })
  })
}

async function waitForHealth (name: string, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url)
      if (response.ok) return
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`the ${name} did not answer 200 at ${url} within ${timeoutMs / 1000} s`)
}

// What runs, in start order; stopping takes them down from the last one.
const running: Array<{ name: string, stop: () => Promise<void>, stopRestarting?: () => void }> = []
let stopping: Promise<void> | undefined

function stopEverything (code: number): Promise<void> {
  // Ctrl-C in a terminal reaches the children too: none of them may be restarted while the others
  // are still being stopped.
  for (const part of running) part.stopRestarting?.()
  stopping ??= (async () => {
    for (let part = running.pop(); part !== undefined; part = running.pop()) {
      try {
        await part.stop()
      } catch (err) {
        process.stderr.write(`local stack: stopping ${part.name} failed: ${err instanceof Error ? err.message : String(err)}\n`)
      }
    }
    process.exit(code)
  })()
  return stopping
}

async function startLocalStack (): Promise<void> {
  process.on('SIGINT', () => { stopEverything(0).catch(() => {}) })
  process.on('SIGTERM', () => { stopEverything(0).catch(() => {}) })

  if (!Number.isFinite(MAINTENANCE_MINUTES) || MAINTENANCE_MINUTES <= 0) throw new Error('DEV_MAINTENANCE_MINUTES must be a positive number of minutes')
  const dataDir = resolve(root, process.env.DEV_DATA_DIR ?? '.data')
  await mkdir(join(dataDir, 'mongo'), { recursive: true })
  const secrets = await devSecrets(dataDir)

  const mongo = await startMongo({
    port: PORTS.mongo,
    replicaSet: 'rs0',
    dataDir: join(dataDir, 'mongo'),
    users: [
      { user: 'root', password: secrets.rootPassword, db: 'admin', roles: [{ role: 'root', db: 'admin' }] },
      { user: 'calendar', password: secrets.apiPassword, db: 'calendar', roles: [{ role: 'readWrite', db: 'calendar' }] },
      // The Sync service's user can read and write its own database only.
      { user: 'sync', password: secrets.syncPassword, db: 'sync', roles: [{ role: 'readWrite', db: 'sync' }] },
      { user: 'sessions', password: secrets.sessionsPassword, db: 'sessions', roles: [{ role: 'readWrite', db: 'sessions' }] }
    ]
  })
  running.push({ name: 'MongoDB stand-in', stop: mongo.close })
  const sessionCore = await startSessionCore({
    port: PORTS.sessionCore,
    apiKey: secrets.sessionsKey,
    mongoUri: mongoUri('sessions', secrets.sessionsPassword, 'sessions', 'sessions')
  })
  running.push({ name: 'session core', stop: sessionCore.close })
  const mail = await startMailCatcher({
    smtpPort: PORTS.mailSmtp,
    httpPort: PORTS.mail,
    resend: {
      apiKey: secrets.resendApiKey,
      webhook: { url: `http://127.0.0.1:${PORTS.backend}/api/email/webhooks/resend`, secret: secrets.resendWebhookSecret }
    }
  })
  running.push({ name: 'mail catcher', stop: mail.close })
  const google = await startGoogle({
    port: PORTS.google,
    clients: [{ clientId: GOOGLE_CLIENT_ID, clientSecret: secrets.googleClientSecret, redirectUris: redirectUris('google') }],
    logger: { level: 'warn' }
  })
  running.push({ name: 'Google stand-in', stop: google.close })
  await seedGoogleDemo(google.url)
  const microsoft = await startMicrosoft({
    port: PORTS.microsoft,
    clients: [{ clientId: MICROSOFT_CLIENT_ID, clientSecret: secrets.microsoftClientSecret, redirectUris: redirectUris('microsoft') }],
    logger: { level: 'warn' }
  })
  running.push({ name: 'Microsoft stand-in', stop: microsoft.close })
  await seedMicrosoftDemo(microsoft.url)
  // CalDAV needs no stand-in: the real server runs when it is installed, and is simply left out otherwise.
  const caldavMissing = radicaleMissing()
  const radicale = caldavMissing === null ? await startRadicale({ dataDir: join(dataDir, 'radicale'), port: PORTS.caldav }) : null
  if (radicale !== null) {
    running.push({ name: 'Radicale', stop: radicale.close })
    await seedCalDavDemo(radicale, secrets.caldavDemoPassword)
  }

  const stripe = await startStripeStandIn({ port: PORTS.stripe, ...stripeKeys(secrets), webhookUrl: `http://127.0.0.1:${PORTS.backend}/api/billing/webhook` })
  running.push({ name: 'Stripe stand-in', stop: stripe.close })

  const configPath = join(dataDir, 'config.dev.yaml')
  const schedulerKeys = ed25519KeyPair(Buffer.from(secrets.schedulerSigningSeed, 'base64url'))
  const config = developmentConfig(secrets, sessionCore.uri, mail, google.url, microsoft.url, stripe.url, schedulerKeys.publicJwk)
  await writeFile(configPath, stringify(config), { mode: 0o600 })

  const sync = superviseService('Sync service', 'sync/server.ts', configPath)
  running.push(sync)
  await waitForHealth(sync.name, `http://127.0.0.1:${PORTS.sync}/health/live`, 30_000)
  const backend = superviseService('backend', 'server.ts', configPath)
  running.push(backend)
  await waitForHealth(backend.name, `http://127.0.0.1:${PORTS.backend}/api/health`, 60_000)
  // Built for these values on first use and kept in node_modules/.cache, so later starts with the
  // same ports serve at once.
  const web = await startWebServer({
    port: PORTS.web,
    apiUrl: `${BACKEND_ORIGIN}/api`,
    googleClientId: GOOGLE_CLIENT_ID,
    googleEndpointBase: google.url,
    // With these the sign-in dialog offers "Continue with Microsoft", through the stand-in.
    microsoftClientId: MICROSOFT_CLIENT_ID,
    microsoftEndpointBase: microsoft.url
  })
  running.push({ name: 'web client', stop: web.close })

  const pid = (service: Supervisor) => `pid ${service.pid ?? 'restarting'}`
  process.stdout.write([
    '',
    'Local stack is up:',
    `  calendar        ${WEB_URL}/day`,
    `  backend API     ${BACKEND_ORIGIN}/api   (health: /api/health; ${pid(backend)})`,
    `  event stream    ${BACKEND_ORIGIN}/api/events/stream`,
    `  Sync service    http://127.0.0.1:${PORTS.sync}   (${pid(sync)})`,
    `  metrics         http://127.0.0.1:${PORTS.backendMetrics}/metrics (backend), http://127.0.0.1:${PORTS.syncMetrics}/metrics (Sync); /live and /ready beside`,
    `  Google stand-in ${google.url}   (control page: ${google.url}/_control/)`,
    // The label keeps the column: 'Microsoft stand-in' is two characters wider than the others.
    `  Microsoft       ${microsoft.url}   (stand-in; control page: ${microsoft.url}/_control/)`,
    `  mail catcher    ${mail.url}   (account emails; SMTP 127.0.0.1:${mail.smtpPort}; the welcome sequence through its Resend API, with webhook buttons; failed maintenance runs)`,
    `  maintenance     POST ${config.sync.serviceUrl}/maintenance every ${MAINTENANCE_MINUTES} min (a failure is reported at ${mail.url}${MAINTENANCE_HOOK_PATH}, shown on the mail catcher's page)`,
    `  Stripe stand-in ${stripe.url}   (billing; control page: ${stripe.url}/control, card 4242 4242 4242 4242)`,
    radicale === null ? `  CalDAV server   not started: ${caldavMissing ?? ''}` : `  CalDAV server   ${radicale.url}   (Radicale; data in ${join(dataDir, 'radicale')})`,
    `  session core    ${sessionCore.uri}`,
    `  MongoDB         mongodb://127.0.0.1:${PORTS.mongo}/?replicaSet=rs0 (data in ${join(dataDir, 'mongo')})`,
    `  configuration   ${configPath}`,
    `Google is the stand-in: its consent page lets you pick the demo account ${DEMO_ACCOUNT.email} (${DEMO_ACCOUNT.name}),`,
    'whose two calendars hold a few events around today, made again at every start (the stand-in keeps',
    'nothing when it stops); its control page lists the accounts, their grants and push channels.',
    `"Continue with Microsoft" leads to the Microsoft stand-in, whose consent page offers the demo account ${MICROSOFT_DEMO_ACCOUNT.email}`,
    `(${MICROSOFT_DEMO_ACCOUNT.name}) with a few events around today in its Outlook calendar, also made again at every start.`,
    ...(radicale === null
      ? []
      : [`To connect a CalDAV calendar, use server ${radicale.url}, user name ${CALDAV_DEMO_USER} and the app password kept as`,
          `caldavDemoPassword in ${join(dataDir, 'dev-secrets.json')}; its "Personal (CalDAV)" calendar holds a few events, and Radicale keeps what you change there.`]),
    'The Sync service and the backend are restarted if they stop. Press Ctrl-C to stop everything.',
    ''
  ].join('\n'))

  // The compose scheduler's loop (lib/stack-steps.ts), so watch maintenance runs, and fails visibly,
  // here as it does in a deployment. Started last, so it is stopped first.
  const scheduler: SchedulerFile = {
    url: `${config.sync.serviceUrl}/maintenance`,
    audience: maintenanceAudience(config.sync.callbackBaseUrl),
    caller: STACK_NAMES.maintenanceCaller,
    signingKey: schedulerKeys.privateJwk,
    failureWebhook: `${mail.url}${MAINTENANCE_HOOK_PATH}`
  }
  const stopScheduler = new AbortController()
  const loop = maintenanceLoop(scheduler, {
    everyMs: MAINTENANCE_MINUTES * 60_000,
    log: {
      info: (line) => { process.stdout.write(`local stack: ${line}\n`) },
      error: (line) => { process.stderr.write(`local stack: ${line}\n`) }
    },
    signal: stopScheduler.signal
  }).catch((err: unknown) => {
    process.stderr.write(`local stack: the maintenance scheduler stopped: ${err instanceof Error ? err.message : String(err)}\n`)
  })
  running.push({ name: 'maintenance scheduler', stop: async () => { stopScheduler.abort(); await loop } })
}

if (configGiven) {
  await import('../server.js')
} else {
  try {
    await startLocalStack()
  } catch (err) {
    process.stderr.write(`local stack: ${err instanceof Error ? err.message : String(err)}; stopping everything\n`)
    await stopEverything(1)
  }
}
