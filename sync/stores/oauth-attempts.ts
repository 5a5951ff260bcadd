// Authorization attempts in flight: the PKCE verifier of each, kept server-side under the nonce its
// signed state names, short-lived (TTL index) and consumed by the first callback that presents it,
// so a state works once; and the hash of the binder the browser that began it holds.
import type { Collection, Db } from 'mongodb'
import type { Provider } from '../../schemas/sync/index.js'
import { databaseCall } from './database-calls.js'

export interface OAuthAttempt {
  _id: string
  userId: string
  provider: Provider
  codeVerifier: string
  /** The hash of the binder the browser that began holds; absent on attempts from before it was kept. */
  browserBinderHash?: string
  expiresAt: Date
}

export class OAuthAttemptStore {
  readonly #rows: Collection<OAuthAttempt>

  constructor (db: Db) {
    this.#rows = db.collection<OAuthAttempt>('oauthAttempts')
  }

  async ensureIndexes (): Promise<void> {
    // The server removes a row once it expires; consume() refuses an expired one before that.
    await this.#rows.createIndex({ expiresAt: 1 }, { name: 'expiry', expireAfterSeconds: 0 })
  }

  async save (attempt: OAuthAttempt): Promise<void> {
    await databaseCall(async () => await this.#rows.insertOne(attempt))
  }

  /** Removes and returns the attempt; null when it was used already, never existed or expired. */
  async consume (nonce: string, now: Date): Promise<OAuthAttempt | null> {
    const attempt = await databaseCall(async () => await this.#rows.findOneAndDelete({ _id: nonce }))
    return attempt !== null && attempt.expiresAt.getTime() >= now.getTime() ? attempt : null
  }
}
