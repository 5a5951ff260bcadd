import { randomBytes } from 'node:crypto'
import type { SessionCoreOptions } from '../../../dev/session-core/index.js'
import { startSessionCore } from '../../../dev/session-core/index.js'

export interface Target {
  uri: string
  apiKey: string | undefined
  /** False when the suite runs against a real core given by SESSIONS_URI. */
  isStandIn: boolean
}

interface Teardown { teardown (fn: () => unknown): void }

/**
 * The core the conformance suite drives: the real one named by SESSIONS_URI (and SESSIONS_KEY),
 * else a fresh stand-in for this test file, closed when the file's tests end.
 */
export async function startTarget (t: Teardown, options: Omit<SessionCoreOptions, 'port'> = {}): Promise<Target> {
  const realUri = process.env['SESSIONS_URI']
  if (realUri !== undefined && realUri !== '') {
    const realKey = process.env['SESSIONS_KEY']
    return { uri: realUri.replace(/\/$/, ''), apiKey: realKey === '' ? undefined : realKey, isStandIn: false }
  }
  const apiKey = 'apiKey' in options ? options.apiKey : randomBytes(24).toString('hex')
  const core = await startSessionCore({ ...options, apiKey })
  t.teardown(() => core.close())
  return { uri: core.uri, apiKey, isStandIn: true }
}
