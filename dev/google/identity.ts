// Accounts, OAuth clients, and the grants that join them, with the rules Google documents for
// "Using OAuth 2.0 for Web Server Applications" and OpenID Connect. No HTTP in here: the routes
// validate the request's shape and call these methods.
import type { JWTPayload } from 'jose'
import { OAuthError } from './errors.js'
import { accessTokenHash } from './keys.js'
import type { SigningKeys } from './keys.js'
import { AuthorizationCodes, ExpiringTokenBook, GrantBook, IdentityDirectory, PKCE_VALUE, pkceMatches, TokenBook } from '../stand-in/oauth.js'
import type { ClientRegistration, CodeBase, GrantBase } from '../stand-in/oauth.js'
import { digest, newAccessToken, newAuthorizationCode, newOpaqueId, newRefreshToken, newSubject, safeEqual } from './secrets.js'

export type { ClientRegistration } from '../stand-in/oauth.js'

export interface Account {
  sub: string
  email: string
  name: string
  givenName: string
  familyName: string
  emailVerified: boolean
  picture?: string
  timeZone: string
  createdAt: number
}

export interface AccountInput {
  email: string
  name?: string
  emailVerified?: boolean
  picture?: string
  timeZone?: string
}

export type AccessType = 'online' | 'offline'

interface Grant extends GrantBase {
  sub: string
  /** Digests, oldest first. */
  refreshTokens: string[]
}

interface AccessTokenRecord {
  clientId: string
  sub: string
  grantId: string
  scopes: string[]
  expiresAt: number
}

interface RefreshTokenRecord {
  clientId: string
  sub: string
  grantId: string
  scopes: string[]
}

interface CodeRecord extends CodeBase {
  sub: string
  issueRefreshToken: boolean
}

export interface TokenAnswer {
  access_token: string
  expires_in: number
  scope: string
  token_type: 'Bearer'
  id_token?: string
  refresh_token?: string
}

export interface Authenticated {
  account: Account
  clientId: string
  scopes: string[]
  expiresAt: number
}

export interface Lifetimes {
  accessTokenSec: number
  idTokenSec: number
  codeSec: number
}

// Google answers `email` and `profile` with their long names in the token's `scope`.
const SCOPE_ALIASES: Record<string, string> = {
  email: 'https://www.googleapis.com/auth/userinfo.email',
  profile: 'https://www.googleapis.com/auth/userinfo.profile'
}
export const EMAIL_SCOPE = 'https://www.googleapis.com/auth/userinfo.email'
export const PROFILE_SCOPE = 'https://www.googleapis.com/auth/userinfo.profile'
const GOOGLE_SCOPE_PREFIX = 'https://www.googleapis.com/auth/'

/** Google keeps at most this many refresh tokens per account and client; a new one ends the oldest. */
const REFRESH_TOKENS_PER_GRANT = 100

/** Splits and normalises a `scope` parameter; undefined when a scope is not one Google knows. */
export function parseScopes (scope: string): string[] | undefined {
  const scopes = new Set<string>()
  for (const item of scope.split(' ')) {
    if (item === '') continue
    const name = SCOPE_ALIASES[item] ?? item
    if (name !== 'openid' && !name.startsWith(GOOGLE_SCOPE_PREFIX)) return undefined
    scopes.add(name)
  }
  return [...scopes]
}

export class Identity extends IdentityDirectory<Account> {
  private readonly grants = new GrantBook<Grant>((grant) => grant.sub)
  private readonly accessTokens = new ExpiringTokenBook<AccessTokenRecord>((record) => record.sub)
  // Google's refresh tokens do not expire with time: they end with their grant, or as the oldest of too many.
  private readonly refreshTokens = new TokenBook<RefreshTokenRecord>()
  private readonly codes = new AuthorizationCodes<CodeRecord>(newAuthorizationCode)

  constructor (
    private readonly now: () => number,
    private readonly keys: SigningKeys,
    private readonly issuer: () => string,
    private readonly lifetimes: Lifetimes
  ) {
    super((account) => account.sub)
  }

  /** Client authentication at the token endpoint (client_secret_post or client_secret_basic). */
  authenticateClient (clientId: string | undefined, clientSecret: string | undefined): ClientRegistration {
    if (clientId === undefined || clientId === '') {
      throw new OAuthError(400, 'invalid_request', 'Could not determine client ID from request.')
    }
    const client = this.client(clientId)
    if (client === undefined) throw new OAuthError(401, 'invalid_client', 'The OAuth client was not found.')
    if (clientSecret === undefined || !safeEqual(clientSecret, client.clientSecret)) {
      throw new OAuthError(401, 'invalid_client', 'Unauthorized')
    }
    return client
  }

  createAccount (input: AccountInput): Account {
    const { email, name, givenName, familyName } = this.newAccountNames(input)
    const account: Account = {
      sub: newSubject(),
      email,
      name,
      givenName,
      familyName,
      emailVerified: input.emailVerified ?? true,
      timeZone: input.timeZone ?? 'UTC',
      createdAt: this.now(),
      ...(input.picture === undefined ? {} : { picture: input.picture })
    }
    this.addAccount(account)
    return account
  }

  accountBySub (sub: string): Account | undefined {
    return this.accountById(sub)
  }

  /** True when the account has granted the client every one of `scopes` (consent can be skipped). */
  grantCovers (clientId: string, sub: string, scopes: string[]): boolean {
    return this.grants.covers(clientId, sub, scopes)
  }

  grantedScopes (clientId: string, sub: string): string[] {
    return [...(this.grants.get(clientId, sub)?.scopes ?? [])].sort()
  }

  /**
   * Records a consent and mints the authorization code that goes back in the redirect.
   *
   * A refresh token comes with the code's exchange only for `access_type=offline`, and then only
   * when the account holds no live refresh token for this client (its first offline consent, or
   * its first after a revocation) or when `prompt=consent` made the person consent again.
   */
  authorize (request: {
    clientId: string
    sub: string
    redirectUri: string
    scopes: string[]
    includeGrantedScopes: boolean
    accessType: AccessType
    forcedConsent: boolean
    codeChallenge: string | undefined
    codeChallengeMethod: 'S256' | 'plain' | undefined
    nonce: string | undefined
  }): { code: string, scopes: string[] } {
    const grant = this.grants.consent(request.clientId, request.sub, request.scopes,
      () => ({ id: newOpaqueId(), clientId: request.clientId, sub: request.sub, scopes: new Set(), refreshTokens: [] }))
    const scopes = request.includeGrantedScopes ? [...grant.scopes].sort() : [...request.scopes].sort()
    const code = this.codes.issue({
      clientId: request.clientId,
      sub: request.sub,
      grantId: grant.id,
      redirectUri: request.redirectUri,
      scopes,
      codeChallenge: request.codeChallenge,
      codeChallengeMethod: request.codeChallengeMethod,
      nonce: request.nonce,
      issueRefreshToken: request.accessType === 'offline' && (grant.refreshTokens.length === 0 || request.forcedConsent),
      expiresAt: this.now() + this.lifetimes.codeSec * 1000,
      used: false
    })
    return { code, scopes }
  }

  /** `grant_type=authorization_code`. Codes are single-use and short-lived. */
  async exchangeCode (client: ClientRegistration, code: string, redirectUri: string | undefined, codeVerifier: string | undefined): Promise<TokenAnswer> {
    const record = this.codes.find(code)
    if (record === undefined) throw new OAuthError(400, 'invalid_grant', 'Malformed auth code.')
    if (record.used || record.expiresAt <= this.now() || record.clientId !== client.clientId) {
      throw new OAuthError(400, 'invalid_grant', 'Bad Request')
    }
    if (redirectUri !== record.redirectUri) throw new OAuthError(400, 'redirect_uri_mismatch', 'Bad Request')
    if (record.codeChallenge !== undefined) {
      if (codeVerifier === undefined || codeVerifier === '') throw new OAuthError(400, 'invalid_grant', 'Missing code verifier.')
      if (!PKCE_VALUE.test(codeVerifier) || !pkceMatches(record.codeChallenge, record.codeChallengeMethod ?? 'plain', codeVerifier)) {
        throw new OAuthError(400, 'invalid_grant', 'Invalid code verifier.')
      }
    }
    record.used = true
    const grant = this.liveGrant(record.clientId, record.sub, record.grantId)
    if (grant === undefined) throw new OAuthError(400, 'invalid_grant', 'Token has been expired or revoked.')
    const answer = await this.mintTokens(grant, record.scopes, record.nonce)
    if (record.issueRefreshToken) {
      const refreshToken = newRefreshToken()
      this.refreshTokens.add(refreshToken, { clientId: grant.clientId, sub: grant.sub, grantId: grant.id, scopes: record.scopes })
      grant.refreshTokens.push(digest(refreshToken))
      while (grant.refreshTokens.length > REFRESH_TOKENS_PER_GRANT) {
        const oldest = grant.refreshTokens.shift()
        if (oldest !== undefined) this.refreshTokens.deleteDigest(oldest)
      }
      answer.refresh_token = refreshToken
    }
    return answer
  }

  /** `grant_type=refresh_token`. Google does not rotate refresh tokens: the answer has none. */
  async refresh (client: ClientRegistration, refreshToken: string): Promise<TokenAnswer> {
    const record = this.refreshTokens.find(refreshToken)
    if (record === undefined) throw new OAuthError(400, 'invalid_grant', 'Token has been expired or revoked.')
    if (record.clientId !== client.clientId) throw new OAuthError(400, 'unauthorized_client', 'Unauthorized')
    const grant = this.liveGrant(record.clientId, record.sub, record.grantId)
    if (grant === undefined) throw new OAuthError(400, 'invalid_grant', 'Token has been expired or revoked.')
    return this.mintTokens(grant, record.scopes, undefined)
  }

  /** `/revoke`: an access or a refresh token; either ends the whole grant. False when unknown or dead. */
  revokeToken (token: string): boolean {
    const record = this.accessTokens.find(token) ?? this.refreshTokens.find(token)
    if (record === undefined) return false
    if (this.liveGrant(record.clientId, record.sub, record.grantId) === undefined) return false
    this.dropGrant(record.clientId, record.sub)
    return true
  }

  /** Ends the account's grants (every client, or one), as the person removing access in their account does. */
  revokeAccount (sub: string, clientId?: string): number {
    let revoked = 0
    for (const grant of this.grants.ofAccount(sub, clientId)) {
      this.dropGrant(grant.clientId, grant.sub)
      revoked++
    }
    return revoked
  }

  /** Makes the account's access tokens expire now (refresh tokens keep working). */
  expireAccessTokens (sub: string): number {
    return this.accessTokens.expireAccount(sub, this.now())
  }

  /** The account and scopes behind a bearer token; undefined when unknown, expired or revoked. */
  authenticate (accessToken: string): Authenticated | undefined {
    const record = this.accessTokens.find(accessToken)
    if (record === undefined || record.expiresAt <= this.now()) return undefined
    if (this.liveGrant(record.clientId, record.sub, record.grantId) === undefined) return undefined
    const account = this.accountById(record.sub)
    if (account === undefined) return undefined
    return { account, clientId: record.clientId, scopes: record.scopes, expiresAt: record.expiresAt }
  }

  /** Forgets expired access tokens and used or expired codes. */
  sweep (): void {
    const now = this.now()
    this.accessTokens.sweep(now)
    this.codes.sweep(now)
  }

  summary (sub: string): Array<{ clientId: string, scopes: string[], refreshTokens: number }> {
    return this.grants.ofAccount(sub)
      .map((grant) => ({ clientId: grant.clientId, scopes: [...grant.scopes].sort(), refreshTokens: grant.refreshTokens.length }))
  }

  private liveGrant (clientId: string, sub: string, grantId: string): Grant | undefined {
    return this.grants.live(clientId, sub, grantId)
  }

  private dropGrant (clientId: string, sub: string): void {
    const grant = this.grants.get(clientId, sub)
    if (grant === undefined) return
    for (const refresh of grant.refreshTokens) this.refreshTokens.deleteDigest(refresh)
    this.grants.delete(clientId, sub)
  }

  private async mintTokens (grant: Grant, scopes: string[], nonce: string | undefined): Promise<TokenAnswer> {
    const account = this.accountById(grant.sub)
    if (account === undefined) throw new OAuthError(400, 'invalid_grant', 'Token has been expired or revoked.')
    const now = this.now()
    const accessToken = newAccessToken()
    this.accessTokens.add(accessToken, {
      clientId: grant.clientId,
      sub: grant.sub,
      grantId: grant.id,
      scopes,
      expiresAt: now + this.lifetimes.accessTokenSec * 1000
    })
    const answer: TokenAnswer = {
      access_token: accessToken,
      expires_in: this.lifetimes.accessTokenSec,
      scope: scopes.join(' '),
      token_type: 'Bearer'
    }
    if (scopes.includes('openid')) {
      answer.id_token = await this.keys.signIdToken(this.idTokenClaims(account, grant.clientId, scopes, accessToken, nonce, now))
    }
    return answer
  }

  private idTokenClaims (account: Account, clientId: string, scopes: string[], accessToken: string, nonce: string | undefined, now: number): JWTPayload {
    const iat = Math.floor(now / 1000)
    const claims: JWTPayload = {
      iss: this.issuer(),
      azp: clientId,
      aud: clientId,
      sub: account.sub,
      at_hash: accessTokenHash(accessToken),
      iat,
      exp: iat + this.lifetimes.idTokenSec
    }
    if (scopes.includes(EMAIL_SCOPE)) Object.assign(claims, { email: account.email, email_verified: account.emailVerified })
    if (scopes.includes(PROFILE_SCOPE)) Object.assign(claims, profileClaims(account))
    if (nonce !== undefined) claims['nonce'] = nonce
    return claims
  }
}

export function profileClaims (account: Account): Record<string, string> {
  const claims: Record<string, string> = { name: account.name, given_name: account.givenName }
  if (account.familyName !== '') claims['family_name'] = account.familyName
  if (account.picture !== undefined) claims['picture'] = account.picture
  return claims
}
