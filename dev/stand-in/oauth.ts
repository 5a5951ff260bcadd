// The OAuth 2.0 bookkeeping both identity stand-ins keep alike: registered clients, grants per
// client and account, single-use authorization codes with PKCE (RFC 7636), expiring tokens, browser
// sign-ins and consent pages waiting for an answer. What each provider answers, when it issues or
// rotates a refresh token, and how its errors look stay in that provider's own identity module.
import { digest, safeEqual } from './secrets.js'

export interface ClientRegistration {
  clientId: string
  clientSecret: string
  /** Compared exactly (scheme, host, port, path and query), as both providers document. */
  redirectUris: string[]
}

/** The registered clients; each provider's identity adds its own token endpoint rules on top. */
class ClientRegistry {
  private readonly clients = new Map<string, ClientRegistration>()

  registerClient (client: ClientRegistration): void {
    if (client.clientId === '' || client.clientSecret === '') throw new Error('a client needs a clientId and a clientSecret')
    this.clients.set(client.clientId, { ...client, redirectUris: [...client.redirectUris] })
  }

  client (clientId: string): ClientRegistration | undefined {
    return this.clients.get(clientId)
  }

  // The secret never leaves the registry through the control surface.
  listClients (): Array<{ clientId: string, redirectUris: string[] }> {
    return [...this.clients.values()].map(({ clientId, redirectUris }) => ({ clientId, redirectUris }))
  }
}

const normaliseEmail = (email: string): string => email.trim().toLowerCase()

/**
 * The registered clients and the accounts that sign in to them. `idOf` names an account by the
 * provider's own id (Google's `sub`, Microsoft's `oid`).
 */
export class IdentityDirectory<Account extends { email: string }> extends ClientRegistry {
  private readonly accountsById = new Map<string, Account>()
  private readonly idByEmail = new Map<string, string>()

  constructor (private readonly idOf: (account: Account) => string) {
    super()
  }

  accountByEmail (email: string): Account | undefined {
    const id = this.idByEmail.get(normaliseEmail(email))
    return id === undefined ? undefined : this.accountsById.get(id)
  }

  listAccounts (): Account[] {
    return [...this.accountsById.values()]
  }

  protected accountById (id: string): Account | undefined {
    return this.accountsById.get(id)
  }

  /** A new account's address (normalised) and its name split into given and family names. */
  protected newAccountNames (input: { email: string, name?: string }): { email: string, name: string, givenName: string, familyName: string } {
    const email = normaliseEmail(input.email)
    if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw new Error(`"${input.email}" is not an email address`)
    if (this.idByEmail.has(email)) throw new Error(`an account ${email} exists already`)
    const name = input.name ?? email.split('@', 1)[0] ?? email
    const [givenName = name, ...rest] = name.split(' ')
    return { email, name, givenName, familyName: rest.join(' ') }
  }

  protected addAccount (account: Account): void {
    this.accountsById.set(this.idOf(account), account)
    this.idByEmail.set(account.email, this.idOf(account))
  }
}

export interface GrantBase {
  /** A new id on every consent after a revocation, so tokens of the revoked grant stay dead. */
  id: string
  clientId: string
  scopes: Set<string>
}

/** One grant per client and account; the account is named by the provider's own id (sub, oid). */
export class GrantBook<G extends GrantBase> {
  private readonly grants = new Map<string, G>()

  constructor (private readonly accountOf: (grant: G) => string) {}

  private static key (clientId: string, accountId: string): string {
    return `${clientId}\u0000${accountId}`
  }

  get (clientId: string, accountId: string): G | undefined {
    return this.grants.get(GrantBook.key(clientId, accountId))
  }

  /** The grant a consent grows by its scopes: the existing one, or a new one from `create`. */
  consent (clientId: string, accountId: string, scopes: string[], create: () => G): G {
    const key = GrantBook.key(clientId, accountId)
    let grant = this.grants.get(key)
    if (grant === undefined) {
      grant = create()
      this.grants.set(key, grant)
    }
    for (const scope of scopes) grant.scopes.add(scope)
    return grant
  }

  /** True when the account has granted the client every one of `scopes` (consent can be skipped). */
  covers (clientId: string, accountId: string, scopes: string[]): boolean {
    const grant = this.get(clientId, accountId)
    return grant !== undefined && scopes.every((scope) => grant.scopes.has(scope))
  }

  /** The grant a token or code was issued under, while it was not revoked since. */
  live (clientId: string, accountId: string, grantId: string): G | undefined {
    const grant = this.get(clientId, accountId)
    return grant?.id === grantId ? grant : undefined
  }

  delete (clientId: string, accountId: string): void {
    this.grants.delete(GrantBook.key(clientId, accountId))
  }

  /** The account's grants (every client, or one). */
  ofAccount (accountId: string, clientId?: string): G[] {
    return [...this.grants.values()].filter((grant) => this.accountOf(grant) === accountId && (clientId === undefined || grant.clientId === clientId))
  }
}

export type PkceMethod = 'S256' | 'plain'

/** RFC 7636 4.1 and 4.2: what a code verifier and a code challenge may look like. */
export const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/

/** RFC 7636 4.3: a challenge without a method is the verifier itself. */
export const pkceMethodOf = (codeChallenge: string | undefined, method: string | undefined): PkceMethod | undefined =>
  codeChallenge === undefined ? undefined : (method ?? 'plain') as PkceMethod

/** RFC 7636 4.6: S256 compares BASE64URL(SHA256(verifier)) with the challenge; plain compares them as they are. */
export function pkceMatches (challenge: string, method: PkceMethod, verifier: string): boolean {
  return safeEqual(challenge, method === 'plain' ? verifier : digest(verifier))
}

export interface CodeBase {
  clientId: string
  grantId: string
  redirectUri: string
  scopes: string[]
  codeChallenge: string | undefined
  codeChallengeMethod: PkceMethod | undefined
  nonce: string | undefined
  expiresAt: number
  used: boolean
}

/** Authorization codes, kept by digest; each is used once and expires. */
export class AuthorizationCodes<R extends CodeBase> {
  private readonly codes = new Map<string, R>()

  constructor (private readonly mintCode: () => string) {}

  issue (record: R): string {
    const code = this.mintCode()
    this.codes.set(digest(code), record)
    return code
  }

  find (code: string): R | undefined {
    return this.codes.get(digest(code))
  }

  sweep (now: number): void {
    for (const [key, record] of this.codes) if (record.used || record.expiresAt <= now) this.codes.delete(key)
  }
}

/** Tokens, kept by digest. */
export class TokenBook<R> {
  protected readonly tokens = new Map<string, R>()

  add (token: string, record: R): void {
    this.tokens.set(digest(token), record)
  }

  find (token: string): R | undefined {
    return this.tokens.get(digest(token))
  }

  /** By the digest a grant keeps of its tokens. */
  deleteDigest (tokenDigest: string): void {
    this.tokens.delete(tokenDigest)
  }

  records (): IterableIterator<R> {
    return this.tokens.values()
  }
}

/** Tokens that expire, each issued to one account. */
export class ExpiringTokenBook<R extends { expiresAt: number }> extends TokenBook<R> {
  constructor (private readonly accountOf: (record: R) => string) {
    super()
  }

  /** Makes the account's live tokens expire now; answers how many did. */
  expireAccount (accountId: string, now: number): number {
    let expired = 0
    for (const record of this.tokens.values()) {
      if (this.accountOf(record) === accountId && record.expiresAt > now) {
        record.expiresAt = now
        expired++
      }
    }
    return expired
  }

  /** Forgets the tokens that expired at or before `before`. */
  sweep (before: number): void {
    for (const [key, record] of this.tokens) if (record.expiresAt <= before) this.tokens.delete(key)
  }
}

const PENDING_LIFETIME_MS = 10 * 60 * 1000

/**
 * The browser side of an authorization endpoint: sign-in cookies (which account a browser picked)
 * and consent pages shown but not yet answered, each forgotten after ten minutes.
 */
export class ConsentDesk<R> {
  private readonly sessions = new Map<string, string>()
  private readonly pending = new Map<string, { request: R, expiresAt: number }>()

  constructor (
    private readonly now: () => number,
    private readonly newRequestId: () => string,
    private readonly newSessionId: () => string
  ) {}

  /** The account id a browser's sign-in cookie names. */
  signedIn (sessionId: string | undefined): string | undefined {
    return sessionId === undefined ? undefined : this.sessions.get(sessionId)
  }

  /** A new sign-in cookie value for the account. */
  signIn (accountId: string): string {
    const sessionId = this.newSessionId()
    this.sessions.set(sessionId, accountId)
    return sessionId
  }

  /** Holds a request while its consent page is shown; answers the page's request id. */
  hold (request: R): string {
    const requestId = this.newRequestId()
    this.pending.set(requestId, { request, expiresAt: this.now() + PENDING_LIFETIME_MS })
    return requestId
  }

  /** The request a consent form answers, once; undefined when unknown or expired. */
  take (form: Record<string, unknown>): R | undefined {
    const requestId = typeof form['request_id'] === 'string' ? form['request_id'] : ''
    const entry = this.pending.get(requestId)
    if (entry === undefined || entry.expiresAt <= this.now()) return undefined
    this.pending.delete(requestId)
    return entry.request
  }

  sweep (): void {
    const now = this.now()
    for (const [id, entry] of this.pending) if (entry.expiresAt <= now) this.pending.delete(id)
  }
}

/**
 * The account a consent form names: an address typed in (which becomes a new account when unknown)
 * or one of the listed accounts. `refuse` makes the provider's own error page.
 */
export function chosenAccount<A> (
  form: Record<string, unknown>,
  accounts: { byEmail: (email: string) => A | undefined, create: (email: string) => A },
  refuse: (message: string) => Error
): A {
  const typed = typeof form['new_account'] === 'string' ? form['new_account'].trim() : ''
  const chosen = typed !== '' ? typed : (typeof form['account'] === 'string' ? form['account'] : '')
  if (chosen === '') throw refuse('Choose an account.')
  const existing = accounts.byEmail(chosen)
  if (existing !== undefined) return existing
  try {
    return accounts.create(chosen)
  } catch (err) {
    throw refuse((err as Error).message)
  }
}
