// The whole system for browser tests, on free ports of 127.0.0.1: the MongoDB and session-core
// stand-ins, the real Sync service, the backend app listening, and the web client served by
// web/server.ts with the backend's web.url pointing at it. The backend's log is captured, so a
// test can read the password-reset link the backend logs in the `test` environment.
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { buildApp, freePort, startDependencies, type BuiltApp, type Teardown } from '../helper.js'
import { startSyncService, type SyncService } from '../events/sync-service.js'
import { startWebServer, type WebServer } from '../../web/server.js'

export interface WebStack {
  webUrl: string
  apiUrl: string
  backend: BuiltApp
  sync: SyncService
  web: WebServer
}

export async function startWebStack (t: Teardown, options: { pollIntervalMs?: number, webValues?: { googleClientId?: string } } = {}): Promise<WebStack> {
  const test = t as Test
  const deps = await startDependencies(test, { replicaSet: true })
  const sync = await startSyncService(test, deps.databaseUri(`sync_${randomBytes(4).toString('hex')}`))
  const [backendPort, webPort] = [await freePort(), await freePort()]
  const webUrl = `http://127.0.0.1:${webPort}`
  const apiUrl = `http://127.0.0.1:${backendPort}/api`
  const backend = await buildApp(test, deps, { syncUrl: sync.url, internalAuthToken: sync.internalAuthToken }, (config) => ({
    ...config,
    web: { ...config.web, url: webUrl },
    backend: { ...config.backend, apiUrl, originsAllowed: [webUrl] }
  }))
  await backend.app.listen({ port: backendPort, host: '127.0.0.1' })
  // Tests wait for stream fan-out; a shorter poll keeps them quick without changing what happens.
  backend.app.changeFeed.configure({ pollIntervalMs: options.pollIntervalMs ?? 250 })
  const web = await startWebServer({ port: webPort, apiUrl, ...options.webValues })
  t.teardown(() => web.close())
  return { webUrl, apiUrl, backend, sync, web }
}

/** The password-reset links the backend logged (test environment: logged, not sent). */
export function resetLinks (stack: WebStack): string[] {
  return stack.backend.log.lines()
    .filter((line) => line.msg === 'password reset link (not delivered in test)')
    .map((line) => String(line.passwordResetLink))
}
