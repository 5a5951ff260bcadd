import { Type, type Static, type TObject, type TProperties } from '@sinclair/typebox'

// One schema for the YAML configuration file shared by the backend and the Sync service.
// Rules that involve more than one key live in lib/config-rules.ts; everything else is here.

const Url = (description: string) => Type.String({ format: 'url', description })
const Secret = (description: string) => Type.String({ minLength: 1, description, secret: true })
const Port = (defaultPort: number, description: string) =>
  Type.Integer({ minimum: 1, maximum: 65535, default: defaultPort, description })
// The internal port of a service (metrics, liveness, readiness): never the public one.
const MetricsPort = (service: string) => Type.Optional(Type.Integer({
  minimum: 0,
  maximum: 65535,
  description: `Internal port of ${service}'s GET /metrics (Prometheus), /live and /ready; absent: no such port, 0: any free port`
}))
const MetricsHost = (service: string) => Type.Optional(Type.String({
  minLength: 1,
  maxLength: 255,
  default: '127.0.0.1',
  description: `Address ${service}'s internal port listens on: 127.0.0.1 unless a scraper on another host must reach it (in a container network, 0.0.0.0 with the port published nowhere)`
}))

function section<T extends TProperties> (properties: T, description: string): TObject<T> {
  return Type.Object(properties, { additionalProperties: false, description })
}

const LogLevel = Type.Union(
  ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
  { default: 'info', description: 'At debug, health-check requests appear in logs; otherwise they are hidden.' }
)

const RuntimeSchema = section({
  version: Type.String({ minLength: 1, default: 'latest', description: 'Image tag of the self-host stack.' }),
  nodeEnv: Type.Union([Type.Literal('production'), Type.Literal('development'), Type.Literal('test')], {
    description: 'production for self-host and staging, development for local development, test for test runs'
  }),
  timezone: Type.Union([Type.Literal('Etc/UTC'), Type.Literal('UTC')], {
    description: 'Only Etc/UTC and UTC are accepted; the process runs in UTC.'
  }),
  logLevel: LogLevel
}, 'Process-wide settings')

const WebSchema = section({
  port: Port(9080, 'Host port bound to the web container on 127.0.0.1'),
  url: Url('Public frontend URL as seen by the backend')
}, 'The web frontend')

const BackendSchema = section({
  port: Port(3000, 'Host port bound to the backend on 127.0.0.1'),
  apiUrl: Type.String({
    format: 'url',
    pattern: '/api$',
    description: 'Public API URL, ending in /api'
  }),
  originsAllowed: Type.Array(Type.String({ format: 'url' }), {
    minItems: 1,
    description: 'Allowed CORS origins; must include web.url'
  }),
  serviceToken: Secret('Bearer token protecting the backend\'s internal endpoints'),
  metricsPort: MetricsPort('the backend'),
  metricsHost: MetricsHost('the backend')
}, 'The backend API')

const DatabaseSchema = section({
  uri: Type.String({ pattern: '^mongodb(\\+srv)?://', description: 'MongoDB connection string of the API database' }),
  username: Type.Optional(Type.String({ minLength: 1, description: 'Root username created at first start (self-host)' })),
  password: Type.Optional(Secret('Root password (self-host)')),
  replicaSetKey: Type.Optional(Secret('Shared secret between replica set members (self-host)'))
}, 'The API database')

const SessionsSchema = section({
  uri: Url('Session core URL as seen by the backend'),
  key: Secret('API key shared by the backend and the session core'),
  db: Type.Optional(section({
    user: Type.Optional(Type.String({ minLength: 1 })),
    password: Type.Optional(Secret('Password of the session core database')),
    database: Type.Optional(Type.String({ minLength: 1 }))
  }, 'The session core\'s database container (self-host)')),
  smtp: Type.Optional(section({
    host: Type.String({ minLength: 1, description: 'SMTP server host' }),
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'SMTP server port' }),
    secure: Type.Boolean({ default: false, description: 'TLS from the first byte (port 465); otherwise STARTTLS when offered' }),
    // The session library's SMTP sender always authenticates, so both are needed.
    user: Type.String({ minLength: 1, description: 'SMTP user name' }),
    password: Secret('SMTP password'),
    fromName: Type.String({ minLength: 1, default: 'Calendar', description: 'Sender name of account emails' }),
    fromEmail: Type.String({ minLength: 3, description: 'Sender address of account emails' })
  }, 'Delivery of account emails (password reset, email verification) over SMTP; without it the session library\'s own sender is used'))
}, 'The session core')

const ProviderCredentials = (name: string) => section({
  clientId: Type.Optional(Type.String({ description: `${name} OAuth client id` })),
  clientSecret: Type.Optional(Type.String({ description: `${name} OAuth client secret (backend only)`, secret: true })),
  endpointBase: Type.Optional(Url(`Development only: the origin of a ${name} stand-in that serves ${name}'s own paths; refused when runtime.nodeEnv is production`))
}, `${name}: both keys set to real values, or neither`)

const IdSignInSchema = section({
  servicesId: Type.Optional(Type.String()),
  teamId: Type.Optional(Type.String()),
  keyId: Type.Optional(Type.String()),
  privateKey: Type.Optional(Type.String({ secret: true })),
  endpointBase: Type.Optional(Url('Development only: the origin of a Sign in with Apple stand-in that serves Apple\'s own paths; refused when runtime.nodeEnv is production'))
}, 'ID sign-in: all four keys or none')

// Ed25519 keys as JSON Web Keys (RFC 8037): `x` is the public key, `d` the private seed, 32 bytes
// each in base64url. The self-host stack's scheduler signs watch-maintenance tokens with one.
const Base64Url32 = { pattern: '^[A-Za-z0-9_-]{43}$' }
const Ed25519PublicJwk = (description: string) => Type.Object({
  kty: Type.Literal('OKP'),
  crv: Type.Literal('Ed25519'),
  x: Type.String(Base64Url32)
}, { additionalProperties: false, description })

export const SchedulerSchema = section({
  signingKey: Type.Object({
    kty: Type.Literal('OKP'),
    crv: Type.Literal('Ed25519'),
    x: Type.String(Base64Url32),
    d: Type.String({ ...Base64Url32, secret: true })
  }, { additionalProperties: false, description: 'Private Ed25519 JWK the scheduler signs its watch-maintenance ID tokens with; its public half is sync.maintenanceKey. Only the scheduler\'s container receives it.' }),
  failureWebhook: Type.Optional(Type.String({
    format: 'url',
    secret: true,
    description: 'Where the scheduler reports a failed maintenance call: it POSTs a JSON notice ({text, event: "maintenance_failed", reason, at}) there, the shape chat and paging webhooks take. A secret, as such URLs carry their token'
  }))
}, 'The self-host stack\'s watch-maintenance scheduler (compose service `scheduler`)')

const SyncSchema = section({
  port: Port(3010, 'HTTP port of the Sync service'),
  metricsPort: MetricsPort('the Sync service'),
  metricsHost: MetricsHost('the Sync service'),
  databaseUri: Type.String({ pattern: '^mongodb(\\+srv)?://', description: 'Isolated Sync database URI; never the API database' }),
  internalAuthToken: Secret('Shared secret for the Sync service\'s internal routes'),
  callbackBaseUrl: Url('Public base URL for provider OAuth and webhook callbacks'),
  postConnectRedirectUrl: Type.Optional(Url('Browser redirect after OAuth connect; should equal web.url')),
  serviceUrl: Url('Base URL the backend uses to reach the Sync service'),
  backendUrl: Type.Optional(Url('Base URL the Sync service uses to reach the backend (its internal address inside a container network); default: the origin of backend.apiUrl')),
  cloudMutationMode: Type.Union([Type.Literal('enabled'), Type.Literal('maintenance')], { default: 'enabled' }),
  execution: Type.Union([Type.Literal('passive'), Type.Literal('active')], { default: 'passive' }),
  maxConcurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
  privateAddressAllowlist: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
    maxItems: 100,
    description: 'Hosts (as written in a server URL), addresses and networks (CIDR) Sync may reach for a user though they are loopback, ' +
      'private or link-local: the operator\'s own CalDAV servers. Every other such address is refused (default: none)'
  })),
  enforceLeastPrivilege: Type.Optional(Type.Boolean()),
  apiDatabase: Type.Optional(Type.String({ minLength: 1 })),
  credentialEncryptionKey: Type.Optional(Type.String({
    description: '32 bytes, base64-encoded; encrypts provider credentials at rest',
    secret: true
  })),
  inactiveUserDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650, description: 'Watch maintenance stops the provider notification channels of users not seen for this many days (default 30)' })),
  maintenanceIssuer: Type.Optional(Url('OpenID Connect issuer whose ID tokens may call POST {callbackBaseUrl}/maintenance (for example https://accounts.google.com for a cloud scheduler); its keys come from its discovery document')),
  maintenanceCaller: Type.Optional(Type.String({ minLength: 3, description: 'The `email` claim an ID token for POST /maintenance must carry (the scheduler\'s service account); required with maintenanceIssuer, since an issuer such as Google signs tokens for anyone, and with maintenanceKey, where it is also the token\'s issuer' })),
  maintenanceKey: Type.Optional(Ed25519PublicJwk('Public Ed25519 JWK whose holder may call POST {callbackBaseUrl}/maintenance with an ID token it signs itself (iss and email: sync.maintenanceCaller); the self-host stack\'s scheduler holds the private half. An alternative to maintenanceIssuer'))
}, 'The Sync service')

const AnalyticsSchema = section({
  key: Type.Optional(Type.String()),
  host: Type.Optional(Type.String())
}, 'Analytics injected into the web bundle')

const MapsSchema = section({
  placesApiKey: Type.Optional(Type.String())
}, 'Places lookup for the event form')

const BillingSchema = section({
  secretKey: Type.Optional(Type.String({ secret: true })),
  webhookSecret: Type.Optional(Type.String({ secret: true })),
  priceId: Type.Optional(Type.String()),
  publishableKey: Type.Optional(Type.String()),
  bypassEmails: Type.Array(Type.String({ minLength: 3 }), { default: [], description: 'Accounts (staff, test accounts) that the billing gate never refuses once their address is verified; matched case-insensitively' }),
  endpointBase: Type.Optional(Url('Development only: the origin of a Stripe stand-in that serves Stripe\'s own paths; refused when runtime.nodeEnv is production'))
}, 'Billing: all four keys or the block is omitted')

const EmailSchema = section({
  provider: Type.Union([Type.Literal('mailer'), Type.Literal('log')]),
  apiKey: Type.Optional(Type.String({ secret: true })),
  from: Type.Optional(Type.String()),
  webhookSecret: Type.Optional(Type.String({ secret: true })),
  unsubscribeSecret: Type.Optional(Type.String({ secret: true })),
  scheduleProfile: Type.Union([Type.Literal('real'), Type.Literal('fast')], { default: 'real' }),
  allowlist: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
  apiBase: Type.Optional(Url('Development only: the origin of a stand-in that serves Resend\'s own paths (POST /emails); refused when runtime.nodeEnv is production'))
}, 'Email: omitted means off')

const optionalBlocks = {
  extprovider: Type.Optional(ProviderCredentials('Google')),
  extprovider2: Type.Optional(ProviderCredentials('Microsoft')),
  idsignin: Type.Optional(IdSignInSchema),
  analytics: Type.Optional(AnalyticsSchema),
  maps: Type.Optional(MapsSchema),
  billing: Type.Optional(BillingSchema),
  email: Type.Optional(EmailSchema),
  scheduler: Type.Optional(SchedulerSchema)
}

export const ConfigSchema = Type.Object({
  runtime: RuntimeSchema,
  web: WebSchema,
  backend: BackendSchema,
  database: DatabaseSchema,
  sessions: SessionsSchema,
  sync: SyncSchema,
  ...optionalBlocks
}, { additionalProperties: false })

// The Sync service reads the same file but needs only its own block (and the API database's
// URI, when present, to prove the two are never the same database).
export const SyncConfigSchema = Type.Object({
  runtime: RuntimeSchema,
  web: Type.Optional(WebSchema),
  backend: Type.Optional(BackendSchema),
  database: Type.Optional(DatabaseSchema),
  sessions: Type.Optional(SessionsSchema),
  sync: SyncSchema,
  ...optionalBlocks
}, { additionalProperties: false })

export type Config = Static<typeof ConfigSchema>
export type SyncConfig = Static<typeof SyncConfigSchema>
export type EmailConfig = Static<typeof EmailSchema>
export type ServiceName = 'backend' | 'sync'
