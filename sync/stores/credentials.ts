// Provider credentials per connection, sealed with the cipher of sync/lib/credentials.ts before
// they reach the database.
import type { Collection, Db } from 'mongodb'
import type { Clock } from '../lib/clock.js'
import { createCredentialCipher } from '../lib/credentials.js'
import type { CredentialCipher, ProviderCredential } from '../lib/credentials.js'
import { databaseCall } from './database-calls.js'

interface CredentialRow {
  _id: string
  userId: string
  sealed: string
  updatedAt: Date
}

/** Credentials per connection. Without a key configured nothing can be stored or read. */
export class CredentialStore {
  readonly #rows: Collection<CredentialRow>
  readonly #cipher: CredentialCipher | null
  readonly #clock: Clock

  constructor (db: Db, clock: Clock, keyBase64: string | undefined) {
    this.#rows = db.collection<CredentialRow>('credentials')
    this.#cipher = keyBase64 === undefined ? null : createCredentialCipher(keyBase64)
    this.#clock = clock
  }

  get available (): boolean {
    return this.#cipher !== null
  }

  async save (connectionId: string, userId: string, credential: ProviderCredential): Promise<void> {
    const sealed = this.#require().seal(JSON.stringify(credential), connectionId)
    await databaseCall(async () => await this.#rows.updateOne(
      { _id: connectionId },
      { $set: { userId, sealed, updatedAt: this.#clock.now() } },
      { upsert: true }
    ))
  }

  async load (connectionId: string): Promise<ProviderCredential | null> {
    const row = await databaseCall(async (signal) => await this.#rows.findOne({ _id: connectionId }, { signal }))
    if (!row) return null
    return JSON.parse(this.#require().open(row.sealed, connectionId)) as ProviderCredential
  }

  async discard (connectionId: string): Promise<void> {
    await databaseCall(async () => await this.#rows.deleteOne({ _id: connectionId }))
  }

  #require (): CredentialCipher {
    if (!this.#cipher) throw new Error('sync.credentialEncryptionKey is not configured, so provider credentials cannot be stored or read')
    return this.#cipher
  }
}
