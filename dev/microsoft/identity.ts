// Applications, accounts and the grants between them, with the rules of the Microsoft identity
// platform (v2 endpoints): codes, access tokens, ID tokens, and refresh tokens that are replaced
// on every use. No HTTP in here: the routes check a request's shape and call these methods.
import { createHmac, randomBytes } from 'node:crypto'
import type { JWTPayload } from 'jose'
import { TokenError } from './errors.js'
import type { SigningKeys } from './keys.js'
import { AuthorizationCodes, ExpiringTokenBook, GrantBook, IdentityDirectory, pkceMatches } from '../stand-in/oauth.js'
import type { ClientRegistration, CodeBase, GrantBase } from '../stand-in/oauth.js'
import { newAccessToken, newAuthorizationCode, newGuid, newPersonalId, newRefreshToken, safeEqual } from './secrets.js'
import { ianaZone, windowsName } from './zones.js'

// The application (client) id: Microsoft's are GUIDs, any non-empty string is taken.
export type { ClientRegistration } from '../stand-in/oauth.js'

export type AccountKind = 'personal' | 'work'

export interface AccountInput {
  email: string
  name?: string
  /** `personal` (a Microsoft account, the consumers tenant; default) or `work` (a work or school account). */
  kind?: AccountKind
  /** For work accounts: the directory's id (default: one per email domain). */
  tenantId?: string
  /** The mailbox's zone, Windows or IANA name (default UTC): new calendars and seeded events use it. */
  timeZone?: string
}

export interface Account {
  /** The object id (`oid` claim): a GUID; for personal accounts `00000000-0000-0000-` and the account id. */
  oid: string
  /** What Graph answers as the user's `id`: the oid of a work account, the 16-hex id of a personal one. */
  graphId: string
  /** The tenant (`tid` claim): the consumers tenant for personal accounts. */
  tid: string
  kind: AccountKind
  email: string
  name: string
  givenName: string
  surname: string
  /** Windows zone name. */
  timeZone: string
  createdAt: number
}

/** The tenant of every personal Microsoft account, as documented for the `tid` claim. */
export const CONSUMERS_TENANT = '9188040d-6c67-4c5b-b112-36a304b66dad'
const GRAPH_RESOURCE = 'https://graph.microsoft.com/'
const OIDC_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access'])

// Graph permissions are matched without regard to case and answered in their canonical spelling.
const KNOWN_PERMISSIONS = [
  'User.Read', 'User.ReadWrite', 'User.ReadBasic.All', 'User.Read.All', 'Calendars.Read', 'Calendars.ReadBasic',
  'Calendars.ReadWrite', 'Calendars.Read.Shared', 'Calendars.ReadWrite.Shared', 'MailboxSettings.Read', 'MailboxSettings.ReadWrite'
]
const CANONICAL = new Map(KNOWN_PERMISSIONS.map((name) => [name.toLowerCase(), name]))
const PERMISSION = /^[A-Za-z]+(\.[A-Za-z]+)+$/

interface Grant extends GrantBase {
  oid: string
  createdAt: number
}

export type RevocationReason = 'sessions' | 'consent'

interface AccessTokenRecord {
  clientId: string
  oid: string
  scopes: string[]
  expiresAt: number
}

interface RefreshTokenRecord {
  clientId: string
  oid: string
  grantId: string
  /** What the code asked for: a refresh without `scope` answers for the same. */
  scopes: string[]
  issuedAt: number
  expiresAt: number
}

interface CodeRecord extends CodeBase {
  oid: string
}

export interface TokenAnswer {
  token_type: 'Bearer'
  scope: string
  expires_in: number
  ext_expires_in: number
  access_token: string
  refresh_token?: string
  id_token?: string
}

export type Authentication =
  | { ok: true, account: Account, clientId: string, scopes: string[], expiresAt: number }
  | { ok: false, reason: 'unknown' | 'expired' }

export interface Lifetimes {
  accessTokenSec: number
  idTokenSec: number
  codeSec: number
  refreshTokenSec: number
}

/** Splits a `scope` parameter into Graph permissions (full names) and OpenID Connect scopes. */
export function parseScopes (text: string): { scopes: string[] } | { invalid: string } {
  const scopes = new Set<string>()
  for (const item of text.split(' ')) {
    if (item === '') continue
    const lower = item.toLowerCase()
    if (OIDC_SCOPES.has(lower)) {
      scopes.add(lower)
      continue
    }
    const name = lower.startsWith(GRAPH_RESOURCE) ? item.slice(GRAPH_RESOURCE.length) : item
    if (!PERMISSION.test(name) || item.startsWith('api://')) return { invalid: item }
    scopes.add(GRAPH_RESOURCE + (CANONICAL.get(name.toLowerCase()) ?? name))
  }
  return { scopes: [...scopes] }
}

/** Graph permissions of a scope list, by their short names (`Calendars.ReadWrite`). */
export const graphPermissions = (scopes: Iterable<string>): string[] =>
  [...scopes].filter((scope) => scope.startsWith(GRAPH_RESOURCE)).map((scope) => scope.slice(GRAPH_RESOURCE.length))

const isoSeconds = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

export class Identity extends IdentityDirectory<Account> {
  private readonly tenantsByDomain = new Map<string, string>()
  private readonly grants = new GrantBook<Grant>((grant) => grant.oid)
  private readonly revokedGrants = new Map<string, RevocationReason>()
  private readonly accessTokens = new ExpiringTokenBook<AccessTokenRecord>((record) => record.oid)
  private readonly refreshTokens = new ExpiringTokenBook<RefreshTokenRecord>((record) => record.oid)
  private readonly codes = new AuthorizationCodes<CodeRecord>(newAuthorizationCode)
  // Pairwise subjects are an HMAC of application and account, stable for the life of the process.
  private readonly pairwiseSalt = randomBytes(32)

  constructor (
    private readonly now: () => number,
    private readonly keys: SigningKeys,
    private readonly origin: () => string,
    private readonly lifetimes: Lifetimes
  ) {
    super((account) => account.oid)
  }

  /** Client authentication at the token endpoint: client_secret_post or client_secret_basic. */
  authenticateClient (clientId: string | undefined, clientSecret: string | undefined): ClientRegistration {
    if (clientId === undefined || clientId === '') {
      throw new TokenError(400, 'invalid_request', 900144, "The request body must contain the following parameter: 'client_id'.")
    }
    const client = this.client(clientId)
    if (client === undefined) {
      throw new TokenError(400, 'unauthorized_client', 700016,
        `Application with identifier '${clientId}' was not found in the directory. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant.`)
    }
    if (clientSecret === undefined || clientSecret === '') {
      throw new TokenError(401, 'invalid_client', 7000218, "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.")
    }
    if (!safeEqual(clientSecret, client.clientSecret)) {
      throw new TokenError(401, 'invalid_client', 7000215, 'Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app.')
    }
    return client
  }

  createAccount (input: AccountInput): Account {
    const { email, name, givenName, familyName } = this.newAccountNames(input)
    const kind = input.kind ?? 'personal'
    if (kind !== 'personal' && kind !== 'work') throw new Error('kind must be personal or work')
    const given = input.timeZone ?? 'UTC'
    const zone = ianaZone(given)
    if (zone === undefined) throw new Error(`unknown time zone ${given}`)
    let oid: string
    let graphId: string
    let tid: string
    if (kind === 'personal') {
      graphId = newPersonalId()
      oid = `00000000-0000-0000-${graphId.slice(0, 4)}-${graphId.slice(4)}`
      tid = CONSUMERS_TENANT
    } else {
      oid = newGuid()
      graphId = oid
      const domain = email.split('@')[1] ?? ''
      tid = input.tenantId ?? this.tenantsByDomain.get(domain) ?? newGuid()
      if (!this.tenantsByDomain.has(domain)) this.tenantsByDomain.set(domain, tid)
    }
    const account: Account = {
      oid,
      graphId,
      tid,
      kind,
      email,
      name,
      givenName,
      surname: familyName,
      // Outlook keeps a mailbox's zone by its Windows name.
      timeZone: given.includes('/') ? windowsName(zone) : given,
      createdAt: this.now()
    }
    this.addAccount(account)
    return account
  }

  accountByOid (oid: string): Account | undefined {
    return this.accountById(oid)
  }

  /** Whether the account has consented to every scope for the application already. */
  grantCovers (clientId: string, oid: string, scopes: string[]): boolean {
    return this.grants.covers(clientId, oid, scopes)
  }

  /** The person consented: the grant grows by the requested scopes, and a code is issued. */
  authorize (request: {
    clientId: string
    oid: string
    redirectUri: string
    scopes: string[]
    codeChallenge: string | undefined
    codeChallengeMethod: 'S256' | 'plain' | undefined
    nonce: string | undefined
  }): string {
    const grant = this.grants.consent(request.clientId, request.oid, request.scopes,
      () => ({ id: newGuid(), clientId: request.clientId, oid: request.oid, scopes: new Set(), createdAt: this.now() }))
    return this.codes.issue({
      clientId: request.clientId,
      oid: request.oid,
      grantId: grant.id,
      redirectUri: request.redirectUri,
      scopes: request.scopes,
      codeChallenge: request.codeChallenge,
      codeChallengeMethod: request.codeChallengeMethod,
      nonce: request.nonce,
      expiresAt: this.now() + this.lifetimes.codeSec * 1000,
      used: false
    })
  }

  /** `grant_type=authorization_code`. */
  async exchangeCode (client: ClientRegistration, code: string, redirectUri: string | undefined, codeVerifier: string | undefined): Promise<TokenAnswer> {
    const record = this.codes.find(code)
    if (record === undefined || record.clientId !== client.clientId) {
      throw new TokenError(400, 'invalid_grant', 9002313, 'Invalid request. Request is malformed or invalid.')
    }
    if (record.used) {
      throw new TokenError(400, 'invalid_grant', 54005, 'OAuth2 Authorization code was already redeemed, please retry with a new valid code or use an existing refresh token.')
    }
    if (record.expiresAt <= this.now()) {
      throw new TokenError(400, 'invalid_grant', 70008,
        'The provided authorization code or refresh token has expired due to inactivity. Send a new interactive authorization request for this user and resource.')
    }
    if (redirectUri === undefined || redirectUri === '') {
      throw new TokenError(400, 'invalid_request', 900144, "The request body must contain the following parameter: 'redirect_uri'.")
    }
    if (redirectUri !== record.redirectUri) {
      throw new TokenError(400, 'invalid_grant', 50011,
        `The redirect URI '${redirectUri}' specified in the request does not match the redirect URI used when the authorization code was requested.`)
    }
    if (record.codeChallenge !== undefined) {
      if (codeVerifier === undefined || !pkceMatches(record.codeChallenge, record.codeChallengeMethod ?? 'S256', codeVerifier)) {
        throw new TokenError(400, 'invalid_grant', 501481, 'The Code_Verifier does not match the code_challenge supplied in the authorization request.')
      }
    }
    record.used = true
    const grant = this.liveGrant(record.clientId, record.oid, record.grantId)
    if (grant === undefined) throw this.revokedGrantError(record.grantId, record.clientId, this.now())
    return await this.mint(grant, record.scopes, record.nonce)
  }

  /** `grant_type=refresh_token`: every answer carries a new refresh token; the one used stays valid. */
  async refresh (client: ClientRegistration, refreshToken: string, scope: string | undefined): Promise<TokenAnswer> {
    const record = this.refreshTokens.find(refreshToken)
    if (record === undefined) throw new TokenError(400, 'invalid_grant', 9002313, 'Invalid request. Request is malformed or invalid.')
    if (record.clientId !== client.clientId) {
      throw new TokenError(400, 'invalid_grant', 70000, 'The provided value for the input parameter \'refresh_token\' or \'assertion\' is not valid.')
    }
    const grant = this.liveGrant(record.clientId, record.oid, record.grantId)
    if (grant === undefined) throw this.revokedGrantError(record.grantId, record.clientId, record.issuedAt)
    if (record.expiresAt <= this.now()) {
      const days = Math.round((this.now() - record.issuedAt) / 86_400_000)
      throw new TokenError(400, 'invalid_grant', 700082,
        `The refresh token has expired due to inactivity. The token was issued on '${isoSeconds(record.issuedAt)}' and was inactive for ${days}.00:00:00.`)
    }
    let scopes = record.scopes
    if (scope !== undefined && scope.trim() !== '') {
      const parsed = parseScopes(scope)
      if ('invalid' in parsed) throw new TokenError(400, 'invalid_scope', 70011, `The provided value for the input parameter 'scope' is not valid. The scope ${parsed.invalid} is not valid.`)
      const missing = parsed.scopes.find((item) => !OIDC_SCOPES.has(item) && !grant.scopes.has(item))
      if (missing !== undefined) {
        throw new TokenError(400, 'invalid_grant', 65001,
          `The user or administrator has not consented to use the application with ID '${client.clientId}' named '${client.clientId}'. Send an interactive authorization request for this user and resource.`)
      }
      scopes = parsed.scopes
    }
    return await this.mint(grant, scopes, undefined)
  }

  /**
   * Ends the account's grants (every application, or one), as the person removing an app's
   * permissions (`consent`) or an administrator revoking the user's sessions (`sessions`) does.
   * Answers the applications whose grant ended.
   */
  revokeAccount (oid: string, clientId: string | undefined, reason: RevocationReason): string[] {
    const ended: string[] = []
    for (const grant of this.grants.ofAccount(oid, clientId)) {
      this.revokedGrants.set(grant.id, reason)
      this.grants.delete(grant.clientId, grant.oid)
      ended.push(grant.clientId)
    }
    return ended
  }

  /** Makes the account's access tokens expire now. */
  expireAccessTokens (oid: string): number {
    return this.accessTokens.expireAccount(oid, this.now())
  }

  /** Makes the account's refresh tokens expire now, as 90 days without use would. */
  expireRefreshTokens (oid: string): number {
    return this.refreshTokens.expireAccount(oid, this.now())
  }

  /**
   * The account and scopes behind a bearer token. Access tokens cannot be revoked: they work
   * until they expire, even after the grant ended (only the refresh fails then).
   */
  authenticate (accessToken: string): Authentication {
    const record = this.accessTokens.find(accessToken)
    if (record === undefined) return { ok: false, reason: 'unknown' }
    if (record.expiresAt <= this.now()) return { ok: false, reason: 'expired' }
    const account = this.accountById(record.oid)
    if (account === undefined) return { ok: false, reason: 'unknown' }
    return { ok: true, account, clientId: record.clientId, scopes: record.scopes, expiresAt: record.expiresAt }
  }

  /** Whether the application still holds a grant of the account (subscriptions need one). */
  hasGrant (clientId: string, oid: string): boolean {
    return this.grants.get(clientId, oid) !== undefined
  }

  summary (oid: string): Array<{ clientId: string, scopes: string[], refreshTokens: number }> {
    return this.grants.ofAccount(oid)
      .map((grant) => ({
        clientId: grant.clientId,
        scopes: [...grant.scopes].sort(),
        refreshTokens: [...this.refreshTokens.records()].filter((record) => record.grantId === grant.id && record.expiresAt > this.now()).length
      }))
  }

  /** Forgets expired access tokens and codes, and refresh tokens that can never work again. */
  sweep (): void {
    const now = this.now()
    this.accessTokens.sweep(now)
    this.codes.sweep(now)
    // A revoked one is kept until it would have expired, so it keeps answering why it fails.
    this.refreshTokens.sweep(now - this.lifetimes.refreshTokenSec * 1000)
  }

  /** The ID token's `sub`: pairwise, different for each application the account signs in to. */
  pairwiseSubject (clientId: string, oid: string): string {
    return createHmac('sha256', this.pairwiseSalt).update(`${clientId}\u0000${oid}`).digest('base64url')
  }

  private liveGrant (clientId: string, oid: string, grantId: string): Grant | undefined {
    return this.grants.live(clientId, oid, grantId)
  }

  private revokedGrantError (grantId: string, clientId: string, issuedAt: number): TokenError {
    if (this.revokedGrants.get(grantId) === 'consent') {
      return new TokenError(400, 'invalid_grant', 65001,
        `The user or administrator has not consented to use the application with ID '${clientId}' named '${clientId}'. Send an interactive authorization request for this user and resource.`)
    }
    return new TokenError(400, 'invalid_grant', 50173,
      `The provided grant has expired due to it being revoked, a fresh auth token is needed. The user might have changed or reset their password. The grant was issued on '${isoSeconds(issuedAt)}' and the TokensValidFrom date (before which tokens are not valid) for this user is '${isoSeconds(this.now())}'.`)
  }

  private async mint (grant: Grant, requested: string[], nonce: string | undefined): Promise<TokenAnswer> {
    const account = this.accountById(grant.oid)
    if (account === undefined) throw new TokenError(400, 'invalid_grant', 50034, 'The user account does not exist in the directory.')
    const now = this.now()
    // An access token carries every Graph permission the account consented to for the
    // application, not only those just asked for (incremental consent).
    const graphScopes = [...grant.scopes].filter((scope) => scope.startsWith(GRAPH_RESOURCE))
    const accessToken = newAccessToken()
    this.accessTokens.add(accessToken, {
      clientId: grant.clientId,
      oid: grant.oid,
      scopes: graphScopes,
      expiresAt: now + this.lifetimes.accessTokenSec * 1000
    })
    const oidc = requested.filter((scope) => scope === 'openid' || scope === 'profile' || scope === 'email')
    const answer: TokenAnswer = {
      token_type: 'Bearer',
      scope: [...graphScopes, ...oidc].join(' '),
      expires_in: this.lifetimes.accessTokenSec,
      ext_expires_in: this.lifetimes.accessTokenSec,
      access_token: accessToken
    }
    if (grant.scopes.has('offline_access') && requested.includes('offline_access')) {
      const refreshToken = newRefreshToken()
      this.refreshTokens.add(refreshToken, {
        clientId: grant.clientId,
        oid: grant.oid,
        grantId: grant.id,
        scopes: requested,
        issuedAt: now,
        expiresAt: now + this.lifetimes.refreshTokenSec * 1000
      })
      answer.refresh_token = refreshToken
    }
    if (requested.includes('openid')) answer.id_token = await this.keys.signIdToken(this.idTokenClaims(account, grant.clientId, requested, nonce, now))
    return answer
  }

  private idTokenClaims (account: Account, clientId: string, scopes: string[], nonce: string | undefined, now: number): JWTPayload {
    const iat = Math.floor(now / 1000)
    const claims: JWTPayload = {
      ver: '2.0',
      iss: `${this.origin()}/${account.tid}/v2.0`,
      sub: this.pairwiseSubject(clientId, account.oid),
      aud: clientId,
      exp: iat + this.lifetimes.idTokenSec,
      iat,
      nbf: iat,
      tid: account.tid
    }
    if (scopes.includes('profile')) Object.assign(claims, { oid: account.oid, name: account.name, preferred_username: account.email })
    if (scopes.includes('email')) claims['email'] = account.email
    if (nonce !== undefined) claims['nonce'] = nonce
    return claims
  }
}
