import { setBounded } from '../lib/bounded-map.js'

/**
 * The access tokens that code exchanges answered, by the refresh token issued with each, until
 * the new connection's first call takes its own. Without them a new connection's import began
 * with a token refresh (a round trip to the provider's token endpoint, and at Microsoft a rotated
 * refresh token to store) on the way to the weeks around today. A token is taken once; one the
 * connection's first call never takes (a job run by another Sync process) expires here unused.
 */
export class FreshGrants {
  readonly #grants = new Map<string, { accessToken: string, expiresAt: number }>()
  readonly #now: () => number

  constructor (now: () => number = Date.now) {
    this.#now = now
  }

  keep (refreshToken: string, accessToken: string, expiresAt: number): void {
    const now = this.#now()
    for (const [key, grant] of this.#grants) if (grant.expiresAt <= now) this.#grants.delete(key)
    setBounded(this.#grants, refreshToken, { accessToken, expiresAt }, FRESH_GRANTS_KEPT)
  }

  /** The access token issued with `refreshToken`, once, while it has more than FRESH_GRANT_MARGIN_MS left. */
  take (refreshToken: string): { accessToken: string, expiresAt: number } | undefined {
    const grant = this.#grants.get(refreshToken)
    this.#grants.delete(refreshToken)
    return grant !== undefined && grant.expiresAt - this.#now() > FRESH_GRANT_MARGIN_MS ? grant : undefined
  }
}

/** Code exchanges whose tokens wait for their connection's first call, at most: a burst of connects. */
const FRESH_GRANTS_KEPT = 100
/** An access token this close to its end is not worth taking: the first calls would need a refresh anyway. */
const FRESH_GRANT_MARGIN_MS = 60_000
