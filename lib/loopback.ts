import { createHash } from 'node:crypto'
import { isIP } from 'node:net'
import type { SyncConfig } from '../schemas/config.js'
import type { RuleFinding } from './config-rules.js'

// A production process refuses a database or a session core on a loopback address. In the
// self-host stack every service is its own container, where loopback is the container itself, so
// such an address is a development configuration carried over: the stand-ins listen only there.
// Refusing it at start gives one clear line instead of a server-selection timeout later.

/** The host names a MongoDB connection string lists (`mongodb+srv` lists one DNS name). */
export function mongoHostsOf (uri: string): string[] {
  const match = /^mongodb(?:\+srv)?:\/\/(?:[^@/?]*@)?([^/?]*)/.exec(uri)
  if (!match?.[1]) return []
  return match[1].split(',').map((entry) => {
    const host = entry.startsWith('[') ? entry.slice(1, entry.indexOf(']')) : (entry.split(':')[0] ?? '')
    return decodeURIComponent(host)
  })
}

export function isLoopbackHost (host: string): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '')
  if (name === 'localhost' || name.endsWith('.localhost')) return true
  if (isIP(name) === 4) return name.startsWith('127.') || name === '0.0.0.0'
  if (isIP(name) === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(name)
    if (mapped?.[1] !== undefined) return isLoopbackHost(mapped[1])
    return /^(0{0,4}:){2,7}0{0,3}[01]$/.test(name) || name === '::'
  }
  return false
}

const RULE = 'points at a loopback address, which a production process refuses (in a container that is the container itself, and the development stand-ins listen only there)'

/** The database and session-core addresses of a production configuration that are loopback. */
export function loopbackFindings (config: SyncConfig): RuleFinding[] {
  if (config.runtime.nodeEnv !== 'production') return []
  const addresses: Array<[string, string[]]> = [
    ['database.uri', config.database === undefined ? [] : mongoHostsOf(config.database.uri)],
    ['sync.databaseUri', mongoHostsOf(config.sync.databaseUri)],
    ['sessions.uri', config.sessions === undefined ? [] : [new URL(config.sessions.uri).hostname]]
  ]
  return addresses
    .filter(([, hosts]) => hosts.some(isLoopbackHost))
    .map(([key]) => ({ key, rule: RULE, severity: 'error' as const }))
}

/**
 * The test-only way past that refusal, for the test that runs the built processes in production
 * mode against the stand-ins. Its value must be the SHA-256 of the very configuration file being
 * loaded: a variable left in an environment or copied into a deployment names no other file, and
 * stops working as soon as its file changes.
 */
export const LOOPBACK_TEST_OVERRIDE = 'CALENDAR_TEST_ONLY_ACCEPT_LOOPBACK_FOR_CONFIG_SHA256'

export function configFingerprint (configText: string): string {
  return createHash('sha256').update(configText).digest('hex')
}

export type LoopbackOverride = 'unset' | 'granted' | 'mismatch'

export function loopbackOverride (value: string | undefined, configText: string): LoopbackOverride {
  if (value === undefined || value === '') return 'unset'
  return value.trim().toLowerCase() === configFingerprint(configText) ? 'granted' : 'mismatch'
}
