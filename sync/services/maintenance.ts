// Watch maintenance, run by the Sync service itself while `sync.execution` is active, or by an
// outside scheduler through POST /maintenance with an ID token naming the configured caller, for this
// endpoint's URL as audience, and signed either by the configured OpenID Connect issuer (keys from its
// discovery document) or by the holder of the configured key (sync.maintenanceKey: the self-host
// stack's scheduler, lib/maintenance-token.ts).
import type { KeyObject } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import type { JWTVerifyGetKey } from 'jose'
import { MAINTENANCE_TOKEN_ALGORITHM, MAINTENANCE_TOKEN_MAX_AGE_S } from '../../lib/maintenance-token.js'
import { inBackground } from '../stores/database-calls.js'
import type { MaintenanceReport } from './connection-watches.js'
import type { SyncEngine } from './sync-engine.js'
import { PeriodicTask } from '../../lib/periodic-task.js'

export class MaintenanceUnauthorizedError extends Error {
  override name = 'MaintenanceUnauthorizedError'
}

export type MaintenanceAuthSettings = {
  /** The `email` claim the caller's ID token must carry. */
  caller: string
  /** The URL of POST /maintenance as the caller addresses it. */
  audience: string
} & (
  | { issuer: string }
  /** The caller signs its own tokens: `iss` is the caller too. */
  | { key: KeyObject }
)

export class Maintenance {
  readonly #engine: SyncEngine
  readonly #log: FastifyBaseLogger
  readonly #auth: MaintenanceAuthSettings | null
  #keys: Promise<JWTVerifyGetKey> | null = null
  #running: Promise<MaintenanceReport> | null = null
  #loops: PeriodicTask[] = []

  constructor (engine: SyncEngine, log: FastifyBaseLogger, auth: MaintenanceAuthSettings | null) {
    this.#engine = engine
    this.#log = log
    this.#auth = auth
  }

  /** One pass; a pass asked for while one runs gets that one's report. */
  async run (): Promise<MaintenanceReport> {
    this.#running ??= this.#engine.maintainWatches().finally(() => { this.#running = null })
    return await this.#running
  }

  /** Checks the bearer ID token of an outside scheduler; throws MaintenanceUnauthorizedError. */
  async authenticate (authorization: string | undefined): Promise<void> {
    const auth = this.#auth
    if (auth === null) throw new MaintenanceUnauthorizedError('no trusted caller is configured (sync.maintenanceIssuer or sync.maintenanceKey)')
    const token = /^Bearer ([A-Za-z0-9_.-]+)$/.exec(authorization ?? '')?.[1]
    if (token === undefined) throw new MaintenanceUnauthorizedError('a bearer ID token is required')
    try {
      const { payload } = 'key' in auth
        // A self-signed token must say when it was made and expire: a leaked one is good for minutes.
        ? await jwtVerify(token, auth.key, {
          issuer: auth.caller,
          audience: auth.audience,
          algorithms: [MAINTENANCE_TOKEN_ALGORITHM],
          requiredClaims: ['iat', 'exp'],
          maxTokenAge: MAINTENANCE_TOKEN_MAX_AGE_S
        })
        : await jwtVerify(token, await this.#issuerKeys(auth.issuer), { issuer: auth.issuer, audience: auth.audience })
      if (payload['email'] !== auth.caller || payload['email_verified'] === false) throw new Error('the token names another caller')
    } catch (error) {
      throw new MaintenanceUnauthorizedError(`the ID token was refused: ${error instanceof Error ? error.message : 'invalid'}`)
    }
  }

  /** The service's own timers; their passes are background work (BACKGROUND_DATABASE_CALL_DEADLINE_MS per database call). */
  start (intervalMs: number, fallbackPullIntervalMs: number): void {
    const maintenance = new PeriodicTask({
      intervalMs,
      run: async () => {
        const report = await inBackground(async () => await this.run())
        if (report.renewed + report.stopped + report.failed > 0) this.#log.info(report, 'watch maintenance pass')
      },
      onError: (error) => this.#log.error({ err: error }, 'watch maintenance failed')
    })
    const overduePulls = new PeriodicTask({
      intervalMs: fallbackPullIntervalMs,
      run: async () => {
        const queued = await inBackground(async () => await this.#engine.pullOverdueCalendars())
        if (queued > 0) this.#log.info({ queued }, 'pulls queued for calendars no notification reached')
      },
      onError: (error) => this.#log.error({ err: error }, 'queueing overdue pulls failed')
    })
    this.#loops = [maintenance, overduePulls]
    for (const loop of this.#loops) loop.start()
  }

  async stop (): Promise<void> {
    // The passes under way use the database, which closes once the service's onClose hooks end.
    await Promise.all([...this.#loops.map(async (loop) => { await loop.stop() }), this.#running?.catch(() => {})])
    this.#loops = []
  }

  async #issuerKeys (issuer: string): Promise<JWTVerifyGetKey> {
    this.#keys ??= (async () => {
      const response = await fetch(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(10_000) })
      if (!response.ok) throw new Error(`the issuer's discovery document answered ${response.status}`)
      const discovery = await response.json() as { jwks_uri?: unknown, issuer?: unknown }
      if (typeof discovery.jwks_uri !== 'string' || discovery.issuer !== issuer) throw new Error('the issuer\'s discovery document does not fit the issuer')
      return createRemoteJWKSet(new URL(discovery.jwks_uri))
    })()
    try {
      return await this.#keys
    } catch (error) {
      this.#keys = null
      throw error
    }
  }
}
