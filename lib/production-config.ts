// The rules of `npm run setup`: what a production configuration of the self-host stack holds, how
// each secret is made, and which values compose.yaml reads from it through `.env`. No file system
// and no terminal here; bin/setup.ts does those.
import { randomBytes } from 'node:crypto'
import { stringify } from 'yaml'
import type { Config } from '../schemas/config.js'
import { ed25519KeyPair } from './maintenance-token.js'
import { apiLink, RESEND_WEBHOOK_PATH } from './email-links.js'

export interface SetupAnswers {
  /** web.url: where people open the calendar. */
  webUrl: string
  /** backend.apiUrl: where the browser calls the API; ends in /api. */
  apiUrl: string
  /** runtime.version: the image tag. */
  version: string
  webPort: number
  backendPort: number
}

export const SETUP_DEFAULTS = { version: 'latest', webPort: 9080, backendPort: 3000 } as const

// Names inside the stack; compose.yaml gives its services these names.
const STACK_HOSTS = { mongo: 'mongo:27017', sessionCore: 'session-core:3567', sync: 'sync', backend: 'backend' } as const
export const STACK_NAMES = {
  apiDatabase: 'calendar',
  syncDatabase: 'sync',
  rootUser: 'root',
  syncUser: 'sync',
  sessionsUser: 'sessions',
  sessionsDatabase: 'sessions',
  replicaSet: 'rs0',
  // The `iss` and `email` of the scheduler's maintenance tokens; .invalid, as it is no mailbox.
  maintenanceCaller: 'scheduler@calendar.invalid'
} as const
const SYNC_PORT = 3010
/** The internal ports monitoring/prometheus.yml scrapes on the stack's network. */
export const STACK_METRICS_PORTS = { backend: 9464, sync: 9465 } as const

export type RandomSource = (size: number) => Buffer

/**
 * One fresh value per secret, 32 random bytes or more each. The alphabets follow where each value
 * ends up: base64url for passwords that sit inside URIs and the session core's configuration file,
 * hex for the core's API key (letters, digits, '=' and '-' only), standard base64 for the replica
 * set keyfile (mongod reads base64 characters) and for the credential encryption key (the rule of
 * sync.credentialEncryptionKey), base64url for the seed of the scheduler's signing key (a JWK's `d`).
 */
export function generateSecrets (random: RandomSource = randomBytes) {
  return {
    serviceToken: random(32).toString('base64url'),
    databasePassword: random(32).toString('base64url'),
    replicaSetKey: random(96).toString('base64'),
    sessionsKey: random(32).toString('hex'),
    sessionsDbPassword: random(32).toString('base64url'),
    syncDatabasePassword: random(32).toString('base64url'),
    internalAuthToken: random(32).toString('base64url'),
    credentialEncryptionKey: random(32).toString('base64'),
    // The seed of the scheduler's Ed25519 signing key: the private JWK's `d` (lib/maintenance-token.ts).
    schedulerSigningSeed: random(32).toString('base64url')
  }
}

export type SetupSecrets = ReturnType<typeof generateSecrets>

function httpUrl (value: string): URL | undefined {
  if (!URL.canParse(value)) return undefined
  const url = new URL(value)
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined
}

function withoutTrailingSlash (value: string): string {
  return value.replace(/\/+$/, '')
}

/** The local defaults: the published ports on this machine, reached directly without a proxy. */
export function defaultWebUrl (webPort: number): string {
  return `http://localhost:${webPort}`
}

/**
 * Behind a proxy the API shares the calendar's origin (`/api` and `/sync` go to the backend); the
 * local default reaches the backend's own published port.
 */
export function defaultApiUrl (webUrl: string, backendPort: number): string {
  const url = httpUrl(webUrl)
  if (url === undefined) return `http://localhost:${backendPort}/api`
  return url.hostname === 'localhost' ? `http://localhost:${backendPort}/api` : `${url.origin}/api`
}

/** Problems with the answers, one line each, before anything is generated. */
export function checkAnswers (answers: SetupAnswers): string[] {
  const problems: string[] = []
  for (const [flag, port] of [['--web-port', answers.webPort], ['--backend-port', answers.backendPort]] as const) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) problems.push(`${flag} must be a port number from 1 to 65535`)
  }
  if (answers.webPort === answers.backendPort) problems.push('--web-port and --backend-port must differ')
  // The default URLs are made from the ports: with a bad port they would only repeat its problem.
  if (problems.length > 0) return problems
  if (httpUrl(answers.webUrl) === undefined) problems.push('--web-url must be an http(s) URL')
  const api = httpUrl(answers.apiUrl)
  if (api === undefined || !withoutTrailingSlash(api.pathname).endsWith('/api')) problems.push('--api-url must be an http(s) URL ending in /api')
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(answers.version)) problems.push('--version must be an image tag (letters, digits, _ . -)')
  return problems
}

/** The production configuration of the self-host stack, as the document written to config.yaml. */
export function productionConfig (answers: SetupAnswers, secrets: SetupSecrets): Record<string, Record<string, unknown>> {
  const webUrl = withoutTrailingSlash(answers.webUrl)
  const apiUrl = withoutTrailingSlash(answers.apiUrl)
  const { apiDatabase, syncDatabase, rootUser, syncUser, replicaSet } = STACK_NAMES
  const scheduler = ed25519KeyPair(Buffer.from(secrets.schedulerSigningSeed, 'base64url'))
  return {
    runtime: { version: answers.version, nodeEnv: 'production', timezone: 'Etc/UTC', logLevel: 'info' },
    web: { port: answers.webPort, url: webUrl },
    backend: {
      port: answers.backendPort,
      apiUrl,
      originsAllowed: [new URL(webUrl).origin],
      serviceToken: secrets.serviceToken,
      // On the stack's network, where the monitoring profile's Prometheus scrapes it; compose publishes it nowhere.
      metricsPort: STACK_METRICS_PORTS.backend,
      metricsHost: '0.0.0.0'
    },
    database: {
      uri: `mongodb://${rootUser}:${secrets.databasePassword}@${STACK_HOSTS.mongo}/${apiDatabase}?authSource=admin&replicaSet=${replicaSet}`,
      username: rootUser,
      password: secrets.databasePassword,
      replicaSetKey: secrets.replicaSetKey
    },
    sessions: {
      uri: `http://${STACK_HOSTS.sessionCore}`,
      key: secrets.sessionsKey,
      db: { user: STACK_NAMES.sessionsUser, password: secrets.sessionsDbPassword, database: STACK_NAMES.sessionsDatabase }
    },
    sync: {
      port: SYNC_PORT,
      metricsPort: STACK_METRICS_PORTS.sync,
      metricsHost: '0.0.0.0',
      databaseUri: `mongodb://${syncUser}:${secrets.syncDatabasePassword}@${STACK_HOSTS.mongo}/${syncDatabase}?authSource=${syncDatabase}&replicaSet=${replicaSet}`,
      internalAuthToken: secrets.internalAuthToken,
      callbackBaseUrl: `${new URL(apiUrl).origin}/sync`,
      postConnectRedirectUrl: webUrl,
      serviceUrl: `http://${STACK_HOSTS.sync}:${SYNC_PORT}`,
      backendUrl: `http://${STACK_HOSTS.backend}:${answers.backendPort}`,
      cloudMutationMode: 'enabled',
      execution: 'active',
      maxConcurrency: 4,
      enforceLeastPrivilege: true,
      apiDatabase,
      credentialEncryptionKey: secrets.credentialEncryptionKey,
      maintenanceCaller: STACK_NAMES.maintenanceCaller,
      maintenanceKey: scheduler.publicJwk
    },
    scheduler: { signingKey: scheduler.privateJwk }
  }
}

export function renderConfigYaml (document: Record<string, unknown>, writtenAt: Date): string {
  return [
    `# Production configuration of the calendar service, written by \`npm run setup\` on ${writtenAt.toISOString().slice(0, 10)}.`,
    '# It holds secrets: keep it out of version control and readable by its owner only.',
    '# Every key is described in config.example.yaml. After changing runtime.version, web.port,',
    '# backend.port, backend.apiUrl or a key fixed into the web bundle, run `npm run setup -- --env-only`.',
    '',
    stringify(document, { lineWidth: 0 })
  ].join('\n')
}

/**
 * What compose.yaml reads from `.env`: image tags, published ports and the values the web image
 * fixes into its bundle. All of them are public; no secret goes through `.env`. Each name is its
 * configuration key in capitals (`backend.apiUrl` is BACKEND_API_URL).
 */
export const COMPOSE_VARIABLES = [
  'runtime.version',
  'web.port',
  'backend.port',
  'backend.apiUrl',
  'extprovider.clientId',
  'extprovider2.clientId',
  'idsignin.servicesId',
  'analytics.key',
  'analytics.host',
  'maps.placesApiKey'
] as const

export type ComposeKey = typeof COMPOSE_VARIABLES[number]

export function variableNameOf (key: string): string {
  return key.split('.').map((part) => part.replace(/([a-z0-9])([A-Z])/g, '$1_$2')).join('_').toUpperCase()
}

/**
 * The web image's build arguments (the names web/build.ts reads) and the configuration key each
 * one comes from: the specification fixes these into the bundle.
 */
export const WEB_BUILD_ARGS: Record<string, ComposeKey> = {
  WEB_API_URL: 'backend.apiUrl',
  WEB_GOOGLE_CLIENT_ID: 'extprovider.clientId',
  WEB_MICROSOFT_CLIENT_ID: 'extprovider2.clientId',
  WEB_APPLE_SERVICES_ID: 'idsignin.servicesId',
  WEB_ANALYTICS_KEY: 'analytics.key',
  WEB_ANALYTICS_HOST: 'analytics.host',
  WEB_PLACES_API_KEY: 'maps.placesApiKey'
}

function valueAt (config: Config, key: string): string {
  let node: unknown = config
  for (const part of key.split('.')) {
    node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined
  }
  return node === undefined || node === null ? '' : String(node)
}

/** The `.env` values for a parsed configuration (an absent optional key is empty). */
export function composeEnvironment (config: Config): Record<string, string> {
  return Object.fromEntries(COMPOSE_VARIABLES.map((key) => [variableNameOf(key), valueAt(config, key)]))
}

export function renderEnvFile (variables: Record<string, string>): string {
  const lines = Object.entries(variables).map(([name, value]) => {
    if (/['\n\r]/.test(value)) throw new Error(`${name} cannot be written to .env: it holds a quote or a line break`)
    // Single quotes keep compose from interpolating or splitting the value.
    return /^[A-Za-z0-9_./:@+,-]*$/.test(value) ? `${name}=${value}` : `${name}='${value}'`
  })
  return [
    '# Read by compose.yaml; generated from config.yaml by `npm run setup` (edit config.yaml, then',
    '# run `npm run setup -- --env-only`). Public values only: no secret is written here.',
    ...lines,
    ''
  ].join('\n')
}

/** Lines where `.env` (as compose received it) and config.yaml disagree; empty when they agree. */
export function environmentDrift (config: Config, env: NodeJS.ProcessEnv): string[] {
  const wanted = composeEnvironment(config)
  return COMPOSE_VARIABLES
    .filter((key) => (env[variableNameOf(key)] ?? '') !== wanted[variableNameOf(key)])
    .map((key) => `config: .env gives ${variableNameOf(key)} another value than ${key} in config.yaml; run \`npm run setup -- --env-only\` and start again`)
}

export function nextSteps (files: { config: string, env: string }, answers: Pick<SetupAnswers, 'webUrl' | 'apiUrl' | 'webPort' | 'backendPort'>): string {
  return [
    `wrote ${files.config} (secrets, mode 0600: keep it out of version control) and ${files.env} (public values for compose)`,
    '',
    'next steps:',
    '  1. read config.yaml; to offer Google, add extprovider.clientId and clientSecret (Microsoft:',
    '     extprovider2.*, Apple: idsignin.*), then run `npm run setup -- --env-only` so the web image',
    '     is built with the client ids',
    '  2. docker compose build          (or: podman compose build)',
    '  3. docker compose up -d          (or: podman compose up -d); `docker compose ps` shows health',
    `  4. the web client listens on 127.0.0.1:${answers.webPort} and the API on 127.0.0.1:${answers.backendPort}; put your`,
    `     TLS proxy in front so that ${answers.webUrl} and ${answers.apiUrl} reach them (on one origin,`,
    '     send /api and /sync to the API and everything else to the web client)',
    '  5. back up the mongo-data and sessions-db-data volumes (docs/self-hosting.md, "Back up")',
    '  6. the welcome mails are off. To send them through Resend, add an `email` block to config.yaml',
    '     (config.example.yaml; docs/email.md): provider: mailer, apiKey, from (an address of a domain',
    '     verified at Resend), unsubscribeSecret (for example `openssl rand -base64 32`), and webhookSecret,',
    `     the signing secret of a Resend webhook pointed at ${apiLink(answers.apiUrl, RESEND_WEBHOOK_PATH)}`,
    '     for email.delivered, email.bounced and email.complained; then `docker compose up -d backend`',
    ''
  ].join('\n')
}
