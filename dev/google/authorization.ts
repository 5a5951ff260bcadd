// The authorization endpoint (`/o/oauth2/v2/auth`): checks the request as Google does, then
// either answers at once (a redirect with a code or an error) or shows the consent page.
//
// Sign-in is a cookie, as in a browser signed in to Google: once a person picked an account here,
// later requests of that browser may skip the page when every requested scope is already granted,
// and `prompt=none` works. Scripts and tests use the stand-in's own `approve` parameter instead.
import { AuthorizationPageError } from './errors.js'
import { parseScopes } from './identity.js'
import type { Account, AccessType, Identity } from './identity.js'
import { chosenAccount, ConsentDesk, PKCE_VALUE, pkceMethodOf } from '../stand-in/oauth.js'
import type { PkceMethod } from '../stand-in/oauth.js'
import { newOpaqueId } from './secrets.js'

export const SESSION_COOKIE = 'GOOGLE_STAND_IN_SID'

export interface AuthorizationRequest {
  clientId: string
  redirectUri: string
  scopes: string[]
  state: string | undefined
  accessType: AccessType
  prompt: Set<string>
  includeGrantedScopes: boolean
  loginHint: string | undefined
  codeChallenge: string | undefined
  codeChallengeMethod: PkceMethod | undefined
  nonce: string | undefined
  /** The stand-in's non-interactive decision: `approve=1` allows, `approve=0` denies. */
  approve: boolean | undefined
}

export type AuthorizationOutcome =
  | { kind: 'redirect', location: string, signIn?: string }
  | { kind: 'consent', requestId: string, request: AuthorizationRequest, preselected: string | undefined }

const single = (query: Record<string, unknown>, name: string): string | undefined => {
  const value = query[name]
  if (Array.isArray(value)) throw new AuthorizationPageError(400, 'invalid_request', `Parameter ${name} appears more than once.`)
  return typeof value === 'string' ? value : undefined
}

const PROMPTS = new Set(['none', 'consent', 'select_account'])

/** Checks an authorization request; what Google shows as an error page is thrown, never redirected. */
export function readAuthorizationRequest (query: Record<string, unknown>, identity: Identity): AuthorizationRequest {
  const clientId = single(query, 'client_id')
  if (clientId === undefined || clientId === '') throw new AuthorizationPageError(400, 'invalid_request', 'Missing required parameter: client_id')
  const client = identity.client(clientId)
  if (client === undefined) throw new AuthorizationPageError(401, 'invalid_client', 'The OAuth client was not found.')
  const redirectUri = single(query, 'redirect_uri')
  if (redirectUri === undefined || redirectUri === '') throw new AuthorizationPageError(400, 'invalid_request', 'Missing required parameter: redirect_uri')
  if (!client.redirectUris.includes(redirectUri)) {
    throw new AuthorizationPageError(400, 'redirect_uri_mismatch', `The redirect URI in the request, ${redirectUri}, does not match the ones authorized for the OAuth client.`)
  }
  const responseType = single(query, 'response_type')
  if (responseType === undefined) throw new AuthorizationPageError(400, 'invalid_request', 'Required parameter is missing: response_type')
  if (responseType !== 'code') throw new AuthorizationPageError(400, 'unsupported_response_type', `Invalid response_type: ${responseType}`)
  const scope = single(query, 'scope')
  if (scope === undefined || scope.trim() === '') throw new AuthorizationPageError(400, 'invalid_request', 'Missing required parameter: scope')
  const scopes = parseScopes(scope)
  if (scopes === undefined || scopes.length === 0) throw new AuthorizationPageError(400, 'invalid_scope', `Some requested scopes were invalid: ${scope}`)
  const accessType = single(query, 'access_type') ?? 'online'
  if (accessType !== 'online' && accessType !== 'offline') throw new AuthorizationPageError(400, 'invalid_request', `Invalid access_type: ${accessType}`)
  const prompt = new Set((single(query, 'prompt') ?? '').split(' ').filter((item) => item !== ''))
  for (const item of prompt) if (!PROMPTS.has(item)) throw new AuthorizationPageError(400, 'invalid_request', `Invalid prompt: ${item}`)
  if (prompt.has('none') && prompt.size > 1) throw new AuthorizationPageError(400, 'invalid_request', 'prompt=none cannot be combined with other values.')
  const codeChallenge = single(query, 'code_challenge')
  const method = single(query, 'code_challenge_method')
  if (method !== undefined && method !== 'S256' && method !== 'plain') throw new AuthorizationPageError(400, 'invalid_request', `Invalid code_challenge_method: ${method}`)
  if (method !== undefined && codeChallenge === undefined) throw new AuthorizationPageError(400, 'invalid_request', 'Missing code_challenge.')
  if (codeChallenge !== undefined && !PKCE_VALUE.test(codeChallenge)) {
    throw new AuthorizationPageError(400, 'invalid_request', 'Invalid code_challenge.')
  }
  const approve = single(query, 'approve')
  if (approve !== undefined && approve !== '1' && approve !== '0') throw new AuthorizationPageError(400, 'invalid_request', 'approve must be 1 or 0 (stand-in parameter).')
  return {
    clientId,
    redirectUri,
    scopes,
    state: single(query, 'state'),
    accessType,
    prompt,
    includeGrantedScopes: single(query, 'include_granted_scopes') === 'true',
    loginHint: single(query, 'login_hint'),
    codeChallenge,
    codeChallengeMethod: pkceMethodOf(codeChallenge, method),
    nonce: single(query, 'nonce'),
    approve: approve === undefined ? undefined : approve === '1'
  }
}

function redirectTo (redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri)
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.append(name, value)
  return url.toString()
}

export class AuthorizationEndpoint {
  private readonly desk: ConsentDesk<AuthorizationRequest>

  constructor (private readonly identity: Identity, now: () => number) {
    this.desk = new ConsentDesk(now, () => newOpaqueId(), () => newOpaqueId(24))
  }

  /** Decides a checked request: an answer now, or the consent page. */
  decide (request: AuthorizationRequest, sessionId: string | undefined): AuthorizationOutcome {
    const signedIn = this.signedInAccount(sessionId)
    const hinted = request.loginHint === undefined ? undefined : this.identity.accountByEmail(request.loginHint)

    if (request.prompt.has('none')) {
      // No page may be shown: the browser must be signed in (as the hinted account, if one is
      // hinted) and the scopes already granted.
      const account = signedIn !== undefined && (request.loginHint === undefined || hinted?.sub === signedIn.sub) ? signedIn : undefined
      if (account === undefined) return this.error(request, 'login_required')
      if (!this.identity.grantCovers(request.clientId, account.sub, request.scopes)) return this.error(request, 'consent_required')
      return this.approve(request, account, 'none')
    }
    if (request.approve === false) return this.error(request, 'access_denied')
    if (request.approve === true) {
      if (hinted === undefined) {
        throw new AuthorizationPageError(400, 'invalid_request', `approve=1 needs login_hint naming an existing account (got ${request.loginHint ?? 'none'}).`)
      }
      return { ...this.approve(request, hinted, 'consent'), signIn: this.signIn(hinted) }
    }
    const silent = signedIn !== undefined &&
      (request.loginHint === undefined || hinted?.sub === signedIn.sub) &&
      !request.prompt.has('consent') && !request.prompt.has('select_account') &&
      this.identity.grantCovers(request.clientId, signedIn.sub, request.scopes)
    if (silent) return this.approve(request, signedIn, 'none')

    const requestId = this.desk.hold(request)
    return { kind: 'consent', requestId, request, preselected: hinted?.email ?? request.loginHint ?? signedIn?.email }
  }

  /** The consent page's form: Allow with an account (an unknown address becomes a new account), or Deny. */
  submit (form: Record<string, unknown>, createAccount: (email: string) => Account): AuthorizationOutcome & { kind: 'redirect' } {
    const request = this.desk.take(form)
    if (request === undefined) {
      throw new AuthorizationPageError(400, 'invalid_request', 'This sign-in request has expired. Start again from the application.')
    }
    if (form['decision'] !== 'allow') return this.error(request, 'access_denied')
    const account = chosenAccount(form, { byEmail: (email) => this.identity.accountByEmail(email), create: createAccount },
      (message) => new AuthorizationPageError(400, 'invalid_request', message))
    return { ...this.approve(request, account, 'consent'), signIn: this.signIn(account) }
  }

  sweep (): void {
    this.desk.sweep()
  }

  private signedInAccount (sessionId: string | undefined): Account | undefined {
    const sub = this.desk.signedIn(sessionId)
    return sub === undefined ? undefined : this.identity.accountBySub(sub)
  }

  private signIn (account: Account): string {
    return this.desk.signIn(account.sub)
  }

  private approve (request: AuthorizationRequest, account: Account, prompt: 'none' | 'consent'): { kind: 'redirect', location: string } {
    const { code, scopes } = this.identity.authorize({
      clientId: request.clientId,
      sub: account.sub,
      redirectUri: request.redirectUri,
      scopes: request.scopes,
      includeGrantedScopes: request.includeGrantedScopes,
      accessType: request.accessType,
      forcedConsent: request.prompt.has('consent'),
      codeChallenge: request.codeChallenge,
      codeChallengeMethod: request.codeChallengeMethod,
      nonce: request.nonce
    })
    return {
      kind: 'redirect',
      location: redirectTo(request.redirectUri, { state: request.state, code, scope: scopes.join(' '), authuser: '0', prompt })
    }
  }

  private error (request: AuthorizationRequest, error: string): { kind: 'redirect', location: string } {
    return { kind: 'redirect', location: redirectTo(request.redirectUri, { error, state: request.state }) }
  }
}
