import type { SyncConfig, ServiceName } from '../schemas/config.js'
import { isKeyPair } from './maintenance-token.js'

// Rules of the specification's "Deployment configuration keys" that a JSON schema cannot say,
// because they involve more than one key. Each names the key it is about; none prints a value.

export interface RuleFinding {
  key: string
  rule: string
  severity: 'error' | 'warning'
}

// The shape every rule reads: the Sync view, whose extra blocks are optional, covers both services.
type AnyConfig = SyncConfig

interface CrossKeyRule {
  services: ServiceName[]
  check: (config: AnyConfig) => RuleFinding[]
}

const PLACEHOLDER = /^\s*$|^(REPLACE_WITH|CHANGE_?ME|YOUR_|TODO|xxx)|^<.*>$/i

export function isRealValue (value: string | undefined): value is string {
  return value !== undefined && !PLACEHOLDER.test(value)
}

function bothOrNone (block: 'extprovider' | 'extprovider2', config: AnyConfig): RuleFinding[] {
  const credentials = config[block]
  if (credentials === undefined) return []
  const { clientId, clientSecret } = credentials
  if (clientId === undefined && clientSecret === undefined) return []
  const findings: RuleFinding[] = []
  for (const [name, value] of [['clientId', clientId], ['clientSecret', clientSecret]] as const) {
    if (!isRealValue(value)) {
      findings.push({
        key: `${block}.${name}`,
        rule: value === undefined
          ? `must be set together with the other ${block} key (both or none)`
          : 'must be a real value, not a placeholder',
        severity: 'error'
      })
    }
  }
  return findings
}

function isProviderConfigured (config: Pick<AnyConfig, 'extprovider' | 'extprovider2'>): boolean {
  return [config.extprovider, config.extprovider2].some((credentials) =>
    isRealValue(credentials?.clientId) && isRealValue(credentials?.clientSecret))
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

export function decodeEncryptionKey (value: string): Buffer | undefined {
  if (!BASE64.test(value) || value.length % 4 !== 0) return undefined
  const key = Buffer.from(value, 'base64')
  return key.length === 32 ? key : undefined
}

export function databaseNameOf (uri: string): string {
  const match = /^mongodb(?:\+srv)?:\/\/[^/?]*\/?([^?]*)/.exec(uri)
  const name = match?.[1] ? decodeURIComponent(match[1]) : ''
  // The driver's default database when the URI names none.
  return name === '' ? 'test' : name
}

function originOf (url: string): string {
  return new URL(url).origin
}

const crossKeyRules: CrossKeyRule[] = [
  {
    services: ['backend'],
    check: ({ web, backend }) => {
      if (!web || !backend) return []
      const allowed = backend.originsAllowed.map(originOf)
      return allowed.includes(originOf(web.url))
        ? []
        : [{ key: 'backend.originsAllowed', rule: 'must include web.url', severity: 'error' }]
    }
  },
  { services: ['backend', 'sync'], check: (config) => bothOrNone('extprovider', config) },
  { services: ['backend', 'sync'], check: (config) => bothOrNone('extprovider2', config) },
  {
    services: ['backend'],
    check: ({ idsignin }) => {
      if (idsignin === undefined) return []
      const keys = ['servicesId', 'teamId', 'keyId', 'privateKey'] as const
      const missing = keys.filter((key) => !isRealValue(idsignin[key]))
      if (missing.length === 0 || missing.length === keys.length) return []
      return missing.map((key) => ({
        key: `idsignin.${key}`,
        rule: 'all four idsignin keys are set together or none',
        severity: 'error' as const
      }))
    }
  },
  {
    services: ['backend', 'sync'],
    check: (config) => {
      const key = config.sync.credentialEncryptionKey
      if (key === undefined) {
        return isProviderConfigured(config)
          ? [{ key: 'sync.credentialEncryptionKey', rule: 'is required when a provider calendar is configured', severity: 'error' }]
          : []
      }
      return decodeEncryptionKey(key)
        ? []
        : [{ key: 'sync.credentialEncryptionKey', rule: 'must be base64 of exactly 32 bytes', severity: 'error' }]
    }
  },
  {
    services: ['backend', 'sync'],
    check: ({ sync }) => sync.postConnectRedirectUrl !== undefined
      ? []
      : [{
          key: 'sync.postConnectRedirectUrl',
          rule: 'is unset, so it falls back to sync.callbackBaseUrl and a user finishing a connect would be stranded on the Sync host; set it to web.url',
          severity: 'warning'
        }]
  },
  {
    services: ['backend', 'sync'],
    check: ({ database, sync }) => database && databaseNameOf(database.uri) === databaseNameOf(sync.databaseUri)
      ? [{ key: 'sync.databaseUri', rule: 'must name a different database than database.uri (the Sync database is isolated)', severity: 'error' }]
      : []
  },
  {
    services: ['sync'],
    check: ({ database, sync }) => sync.enforceLeastPrivilege === true && sync.apiDatabase === undefined && database === undefined
      ? [{ key: 'sync.apiDatabase', rule: 'is required when sync.enforceLeastPrivilege is true and database.uri is absent', severity: 'error' }]
      : []
  },
  {
    services: ['backend'],
    check: ({ billing }) => {
      if (billing === undefined) return []
      const keys = ['secretKey', 'webhookSecret', 'priceId', 'publishableKey'] as const
      const missing = keys.filter((key) => !isRealValue(billing[key]))
      return missing.length === 0
        ? []
        : [{ key: `billing.${missing[0]}`, rule: 'is missing; all four billing keys are required together, so billing is off', severity: 'warning' }]
    }
  },
  {
    services: ['backend'],
    check: ({ email }) => {
      if (email === undefined || email.provider !== 'mailer') return []
      const keys = ['apiKey', 'from', 'webhookSecret', 'unsubscribeSecret'] as const
      return keys.filter((key) => !isRealValue(email[key])).map((key) => ({
        key: `email.${key}`,
        rule: 'is required when email.provider is mailer',
        severity: 'error' as const
      }))
    }
  },
  {
    services: ['backend', 'sync'],
    check: ({ extprovider, extprovider2, idsignin, billing, runtime }) => runtime.nodeEnv !== 'production'
      ? []
      : ([['extprovider', extprovider], ['extprovider2', extprovider2], ['idsignin', idsignin], ['billing', billing]] as const)
          .filter(([, block]) => block?.endpointBase !== undefined)
          .map(([name]) => ({ key: `${name}.endpointBase`, rule: 'points at a stand-in and is refused when runtime.nodeEnv is production', severity: 'error' as const }))
  },
  {
    services: ['backend'],
    check: ({ email, runtime }) => runtime.nodeEnv === 'production' && email?.apiBase !== undefined
      ? [{ key: 'email.apiBase', rule: 'points at a stand-in and is refused when runtime.nodeEnv is production', severity: 'error' }]
      : []
  },
  {
    services: ['backend', 'sync'],
    check: ({ sync }) => {
      if (sync.maintenanceKey === undefined) return []
      const findings: RuleFinding[] = []
      if (sync.maintenanceIssuer !== undefined) findings.push({ key: 'sync.maintenanceKey', rule: 'is an alternative to sync.maintenanceIssuer: set one of them', severity: 'error' })
      if (sync.maintenanceCaller === undefined) findings.push({ key: 'sync.maintenanceCaller', rule: 'is required with sync.maintenanceKey (the caller its tokens name)', severity: 'error' })
      return findings
    }
  },
  {
    services: ['backend'],
    check: ({ scheduler, sync }) => scheduler === undefined || (sync.maintenanceKey !== undefined && isKeyPair(scheduler.signingKey, sync.maintenanceKey))
      ? []
      : [{ key: 'scheduler.signingKey', rule: 'must be the private half of sync.maintenanceKey, or the Sync service refuses every maintenance call', severity: 'error' }]
  },
  {
    // Session cookies are Secure only over https, and provider codes and tokens cross these URLs:
    // a production install is reached over TLS (ended at a proxy in front or not). A trial on the
    // same machine (localhost) is the exception browsers make themselves.
    services: ['backend', 'sync'],
    check: (config) => {
      if (config.runtime.nodeEnv !== 'production') return []
      const urls: Array<[string, string | undefined]> = [
        ['web.url', config.web?.url], ['backend.apiUrl', config.backend?.apiUrl], ['sync.callbackBaseUrl', config.sync.callbackBaseUrl], ['sync.postConnectRedirectUrl', config.sync.postConnectRedirectUrl]
      ]
      return urls.filter(([, url]) => url !== undefined && !isSecureOrLocal(url)).map(([key]) => ({
        key,
        rule: 'must be an https URL when runtime.nodeEnv is production (http only for localhost): session cookies and provider codes travel there',
        severity: 'error' as const
      }))
    }
  },
  {
    services: ['backend'],
    check: ({ email, runtime }) => email?.scheduleProfile === 'fast' && runtime.nodeEnv === 'production'
      ? [{ key: 'email.scheduleProfile', rule: 'fast is refused when runtime.nodeEnv is production', severity: 'error' }]
      : []
  }
]

function isSecureOrLocal (value: string): boolean {
  try {
    const url = new URL(value)
    return url.protocol === 'https:' || ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
  } catch {
    return false
  }
}

export function checkCrossKeyRules (config: AnyConfig, service: ServiceName): RuleFinding[] {
  return crossKeyRules
    .filter((rule) => rule.services.includes(service))
    .flatMap((rule) => rule.check(config))
}

// Billing with a missing key is off: the whole block is dropped rather than half-used.
export function withoutIncompleteBlocks<T extends AnyConfig> (config: T): T {
  const billing = config.billing
  if (billing === undefined) return config
  const complete = [billing.secretKey, billing.webhookSecret, billing.priceId, billing.publishableKey].every(isRealValue)
  if (complete) return config
  const { billing: _dropped, ...rest } = config
  return rest as T
}

export function isEmailAllowed (allowlist: readonly string[], address: string): boolean {
  if (allowlist.length === 0) return true
  const wanted = address.trim().toLowerCase()
  return allowlist.some((entry) => entry.trim().toLowerCase() === wanted)
}
