// What the self-host stack's one-shot steps (bin/stack-steps.ts, run by compose.yaml) derive from the one
// config.yaml: the files each container reads its secrets from, the Sync service's narrower copy
// of the configuration, and the database users. Rules only there; bin/stack-steps.ts writes and connects.
// One exception, at the end: the scheduler's maintenance loop, kept here because the compose
// scheduler (bin/stack-steps.ts) and the local stack (dev/start.ts) must run the very same one.
import { Type, type Static } from '@sinclair/typebox'
import { parseDocument, stringify } from 'yaml'
import { SchedulerSchema, type Config } from '../schemas/config.js'
import { databaseNameOf, type RuleFinding } from './config-rules.js'
import { maintenanceAudience, signMaintenanceToken } from './maintenance-token.js'
import { STACK_NAMES } from './production-config.js'

// The users the images run as: node in ours, mongodb and postgres (999) in the database images.
export const STACK_UIDS = { root: 0, node: 1000, database: 999 } as const

/**
 * One named volume per consumer, each mounted read-only at /run/calendar in its container only: the
 * Sync container never holds the root database password, Postgres never sees the API key.
 */
export type StackVolume = 'backend' | 'sync' | 'mongo' | 'sessions-db' | 'session-core' | 'scheduler'
export const STACK_VOLUMES: readonly StackVolume[] = ['backend', 'sync', 'mongo', 'sessions-db', 'session-core', 'scheduler']

/** The scheduler's one file, in its volume: what it signs with and whom it calls. */
export const SCHEDULER_FILE = 'maintenance.json'

export const SchedulerFileSchema = Type.Object({
  /** Where the scheduler reaches POST /maintenance: the Sync service's address inside the stack. */
  url: Type.String({ pattern: '^https?://' }),
  /** The token's audience: the endpoint's public URL, which the Sync service expects. */
  audience: Type.String({ minLength: 1 }),
  caller: Type.String({ minLength: 3 }),
  signingKey: SchedulerSchema.properties.signingKey,
  /** scheduler.failureWebhook: where a failed call is reported. */
  failureWebhook: Type.Optional(Type.String({ pattern: '^https?://' }))
}, { additionalProperties: false })

export type SchedulerFile = Static<typeof SchedulerFileSchema>

export interface StackFile {
  volume: StackVolume
  name: string
  content: string
  uid: number
  mode: number
}

export interface MongoCredentials {
  user: string
  password: string
  /** The database the user is defined in (authSource). */
  authSource: string
}

interface ParsedMongoUri {
  scheme: string
  credentials: { user: string, password: string } | undefined
  hosts: string
  database: string
  params: URLSearchParams
}

export function parseMongoUri (uri: string): ParsedMongoUri | undefined {
  const match = /^(mongodb(?:\+srv)?):\/\/(?:([^:@/?]*)(?::([^@/?]*))?@)?([^/?]*)\/?([^?]*)(?:\?(.*))?$/.exec(uri)
  if (match === null) return undefined
  const [, scheme = '', user, password, hosts = '', , query = ''] = match
  return {
    scheme,
    credentials: user === undefined ? undefined : { user: decodeURIComponent(user), password: decodeURIComponent(password ?? '') },
    hosts,
    database: databaseNameOf(uri),
    params: new URLSearchParams(query)
  }
}

const BASE64 = /^[A-Za-z0-9+/=]+$/
// Values that the session core's entrypoint writes unquoted into its own YAML file.
const PLAIN_WORD = /^[A-Za-z0-9_-]+$/
const SQL_NAME = /^[a-z_][a-z0-9_]*$/
// The core accepts API keys of at least 20 letters, digits, '=' and '-'.
const CORE_API_KEY = /^[A-Za-z0-9=-]{20,}$/

function finding (key: string, rule: string): RuleFinding {
  return { key, rule, severity: 'error' }
}

/** The rules the self-host stack adds to the service's own: the keys it needs, in the forms its containers take. */
export function selfHostFindings (config: Config): RuleFinding[] {
  const findings: RuleFinding[] = []
  const { database, sessions, sync } = config
  if (database.username === undefined) findings.push(finding('database.username', 'is required by the self-host stack (the root user created at first start)'))
  if (database.password === undefined) findings.push(finding('database.password', 'is required by the self-host stack'))
  if (database.replicaSetKey === undefined) {
    findings.push(finding('database.replicaSetKey', 'is required by the self-host stack'))
  } else if (!BASE64.test(database.replicaSetKey) || database.replicaSetKey.length < 6 || database.replicaSetKey.length > 1024) {
    findings.push(finding('database.replicaSetKey', 'must be 6 to 1024 base64 characters (it becomes the replica set keyfile)'))
  }

  const api = parseMongoUri(database.uri)
  if (api === undefined || api.scheme !== 'mongodb') {
    findings.push(finding('database.uri', 'must be a mongodb:// URI naming the stack\'s MongoDB'))
  } else {
    if (api.credentials === undefined || api.credentials.user !== database.username || api.credentials.password !== database.password) {
      findings.push(finding('database.uri', 'must carry database.username and database.password as its credentials'))
    }
    if (api.params.get('authSource') !== 'admin') findings.push(finding('database.uri', 'must say authSource=admin (the root user lives in admin)'))
    if (api.params.get('replicaSet') !== STACK_NAMES.replicaSet) findings.push(finding('database.uri', `must say replicaSet=${STACK_NAMES.replicaSet} (compose.yaml starts mongod with that replica set)`))
  }

  const syncUri = parseMongoUri(sync.databaseUri)
  if (syncUri === undefined || syncUri.scheme !== 'mongodb' || syncUri.credentials === undefined) {
    findings.push(finding('sync.databaseUri', 'must be a mongodb:// URI with the Sync service\'s own user and password'))
  } else {
    if (syncUri.credentials.user === database.username) findings.push(finding('sync.databaseUri', 'must use a user of its own, not the root user'))
    if (syncUri.credentials.password === '') findings.push(finding('sync.databaseUri', 'must carry a password'))
    if (api !== undefined && syncUri.hosts !== api.hosts) findings.push(finding('sync.databaseUri', 'must name the same MongoDB hosts as database.uri'))
    if (syncUri.params.get('replicaSet') !== STACK_NAMES.replicaSet) findings.push(finding('sync.databaseUri', `must say replicaSet=${STACK_NAMES.replicaSet} (compose.yaml starts mongod with that replica set)`))
  }

  if (!CORE_API_KEY.test(sessions.key)) findings.push(finding('sessions.key', 'must be at least 20 letters, digits, "=" or "-" (the session core refuses other API keys)'))
  const db = sessions.db
  if (db?.user === undefined || !SQL_NAME.test(db.user)) findings.push(finding('sessions.db.user', 'is required by the self-host stack: lowercase letters, digits and _'))
  if (db?.database === undefined || !SQL_NAME.test(db.database)) findings.push(finding('sessions.db.database', 'is required by the self-host stack: lowercase letters, digits and _'))
  if (db?.password === undefined || !PLAIN_WORD.test(db.password)) findings.push(finding('sessions.db.password', 'is required by the self-host stack: letters, digits, _ and - only'))
  return findings
}

/**
 * What the stack's config step and setup add for the full config.yaml (the backend's copy has no
 * scheduler block): a maintenance caller, which is the stack's scheduler (its key and the Sync
 * service's half of it) unless an outside scheduler's issuer is named. The configuration's own rules
 * check that the two halves belong together.
 */
export function schedulerFindings (config: Config): RuleFinding[] {
  const { scheduler, sync } = config
  if (sync.maintenanceCaller !== undefined && (sync.maintenanceIssuer !== undefined || (scheduler !== undefined && sync.maintenanceKey !== undefined))) return []
  return [finding('scheduler.signingKey', 'is required by the self-host stack, with sync.maintenanceKey and sync.maintenanceCaller: the scheduler signs watch maintenance with it (or name a scheduler of your own with sync.maintenanceIssuer and sync.maintenanceCaller); `npm run setup -- --add-scheduler-key` adds them to an older config.yaml')]
}

/** The Sync service's own database user: readWrite on its database, nothing on the API database. */
export function syncDatabaseUser (config: Config): MongoCredentials & { database: string } {
  const parsed = parseMongoUri(config.sync.databaseUri)
  if (parsed?.credentials === undefined) throw new Error('sync.databaseUri carries no credentials')
  return {
    ...parsed.credentials,
    authSource: parsed.params.get('authSource') ?? parsed.database,
    database: parsed.database
  }
}

/**
 * How the database step reaches MongoDB before the replica set exists: the first host directly,
 * as root. The member is named as the other containers reach it.
 */
export function rootConnection (config: Config): { uri: string, member: string, replicaSet: string } {
  const parsed = parseMongoUri(config.database.uri)
  const member = parsed?.hosts.split(',')[0]
  if (parsed === undefined || member === undefined || config.database.username === undefined || config.database.password === undefined) {
    throw new Error('database.uri, database.username and database.password are required')
  }
  const credentials = `${encodeURIComponent(config.database.username)}:${encodeURIComponent(config.database.password)}`
  return {
    uri: `mongodb://${credentials}@${member}/?authSource=admin&directConnection=true`,
    member: member.includes(':') ? member : `${member}:27017`,
    replicaSet: parsed.params.get('replicaSet') ?? 'rs0'
  }
}

/**
 * The Sync service's copy of the configuration: without the API database's URI and root
 * credentials, the session core, the backend-only blocks and the scheduler's private key. `sync.apiDatabase` names the database
 * its least-privilege check must be denied.
 */
export function syncConfigDocument (document: Record<string, unknown>, config: Config): Record<string, unknown> {
  const { database: _database, sessions: _sessions, idsignin: _idsignin, billing: _billing, email: _email, scheduler: _scheduler, ...rest } = document
  const sync = { ...(document.sync as Record<string, unknown>), apiDatabase: config.sync.apiDatabase ?? databaseNameOf(config.database.uri) }
  return { ...rest, sync }
}

/** The backend's copy: config.yaml as written, comments and all, less the scheduler's private key. */
export function backendConfigText (configText: string): string {
  const document = parseDocument(configText)
  if (!document.has('scheduler')) return configText
  document.delete('scheduler')
  return document.toString({ lineWidth: 0 })
}

/** What the scheduler reads (SCHEDULER_FILE); undefined without the keys selfHostFindings requires. */
function schedulerFile (config: Config): SchedulerFile | undefined {
  const { scheduler, sync } = config
  if (scheduler === undefined || sync.maintenanceCaller === undefined) return undefined
  return {
    url: `${sync.serviceUrl.replace(/\/+$/, '')}/maintenance`,
    audience: maintenanceAudience(sync.callbackBaseUrl),
    caller: sync.maintenanceCaller,
    signingKey: scheduler.signingKey,
    ...(scheduler.failureWebhook === undefined ? {} : { failureWebhook: scheduler.failureWebhook })
  }
}

/** Every file the stack's containers read, by volume. */
export function stackFiles (configText: string, document: Record<string, unknown>, config: Config): StackFile[] {
  const { node, database: databaseUid, root } = STACK_UIDS
  const file = (volume: StackVolume, name: string, content: string, uid: number): StackFile => ({ volume, name, content, uid, mode: 0o400 })
  const db = config.sessions.db ?? {}
  const scheduler = schedulerFile(config)
  return [
    file('backend', 'config.yaml', backendConfigText(configText), node),
    file('sync', 'config.yaml', '# Derived from config.yaml by the stack\'s config step; edit config.yaml instead.\n' + stringify(syncConfigDocument(document, config), { lineWidth: 0 }), node),
    // mongod refuses a keyfile that others can read; the image runs mongod as 999.
    file('mongo', 'keyfile', `${config.database.replicaSetKey ?? ''}\n`, databaseUid),
    file('mongo', 'root-username', config.database.username ?? '', databaseUid),
    file('mongo', 'root-password', config.database.password ?? '', databaseUid),
    file('sessions-db', 'user', db.user ?? '', databaseUid),
    file('sessions-db', 'password', db.password ?? '', databaseUid),
    file('sessions-db', 'database', db.database ?? '', databaseUid),
    // Read by the entrypoint wrapper in compose.yaml, as root, before the core drops to its user.
    file('session-core', 'api-key', config.sessions.key, root),
    file('session-core', 'db-user', db.user ?? '', root),
    file('session-core', 'db-password', db.password ?? '', root),
    file('session-core', 'db-name', db.database ?? '', root),
    ...(scheduler === undefined ? [] : [file('scheduler', SCHEDULER_FILE, `${JSON.stringify(scheduler, null, 2)}\n`, node)])
  ]
}

/** Where the maintenance loop says what it did, one line a call (without a prefix), never a secret. */
export interface MaintenanceLog {
  info: (line: string) => void
  error: (line: string) => void
}

export interface MaintenanceLoopOptions {
  everyMs: number
  log: MaintenanceLog
  /** After each call, with whether it was accepted (the compose scheduler's health check reads this). */
  afterRun?: (ok: boolean) => Promise<void>
  /** Ends the loop; a call in flight is dropped, and not reported as a failure. */
  signal?: AbortSignal
}

// The one line of an error that a log or a notice may carry: a fetch failure's own message says
// only "fetch failed", its cause says why (ECONNREFUSED, a timeout).
function reasonOf (error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? 'failed'
  const cause = error instanceof Error ? (error.cause as { code?: unknown, message?: unknown } | undefined) : undefined
  const detail = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message.split('\n')[0] : undefined
  return detail === undefined ? message : `${message} (${detail})`
}

/** One watch-maintenance pass at the Sync service; throws unless it answers 200. */
async function maintainOnce (caller: SchedulerFile, log: MaintenanceLog, signal?: AbortSignal): Promise<void> {
  const token = await signMaintenanceToken(caller.signingKey, { caller: caller.caller, audience: caller.audience })
  const timeout = AbortSignal.timeout(120_000)
  let response: Response
  try {
    response = await fetch(caller.url, { method: 'POST', headers: { authorization: `Bearer ${token}` }, signal: signal === undefined ? timeout : AbortSignal.any([timeout, signal]) })
  } catch (error) {
    if (signal?.aborted === true) throw error
    throw new Error(`maintenance: ${caller.url} could not be reached: ${reasonOf(error)}`)
  }
  if (response.status !== 200) {
    // Read to the end, so the loop's next call finds the connection free.
    await response.arrayBuffer().catch(() => undefined)
    throw new Error(`maintenance: ${caller.url} answered ${response.status}`)
  }
  const report = await response.json() as { renewed?: unknown, stopped?: unknown, failed?: unknown }
  log.info(`maintenance: renewed ${String(report.renewed)}, stopped ${String(report.stopped)}, failed ${String(report.failed)}`)
}

/**
 * Tells the operator a maintenance call failed (the specification: the caller reports an error
 * by notification on failure), at scheduler.failureWebhook when one is set. A notice that cannot
 * be sent is said on the error log; it never stops the loop. The webhook's address is a secret
 * (such URLs carry their token), so no line names it.
 */
async function reportMaintenanceFailure (caller: SchedulerFile, reason: string, log: MaintenanceLog): Promise<void> {
  if (caller.failureWebhook === undefined) return
  const notice = {
    text: `Calendar: watch maintenance failed (${reason}); the scheduler tries again at its next run`,
    event: 'maintenance_failed',
    reason,
    at: new Date().toISOString()
  }
  try {
    const response = await fetch(caller.failureWebhook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(notice), signal: AbortSignal.timeout(10_000) })
    // Nothing of the answer is needed; dropped unread, so no answer's size matters.
    await response.body?.cancel()
    if (!response.ok) log.error(`maintenance: the failure notice was answered ${response.status}`)
  } catch (error) {
    log.error(`maintenance: the failure notice could not be sent (${reasonOf(error)})`)
  }
}

/** One call, a failure reported; rethrows it, for a caller that ends on it. */
export async function maintainOrReport (caller: SchedulerFile, log: MaintenanceLog): Promise<void> {
  try {
    await maintainOnce(caller, log)
  } catch (error) {
    await reportMaintenanceFailure(caller, reasonOf(error), log)
    throw error
  }
}

function spelledInterval (ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`
}

/** The scheduler: a call at once, then one every `everyMs`, each failure reported; ends only on `signal`. */
export async function maintenanceLoop (caller: SchedulerFile, options: MaintenanceLoopOptions): Promise<void> {
  const { everyMs, log, afterRun, signal } = options
  if (!Number.isFinite(everyMs) || everyMs <= 0) throw new Error('the maintenance interval must be a positive number of milliseconds')
  log.info(`maintenance: calling ${caller.url} every ${spelledInterval(everyMs)}`)
  // A function, not a property read: the signal changes while the loop awaits.
  const stopped = (): boolean => signal?.aborted === true
  while (!stopped()) {
    let ok = true
    try {
      await maintainOnce(caller, log, signal)
    } catch (error) {
      if (stopped()) return
      ok = false
      const reason = reasonOf(error)
      log.error(`${reason}; trying again in ${spelledInterval(everyMs)}`)
      await reportMaintenanceFailure(caller, reason, log)
    }
    await afterRun?.(ok)
    if (stopped()) return
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, everyMs)
      function done (): void {
        clearTimeout(timer)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      signal?.addEventListener('abort', done, { once: true })
    })
  }
}
