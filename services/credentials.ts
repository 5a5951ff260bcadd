import type { FastifyBaseLogger } from 'fastify'
import { secretsEqual } from '../lib/secrets.js'
import {
  createCredentialCipher, CredentialDecryptionError, outboxCredentialBinding, userRefreshTokenBinding
} from '../lib/credential-cipher.js'

/** Provider refresh tokens at rest in the backend, sealed with sync.credentialEncryptionKey. */
export interface Credentials {
  /** Whether a key is configured (the configuration requires one once a provider is). */
  readonly available: boolean
  sealForUser: (userId: string, refreshToken: string) => string
  /** The stored token in the clear; undefined when there is none or it cannot be opened (logged). */
  openForUser: (userId: string, sealed: string | undefined) => string | undefined
  sealForOutbox: (userId: string, refreshToken: string) => string
  /** Whether a newly issued token differs from the stored one (compared in constant time). */
  differs: (issued: string, stored: string | undefined) => boolean
}

/** The credentials kept under `key` (sync.credentialEncryptionKey); without one, none can be kept. */
export function createCredentials (key: string | undefined, log: FastifyBaseLogger): Credentials {
  const cipher = key === undefined ? undefined : createCredentialCipher(key)
  const required = () => {
    if (cipher === undefined) throw new Error('sync.credentialEncryptionKey is required to keep provider credentials')
    return cipher
  }
  return {
    available: cipher !== undefined,
    sealForUser: (userId: string, refreshToken: string) => required().seal(refreshToken, userRefreshTokenBinding(userId)),
    openForUser: (userId: string, sealed: string | undefined) => {
      if (sealed === undefined) return undefined
      try {
        return required().open(sealed, userRefreshTokenBinding(userId))
      } catch (error) {
        // A token sealed under a rotated key, or a record restored elsewhere: as good as none.
        if (!(error instanceof CredentialDecryptionError)) throw error
        log.warn({ userId, reason: error.message }, 'stored provider refresh token cannot be opened; treated as absent')
        return undefined
      }
    },
    sealForOutbox: (userId: string, refreshToken: string) => required().seal(refreshToken, outboxCredentialBinding(userId)),
    differs: (issued: string, stored: string | undefined) => stored === undefined || !secretsEqual(issued, stored)
  }
}
