// Provider credentials at rest: the one cipher of the code base (lib/credential-cipher.ts,
// AES-256-GCM under sync.credentialEncryptionKey), each credential bound to its connection, so a
// ciphertext copied to another row or altered in any byte is refused rather than decrypted.
export { createCredentialCipher, CredentialDecryptionError, type CredentialCipher } from '../../lib/credential-cipher.js'

/** What a provider adapter needs to act for the user; the adapter decides which fields it uses. */
export type ProviderCredential = Record<string, string>
