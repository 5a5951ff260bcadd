// The pure parts of provider sign-in and calendar connect (specification, "Provider sign-in and
// sign-up", "Provider connect from an authenticated session", "Web entry points", "Outbound
// analytics events"): the intent kept in session storage under the CSRF `state`, the same-origin
// return path, the parsing of what comes back to the callback route, and the oauth_return event.
import { readJson, type KeyValueStore } from './storage.js'
import { CALLBACK_PATH } from './auth-params.js'
import { providerName } from './caldav.js'

export type IntentKind = 'signin' | 'connect'
export type ConnectIntent = 'connect' | 'reconnect'
/** The session library's thirdPartyId of each sign-in provider. */
export type SignInProvider = 'google' | 'microsoft' | 'apple'

const SIGN_IN_PROVIDERS: ReadonlySet<unknown> = new Set<SignInProvider>(['google', 'microsoft', 'apple'])

export interface OAuthIntent {
  kind: IntentKind
  /** Which provider the round trip went through; a connect is Google's only. */
  provider: SignInProvider
  /** Same-origin path to return to once the intent is finished. */
  returnPath: string
  createdAt: number
  /** The PKCE verifier of the authorization (Google and Microsoft); the backend derives its nonce from it. */
  codeVerifier?: string
  /** For a connect round trip started through the Sync service: connect or reconnect. */
  connectIntent?: ConnectIntent
  connectionId?: string
}

export const INTENT_PREFIX = 'oauthIntent:'
/** A round trip through the provider takes seconds; an older intent is a stale tab's. */
export const INTENT_TTL_MS = 10 * 60_000
export const FALLBACK_RETURN_PATH = '/day'

const STATE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/

/** A fresh CSRF state: 32 random bytes, base64url. */
export function newState (random: (bytes: Uint8Array) => Uint8Array = (bytes) => globalThis.crypto.getRandomValues(bytes)): string {
  const bytes = random(new Uint8Array(32))
  let text = ''
  for (const byte of bytes) text += String.fromCharCode(byte)
  return btoa(text).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
}

export function saveIntent (store: KeyValueStore, state: string, intent: OAuthIntent): void {
  store.setItem(INTENT_PREFIX + state, JSON.stringify(intent))
}

/**
 * The intent saved under `state`, removed from the store whatever the outcome (a state is good
 * for one return). Null when the state is malformed, unknown, expired or not an intent.
 */
export function takeIntent (store: KeyValueStore, state: string | null, now: number): OAuthIntent | null {
  if (state === null || !STATE_PATTERN.test(state)) return null
  const key = INTENT_PREFIX + state
  const intent = readJson<OAuthIntent>(store, key)
  store.removeItem(key)
  if (intent === null || typeof intent !== 'object') return null
  if (intent.kind !== 'signin' && intent.kind !== 'connect') return null
  // The provider names the thirdPartyId the code is posted with, so only a known one is taken.
  if (!SIGN_IN_PROVIDERS.has(intent.provider) || (intent.kind === 'connect' && intent.provider !== 'google')) return null
  if (typeof intent.createdAt !== 'number' || now - intent.createdAt > INTENT_TTL_MS || intent.createdAt > now + 60_000) return null
  return intent
}

/**
 * A return path that stays on this origin: a path starting with one `/`, no scheme, no
 * protocol-relative `//` or `/\`, no control characters, and not the callback route itself.
 * Anything else falls back to `/day`.
 */
export function safeReturnPath (candidate: unknown, origin: string): string {
  if (typeof candidate !== 'string' || candidate === '' || candidate.length > 2048) return FALLBACK_RETURN_PATH
  if (!candidate.startsWith('/') || candidate.startsWith('//') || candidate.startsWith('/\\')) return FALLBACK_RETURN_PATH
  // Browsers drop tabs and newlines inside URLs, which turns `/\t/evil` into `//evil`.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(candidate)) return FALLBACK_RETURN_PATH
  let url: URL
  try {
    url = new URL(candidate, origin)
  } catch {
    return FALLBACK_RETURN_PATH
  }
  if (url.origin !== new URL(origin).origin) return FALLBACK_RETURN_PATH
  if (url.pathname === CALLBACK_PATH) return FALLBACK_RETURN_PATH
  return `${url.pathname}${url.search}${url.hash}`
}

export type CallbackParams =
  /** `user`: Apple's name and email of a first authorization (JSON, as Apple sends it). */
  | { kind: 'code', code: string, state: string | null, scope: string | null, user: string | null }
  | { kind: 'providerError', error: string, state: string | null }
  | { kind: 'invalid' }

/**
 * What the provider sent back to `/auth/extprovider/callback`. Apple posts its answer; the web
 * server turns the post into these query parameters (web/server.ts, callbackLocationFromForm).
 */
export function parseCallback (search: string): CallbackParams {
  const params = new URLSearchParams(search)
  const state = params.get('state')
  const error = params.get('error')
  if (error !== null) return { kind: 'providerError', error, state }
  const code = params.get('code')
  if (code === null || code === '') return { kind: 'invalid' }
  return { kind: 'code', code, state, scope: params.get('scope'), user: params.get('user') }
}

/** Outcome of a connect round trip that went through the Sync service (`status` and `cid`). */
export interface ConnectRedirect {
  status: string
  correlationId: string
  provider: string
}

const STATUS_PATTERN = /^[a-z][a-z_]{1,39}$/
const CID_PATTERN = /^[A-Za-z0-9_-]{4,64}$/

/**
 * The redirect the Sync service sends the browser to after a connect (`sync.postConnectRedirectUrl`),
 * carrying the outcome `status` and the correlation id `cid`. Null when the URL is not one.
 */
export function parseConnectRedirect (search: string): ConnectRedirect | null {
  const params = new URLSearchParams(search)
  const status = params.get('status')
  const cid = params.get('cid')
  if (status === null || cid === null || !STATUS_PATTERN.test(status) || !CID_PATTERN.test(cid)) return null
  const provider = params.get('provider')
  return { status, correlationId: cid, provider: provider !== null && /^[a-z]{2,20}$/.test(provider) ? provider : 'google' }
}

/** The URL without the redirect's parameters, once they are handled. */
export function withoutConnectRedirect (href: string): string {
  const url = new URL(href)
  for (const name of ['status', 'cid', 'provider', 'intent']) url.searchParams.delete(name)
  return `${url.pathname}${url.search}${url.hash}`
}

/** What the person reads after a connect came back: the outcome, and what to do about it. */
export function connectRedirectMessage (redirect: ConnectRedirect, intent: ConnectIntent): string {
  const name = providerName(redirect.provider)
  switch (redirect.status) {
    case 'connected': return intent === 'reconnect' ? `${name} is reconnected.` : `${name} is connected.`
    case 'denied': return `${name} was not connected: access was not granted.`
    case 'expired': return `${name} was not connected: the sign-in took too long or was used already. Try again.`
    case 'mismatch': return `${name} was not connected: this browser is signed in to another account than the one that started it, or the calendar account's email differs from yours.`
    case 'conflict': return `${name} was not connected: that account is already connected to another user. Sign in as that user to use it.`
    case 'wrong_browser': return `${name} was not connected: it was started in another browser. Start it again here.`
    default: return `${name} could not be connected. Try again in a moment.`
  }
}

export interface AnalyticsEvent {
  event: string
  properties: Record<string, string>
}

/** Emitted for every parsed connect redirect, `connected` included. */
export function oauthReturnEvent (redirect: ConnectRedirect, intent: ConnectIntent): AnalyticsEvent {
  return {
    event: 'oauth_return',
    properties: { provider: redirect.provider, status: redirect.status, intent, correlationId: redirect.correlationId }
  }
}

/** The account has the provider's calendar now, by either connect path. */
export function calendarConnectedEvent (redirect: ConnectRedirect, intent: ConnectIntent): AnalyticsEvent {
  return { event: 'calendar_connected', properties: { provider: redirect.provider, intent, correlationId: redirect.correlationId } }
}

/** A password sign-up the form could not finish: what kind of refusal, never what was typed. */
export function signupFailedEvent (reason: 'fieldError' | 'notAllowed' | 'error'): AnalyticsEvent {
  return { event: 'signup_failed', properties: { method: 'emailpassword', reason } }
}

/** A short id for one connect round trip made by the web's own connect path (the `cid` shape). */
export function newCorrelationId (): string {
  return newState().slice(0, 12)
}

const PENDING_CONNECT_KEY = 'pendingConnect'

/**
 * Before leaving for a Sync-started authorization: which kind of connect, so the return can say,
 * and the page the person was on (its view and date), which Sync's redirect does not carry.
 */
export function savePendingConnect (store: KeyValueStore, intent: ConnectIntent, now: number, returnPath: string): void {
  store.setItem(PENDING_CONNECT_KEY, JSON.stringify({ intent, at: now, returnPath }))
}

/** What `savePendingConnect` kept; a plain connect, back where Sync sent the browser, when nothing (or something stale) was. */
export function takePendingConnect (store: KeyValueStore, now: number, origin: string): { intent: ConnectIntent, returnPath: string | null } {
  const pending = readJson<{ intent?: unknown, at?: unknown, returnPath?: unknown }>(store, PENDING_CONNECT_KEY)
  store.removeItem(PENDING_CONNECT_KEY)
  if (pending === null || typeof pending.at !== 'number' || now - pending.at > INTENT_TTL_MS) return { intent: 'connect', returnPath: null }
  return {
    intent: pending.intent === 'reconnect' ? 'reconnect' : 'connect',
    returnPath: pending.returnPath === undefined ? null : safeReturnPath(pending.returnPath, origin)
  }
}

// The backend's list (lib/identity-providers.ts, GOOGLE_SCOPES); the web tests hold the two equal.
// A Google sign-in brings the calendar along (specification, SIGNUP imports the events), so
// sign-in and connect ask for the same scopes, and the backend refuses a sign-in without them.
export const GOOGLE_CALENDAR_SCOPES = ['openid', 'email', 'profile', 'https://www.googleapis.com/auth/calendar']

interface AuthorizationRequest { endpoint: string, clientId: string, redirectUri: string, state: string }

/** PKCE S256 and the OIDC nonce of one authorization (lib/pkce.ts): the backend checks both at the exchange. */
export interface ProofOfPossession { codeChallenge: string, nonce: string }

/** OAuth's authorization-code request; each provider adds its own parameters. */
function authorizationCodeUrl (request: AuthorizationRequest, scopes: string[], responseMode?: 'query' | 'form_post'): URL {
  const url = new URL(request.endpoint)
  url.searchParams.set('client_id', request.clientId)
  url.searchParams.set('redirect_uri', request.redirectUri)
  url.searchParams.set('response_type', 'code')
  if (responseMode !== undefined) url.searchParams.set('response_mode', responseMode)
  url.searchParams.set('scope', scopes.join(' '))
  url.searchParams.set('state', request.state)
  return url
}

function withProof (url: URL, proof: ProofOfPossession): URL {
  url.searchParams.set('code_challenge', proof.codeChallenge)
  url.searchParams.set('code_challenge_method', 'S256')
  url.searchParams.set('nonce', proof.nonce)
  return url
}

/** The authorization-code request with offline access (a refresh token on first consent). */
export function googleAuthorizationUrl (options: AuthorizationRequest & { scopes: string[], loginHint?: string, proof: ProofOfPossession }): string {
  const url = withProof(authorizationCodeUrl(options, options.scopes), options.proof)
  url.searchParams.set('access_type', 'offline')
  url.searchParams.set('include_granted_scopes', 'true')
  url.searchParams.set('prompt', 'consent')
  if (options.loginHint !== undefined) url.searchParams.set('login_hint', options.loginHint)
  return url.toString()
}

/** Whether the scopes the provider granted include every scope asked for. */
export function scopesComplete (granted: string | null, wanted: string[]): boolean {
  if (granted === null) return false
  const have = new Set(granted.split(/[ ,]+/).filter(Boolean))
  // Google answers the short OpenID names with their URL forms.
  const aliases: Record<string, string> = {
    email: 'https://www.googleapis.com/auth/userinfo.email',
    profile: 'https://www.googleapis.com/auth/userinfo.profile'
  }
  return wanted.every((scope) => have.has(scope) || (aliases[scope] !== undefined && have.has(aliases[scope])))
}

// The backend's lists (lib/identity-providers.ts, MICROSOFT_SCOPES and Apple's client scope); the
// web tests hold the two equal. Microsoft's sign-in asks for the calendar too, so one consent covers both.
const MICROSOFT_SIGN_IN_SCOPES = ['openid', 'email', 'profile', 'offline_access', 'Calendars.ReadWrite', 'MailboxSettings.Read']
const APPLE_SIGN_IN_SCOPES = ['name', 'email']

/**
 * Microsoft's authorization-code request (identity platform v2.0, common tenant), with PKCE and a
 * nonce though the backend redeems the code as a confidential client (RFC 9700, section 2.1.1).
 */
export function microsoftAuthorizationUrl (request: AuthorizationRequest & { proof: ProofOfPossession }): string {
  return withProof(authorizationCodeUrl(request, MICROSOFT_SIGN_IN_SCOPES, 'query'), request.proof).toString()
}

/** Apple's: asking for name or email obliges form_post, so the answer comes as a posted form. */
export function appleAuthorizationUrl (request: AuthorizationRequest): string {
  return authorizationCodeUrl(request, APPLE_SIGN_IN_SCOPES, 'form_post').toString()
}

export interface SignInOption {
  provider: SignInProvider
  label: string
}

const PROVIDER_NAMES: Record<SignInProvider, string> = { google: 'Google', microsoft: 'Microsoft', apple: 'Apple' }

/**
 * Why a sign-in or connect could not leave for the provider, for the person: the proof it sends
 * (PKCE) needs the browser's WebCrypto, which a page served over plain http from another machine
 * does not get (a "secure context" is https, or this machine itself).
 */
export function providerStartFailure (provider: SignInProvider, secureContext: boolean): string {
  const name = PROVIDER_NAMES[provider]
  return secureContext
    ? `Could not start with ${name}. Reload the page and try again.`
    : `Signing in with ${name} needs this page to be opened over https. Open the calendar at its https address, or use your email and password.`
}

/** The sign-in buttons the bundle can offer: a provider's only when its client id was fixed into it. */
export function signInOptions (ids: { googleClientId: string | null, microsoftClientId: string | null, appleServicesId: string | null }): SignInOption[] {
  const options: SignInOption[] = []
  if (ids.googleClientId !== null) options.push({ provider: 'google', label: 'Continue with Google' })
  if (ids.microsoftClientId !== null) options.push({ provider: 'microsoft', label: 'Continue with Microsoft' })
  if (ids.appleServicesId !== null) options.push({ provider: 'apple', label: 'Continue with Apple' })
  return options
}

/** The body of the session library's `POST /auth/signinup` (rid: thirdparty) for a code that came back. */
export function signInUpBody (provider: SignInProvider, callback: Extract<CallbackParams, { kind: 'code' }>, redirectUri: string, codeVerifier?: string) {
  const redirectURIQueryParams: Record<string, string> = { code: callback.code }
  if (callback.state !== null) redirectURIQueryParams['state'] = callback.state
  if (callback.scope !== null) redirectURIQueryParams['scope'] = callback.scope
  // Apple sends the name once, on the first authorization; the backend keeps it from there.
  if (provider === 'apple' && callback.user !== null) redirectURIQueryParams['user'] = callback.user
  return { thirdPartyId: provider, redirectURIInfo: { redirectURIOnProviderDashboard: redirectUri, redirectURIQueryParams, ...(codeVerifier === undefined ? {} : { pkceCodeVerifier: codeVerifier }) } }
}

/** What a person reads when the session library did not sign them in with a provider. */
export function signInUpRefusal (answer: { status?: unknown, reason?: unknown }): string | null {
  if (answer.status === 'OK') return null
  if (answer.status === 'SIGN_IN_UP_NOT_ALLOWED' && typeof answer.reason === 'string' && answer.reason !== '') return answer.reason
  if (answer.status === 'NO_EMAIL_GIVEN_BY_PROVIDER') return 'The provider did not share an email address. Allow it, or sign in another way.'
  return 'The sign-in was not accepted. Please try again.'
}
