// Provider credentials at rest in the backend (the user record's refresh token, a credential
// waiting in the outbox): AES-256-GCM under sync.credentialEncryptionKey, bound to where they are
// stored (additional authenticated data), so a ciphertext copied elsewhere or altered in any byte
// is refused rather than decrypted. The sealed form is the one the Sync service uses for its own
// credentials (`v1.<iv>.<tag>.<ciphertext>`, base64url).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { decodeEncryptionKey } from './config-rules.js'

export class CredentialDecryptionError extends Error {
  override name = 'CredentialDecryptionError'
}

const FORMAT = 'v1'
const IV_BYTES = 12
const TAG_BYTES = 16

export interface CredentialCipher {
  seal: (plaintext: string, boundTo: string) => string
  open: (sealed: string, boundTo: string) => string
}

/** Throws when the key is not base64 of exactly 32 bytes; the message never contains the key. */
export function createCredentialCipher (keyBase64: string): CredentialCipher {
  const key = decodeEncryptionKey(keyBase64)
  if (!key) throw new Error('sync.credentialEncryptionKey must be base64 of exactly 32 bytes')
  return {
    seal (plaintext, boundTo) {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES })
      cipher.setAAD(Buffer.from(boundTo))
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      return [FORMAT, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.')
    },
    open (sealed, boundTo) {
      const [format, iv, tag, ciphertext, ...rest] = sealed.split('.')
      if (format !== FORMAT || iv === undefined || tag === undefined || ciphertext === undefined || rest.length > 0) {
        throw new CredentialDecryptionError('stored credential has an unknown format')
      }
      const ivBytes = Buffer.from(iv, 'base64url')
      const tagBytes = Buffer.from(tag, 'base64url')
      if (ivBytes.length !== IV_BYTES || tagBytes.length !== TAG_BYTES) throw new CredentialDecryptionError('stored credential has an unknown format')
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, ivBytes, { authTagLength: TAG_BYTES })
        decipher.setAAD(Buffer.from(boundTo))
        decipher.setAuthTag(tagBytes)
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8')
      } catch {
        throw new CredentialDecryptionError('stored credential failed authentication (tampered, moved or under another key)')
      }
    }
  }
}

/** Where a user's stored provider refresh token is bound. */
export function userRefreshTokenBinding (userId: string): string {
  return `users/${userId}/google.gRefreshToken`
}

/** Where a credential waiting in the outbox for the Sync service is bound. */
export function outboxCredentialBinding (userId: string): string {
  return `syncOutbox/${userId}/credentialHandOver`
}
