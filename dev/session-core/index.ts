import { listenOnLoopback, refuseProduction } from '../stand-in/index.js'
import Fastify from 'fastify'
import type { FastifyServerOptions } from 'fastify'
import { sessionCoreApp } from './app.js'
import { DEFAULT_TENANT } from './cdi.js'
import type { CoreContext } from './context.js'
import { generateKeySet, loadKeys } from './keys.js'
import { createMemoryStorage } from './memory-storage.js'
import type { Storage } from './storage.js'

export interface SessionCoreOptions {
  /** 0 or absent: any free port. */
  port?: number
  apiKey?: string
  /** Keep users, sessions and signing keys in this MongoDB database; in memory when absent. */
  mongoUri?: string
  /** Default 3600, as the real core. */
  accessTokenValiditySec?: number
  /** Default 144000 (100 days), as the real core. */
  refreshTokenValidityMin?: number
  logger?: FastifyServerOptions['logger']
}

export interface SessionCore {
  uri: string
  close (): Promise<void>
}

const PURGE_INTERVAL_MS = 60 * 60 * 1000

/** Redacts what must never reach a log line if request headers are ever logged. */
export const LOG_REDACT = ['req.headers["api-key"]', 'req.headers.authorization', 'req.headers.cookie']

export async function startSessionCore (options: SessionCoreOptions = {}): Promise<SessionCore> {
  refuseProduction('dev/session-core')
  const accessTokenValiditySec = options.accessTokenValiditySec ?? 3600
  const refreshTokenValidityMin = options.refreshTokenValidityMin ?? 144000
  if (!(accessTokenValiditySec > 0) || !(refreshTokenValidityMin > 0)) {
    throw new Error('accessTokenValiditySec and refreshTokenValidityMin must be positive')
  }
  if (options.apiKey !== undefined && !/^[A-Za-z0-9=-]{20,}$/.test(options.apiKey)) {
    // The real core refuses such keys too, so a key that works here works there.
    throw new Error('apiKey must be at least 20 characters long and use only letters, digits, "=" and "-"')
  }

  let storage: Storage
  if (options.mongoUri === undefined) {
    storage = createMemoryStorage()
  } else {
    const { createMongoStorage } = await import('./mongo-storage.js')
    storage = await createMongoStorage(options.mongoUri)
  }

  const app = Fastify({ logger: options.logger ?? false })
  app.addHook('onClose', async () => { await storage.close() })
  try {
    const ctx: CoreContext = {
      storage,
      keys: await loadKeys(await storage.keysOrCreate(() => generateKeySet())),
      accessTokenValidityMs: accessTokenValiditySec * 1000,
      refreshTokenValidityMs: refreshTokenValidityMin * 60 * 1000,
      tenants: new Set([DEFAULT_TENANT])
    }
    await app.register(sessionCoreApp, { ctx, apiKey: options.apiKey })
    await storage.purgeExpired(Date.now())
    const purge = setInterval(() => {
      storage.purgeExpired(Date.now()).catch((err: unknown) => app.log.error({ err }, 'purging expired sessions failed'))
    }, PURGE_INTERVAL_MS)
    purge.unref()
    app.addHook('onClose', async () => { clearInterval(purge) })
  } catch (err) {
    await app.close()
    throw err
  }
  return {
    uri: await listenOnLoopback(app, options.port, 'session core'),
    close: async () => { await app.close() }
  }
}
