// The authorization endpoint (`/{tenant}/oauth2/v2.0/authorize`): checks a request as the identity
// platform does, then answers at once (a redirect with a code or an error) or shows the consent page.
//
// Sign-in is a cookie, as in a browser signed in to Microsoft: once a person picked an account
// here, later requests of that browser skip the page when every scope is consented already, and
// `prompt=none` works. Scripts and tests use the stand-in's own `approve` parameter instead.
import { AuthorizePageError } from './errors.js'
import { CONSUMERS_TENANT, parseScopes } from './identity.js'
import type { Account, Identity } from './identity.js'
import { chosenAccount, ConsentDesk, PKCE_VALUE, pkceMethodOf } from '../stand-in/oauth.js'
import type { PkceMethod } from '../stand-in/oauth.js'
import { randomText } from './secrets.js'

export const SESSION_COOKIE = 'ESTSAUTH'
const PROMPTS = new Set(['login', 'none', 'consent', 'select_account'])
const RESPONSE_MODES = new Set(['query', 'fragment', 'form_post'])

export type ResponseMode = 'query' | 'fragment' | 'form_post'

export interface AuthorizeRequest {
  tenant: string
  clientId: string
  redirectUri: string
  responseMode: ResponseMode
  scopes: string[]
  state: string | undefined
  nonce: string | undefined
  loginHint: string | undefined
  prompt: string | undefined
  codeChallenge: string | undefined
  codeChallengeMethod: PkceMethod | undefined
  /** The stand-in's non-interactive decision: `approve=1` consents, `approve=0` declines. */
  approve: boolean | undefined
}

/** Where the browser goes next: a redirect (query or fragment) or a page that posts the answer (form_post). */
export interface Answer {
  kind: 'answer'
  redirectUri: string
  mode: ResponseMode
  params: Record<string, string>
  signIn?: string
}

export type Outcome = Answer | { kind: 'consent', requestId: string, request: AuthorizeRequest, preselected: string | undefined }

/** A refusal that goes back to the application, as `error` and `error_description`. */
class RedirectedError extends Error {
  constructor (readonly code: string, readonly aadsts: number, description: string) {
    super(description)
  }
}

const single = (query: Record<string, unknown>, name: string): string | undefined => {
  const value = query[name]
  if (Array.isArray(value)) return typeof value[0] === 'string' ? value[0] : undefined
  return typeof value === 'string' ? value : undefined
}

const missing = (name: string): RedirectedError =>
  new RedirectedError('invalid_request', 900144, `The request body must contain the following parameter: '${name}'.`)

/** Whether an account may sign in through the tenant named in the path. */
function tenantAdmits (tenant: string, account: Account): boolean {
  if (tenant === 'common') return true
  if (tenant === 'consumers') return account.kind === 'personal'
  if (tenant === 'organizations') return account.kind === 'work'
  return account.tid === tenant
}

/** Whether the tenant segment of a path names something the identity platform knows. */
export function knownTenant (tenant: string, identity: Identity): boolean {
  if (tenant === 'common' || tenant === 'organizations' || tenant === 'consumers' || tenant === CONSUMERS_TENANT) return true
  return identity.listAccounts().some((account) => account.tid === tenant)
}

export class AuthorizationEndpoint {
  private readonly desk: ConsentDesk<AuthorizeRequest>

  constructor (private readonly identity: Identity, now: () => number) {
    this.desk = new ConsentDesk(now, () => randomText(18), () => randomText(24))
  }

  /**
   * Checks and decides a request. What the identity platform shows as an error page is thrown as
   * AuthorizePageError; everything after the redirect URI is known goes back to the application.
   */
  handle (tenant: string, query: Record<string, unknown>, sessionId: string | undefined): Outcome {
    const clientId = single(query, 'client_id')
    if (clientId === undefined || clientId === '') {
      throw new AuthorizePageError(400, 900144, "The request body must contain the following parameter: 'client_id'.")
    }
    const client = this.identity.client(clientId)
    if (client === undefined) {
      throw new AuthorizePageError(400, 700016, `Application with identifier '${clientId}' was not found in the directory.`)
    }
    const redirectUri = single(query, 'redirect_uri')
    if (redirectUri === undefined || redirectUri === '') {
      throw new AuthorizePageError(400, 900144, "The request body must contain the following parameter: 'redirect_uri'.")
    }
    if (!client.redirectUris.includes(redirectUri)) {
      throw new AuthorizePageError(400, 50011,
        `The redirect URI '${redirectUri}' specified in the request does not match the redirect URIs configured for the application '${clientId}'.`)
    }
    if (!knownTenant(tenant, this.identity)) {
      throw new AuthorizePageError(400, 90002, `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`)
    }
    const mode = single(query, 'response_mode') ?? 'query'
    const responseMode: ResponseMode = RESPONSE_MODES.has(mode) ? mode as ResponseMode : 'query'
    const state = single(query, 'state')
    try {
      if (!RESPONSE_MODES.has(mode)) throw new RedirectedError('invalid_request', 70007, `The response_mode '${mode}' is not supported.`)
      const request = this.read(tenant, clientId, redirectUri, responseMode, state, query)
      return this.decide(request, sessionId)
    } catch (err) {
      if (err instanceof RedirectedError) return this.error(redirectUri, responseMode, state, err)
      throw err
    }
  }

  /** The consent page's form: Accept with an account (an unknown address becomes a new account), or Cancel. */
  submit (form: Record<string, unknown>, createAccount: (email: string) => Account): Answer {
    const request = this.desk.take(form)
    if (request === undefined) {
      throw new AuthorizePageError(400, 50089, 'This sign-in request has expired. Start again from the application.')
    }
    if (form['decision'] !== 'accept') return this.error(request.redirectUri, request.responseMode, request.state, declined())
    const account = chosenAccount(form, { byEmail: (email) => this.identity.accountByEmail(email), create: createAccount },
      (message) => new AuthorizePageError(400, 90013, message))
    if (!tenantAdmits(request.tenant, account)) return this.error(request.redirectUri, request.responseMode, request.state, notInTenant(account, request.tenant))
    return { ...this.approve(request, account), signIn: this.signIn(account) }
  }

  sweep (): void {
    this.desk.sweep()
  }

  private read (tenant: string, clientId: string, redirectUri: string, responseMode: ResponseMode, state: string | undefined, query: Record<string, unknown>): AuthorizeRequest {
    const responseType = single(query, 'response_type')
    if (responseType === undefined || responseType === '') throw missing('response_type')
    if (responseType !== 'code') {
      throw new RedirectedError('unsupported_response_type', 700054, `response_type '${responseType}' is not enabled for the application.`)
    }
    const scope = single(query, 'scope')
    if (scope === undefined || scope.trim() === '') throw missing('scope')
    const parsed = parseScopes(scope)
    if ('invalid' in parsed) {
      throw new RedirectedError('invalid_scope', 70011, `The provided value for the input parameter 'scope' is not valid. The scope ${parsed.invalid} is not valid.`)
    }
    const prompt = single(query, 'prompt')
    if (prompt !== undefined && !PROMPTS.has(prompt)) {
      throw new RedirectedError('invalid_request', 90023, `Invalid value specified for the prompt parameter: '${prompt}'.`)
    }
    const codeChallenge = single(query, 'code_challenge')
    const method = single(query, 'code_challenge_method')
    if (method !== undefined && codeChallenge === undefined) throw missing('code_challenge')
    if (method !== undefined && method !== 'S256' && method !== 'plain') {
      throw new RedirectedError('invalid_request', 501491, `Invalid code_challenge_method '${method}'.`)
    }
    if (codeChallenge !== undefined && !PKCE_VALUE.test(codeChallenge)) {
      throw new RedirectedError('invalid_request', 501491, 'Invalid size of Code_Challenge parameter.')
    }
    const approve = single(query, 'approve')
    if (approve !== undefined && approve !== '1' && approve !== '0') {
      throw new AuthorizePageError(400, 90023, 'approve must be 1 or 0 (a parameter of the stand-in only).')
    }
    return {
      tenant,
      clientId,
      redirectUri,
      responseMode,
      scopes: parsed.scopes,
      state,
      nonce: single(query, 'nonce'),
      loginHint: single(query, 'login_hint'),
      prompt,
      codeChallenge,
      codeChallengeMethod: pkceMethodOf(codeChallenge, method),
      approve: approve === undefined ? undefined : approve === '1'
    }
  }

  private decide (request: AuthorizeRequest, sessionId: string | undefined): Outcome {
    const signedIn = this.signedInAccount(sessionId)
    const hinted = request.loginHint === undefined ? undefined : this.identity.accountByEmail(request.loginHint)
    const hintFits = (account: Account): boolean => request.loginHint === undefined || hinted?.oid === account.oid

    if (request.prompt === 'none') {
      const account = signedIn !== undefined && hintFits(signedIn) && tenantAdmits(request.tenant, signedIn) ? signedIn : undefined
      if (account === undefined) throw new RedirectedError('login_required', 50058, 'A silent sign-in request was sent but no user is signed in.')
      if (!this.identity.grantCovers(request.clientId, account.oid, request.scopes)) throw notConsented(request.clientId, 'consent_required')
      return this.approve(request, account)
    }
    if (request.approve === false) throw declined()
    if (request.approve === true) {
      if (hinted === undefined) {
        throw new AuthorizePageError(400, 90023, `approve=1 needs login_hint naming an existing account (got ${request.loginHint ?? 'none'}).`)
      }
      if (!tenantAdmits(request.tenant, hinted)) throw notInTenant(hinted, request.tenant)
      return { ...this.approve(request, hinted), signIn: this.signIn(hinted) }
    }
    const silent = signedIn !== undefined && hintFits(signedIn) && tenantAdmits(request.tenant, signedIn) &&
      request.prompt === undefined && this.identity.grantCovers(request.clientId, signedIn.oid, request.scopes)
    if (silent) return this.approve(request, signedIn)

    const requestId = this.desk.hold(request)
    return { kind: 'consent', requestId, request, preselected: hinted?.email ?? request.loginHint ?? signedIn?.email }
  }

  private signedInAccount (sessionId: string | undefined): Account | undefined {
    const oid = this.desk.signedIn(sessionId)
    return oid === undefined ? undefined : this.identity.accountByOid(oid)
  }

  private signIn (account: Account): string {
    return this.desk.signIn(account.oid)
  }

  private approve (request: AuthorizeRequest, account: Account): Answer {
    const code = this.identity.authorize({
      clientId: request.clientId,
      oid: account.oid,
      redirectUri: request.redirectUri,
      scopes: request.scopes,
      codeChallenge: request.codeChallenge,
      codeChallengeMethod: request.codeChallengeMethod,
      nonce: request.nonce
    })
    const params: Record<string, string> = { code }
    if (request.state !== undefined) params['state'] = request.state
    return { kind: 'answer', redirectUri: request.redirectUri, mode: request.responseMode, params }
  }

  private error (redirectUri: string, mode: ResponseMode, state: string | undefined, error: RedirectedError): Answer {
    const params: Record<string, string> = { error: error.code, error_description: `AADSTS${error.aadsts}: ${error.message}` }
    if (state !== undefined) params['state'] = state
    return { kind: 'answer', redirectUri, mode, params }
  }
}

const declined = (): RedirectedError => new RedirectedError('access_denied', 65004, 'User declined to consent to access the app.')

const notConsented = (clientId: string, error: string): RedirectedError =>
  new RedirectedError(error, 65001, `The user or administrator has not consented to use the application with ID '${clientId}'. Send an interactive authorization request for this user and resource.`)

const notInTenant = (account: Account, tenant: string): RedirectedError =>
  new RedirectedError('invalid_request', 50020, `User account '${account.email}' from identity provider does not exist in tenant '${tenant}' and cannot access the application in that tenant.`)

/** The URL a query or fragment answer redirects to. */
export function answerLocation (answer: Answer): string {
  const url = new URL(answer.redirectUri)
  if (answer.mode === 'fragment') {
    url.hash = new URLSearchParams(answer.params).toString()
  } else {
    for (const [name, value] of Object.entries(answer.params)) url.searchParams.append(name, value)
  }
  return url.toString()
}
