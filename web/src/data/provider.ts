// Provider sign-in and calendar connect as full-page redirects, and their single return route
// /auth/extprovider/callback. Sign-in goes through Google, Microsoft or Apple, each offered only
// when its id was fixed into the bundle. The calendar connect from a session is Google's own
// exchange here, or Microsoft's through the Sync service (beginConnection).
import { buildConfig } from '../config.js'
import { api, ApiError } from './api.js'
import { adoptSession } from './session.js'
import { carryLocalEvents } from './calendar.js'
import { track } from './analytics.js'
import { beginConnection } from './sync.js'
import {
  GOOGLE_CALENDAR_SCOPES, appleAuthorizationUrl, calendarConnectedEvent, newCorrelationId, googleAuthorizationUrl, microsoftAuthorizationUrl, newState,
  connectRedirectMessage, oauthReturnEvent, parseCallback, parseConnectRedirect, safeReturnPath, saveIntent, scopesComplete, signInOptions, signInUpBody, signInUpRefusal, takeIntent,
  takePendingConnect, withoutConnectRedirect, type IntentKind, type ProofOfPossession, type SignInProvider
} from '../lib/oauth.js'
import { CALLBACK_PATH } from '../lib/auth-params.js'
import { connectOutcome } from '../../../lib/connect-outcome.js'
import { newPkceVerifier, oidcNonceFor, pkceChallenge } from '../../../lib/pkce.js'

/** Google's calendar connect is offered with a Google client id. */
export const providerEnabled = buildConfig.googleClientId !== null
/** The sign-in buttons of the sign-in and sign-up dialogs. */
export const signInButtons = signInOptions(buildConfig)

function redirectUri (): string {
  return `${location.origin}${CALLBACK_PATH}`
}

const currentPath = () => `${location.pathname}${location.search}`

/**
 * Leaves with a fresh state; the intent, the return path and the PKCE verifier wait in session
 * storage under it (the verifier only where the provider takes PKCE: Google and Microsoft).
 */
async function leaveFor (kind: IntentKind, provider: SignInProvider, returnPath: string, authorizationUrl: (state: string, proof: ProofOfPossession) => string): Promise<void> {
  const state = newState()
  const codeVerifier = newPkceVerifier()
  const proof = { codeChallenge: await pkceChallenge(codeVerifier), nonce: await oidcNonceFor(codeVerifier) }
  saveIntent(sessionStorage, state, { kind, provider, returnPath: safeReturnPath(returnPath, location.origin), createdAt: Date.now(), ...(provider === 'apple' ? {} : { codeVerifier }) })
  location.assign(authorizationUrl(state, proof))
}

/** Leaves for Google: sign-in, or the calendar connect from a session. */
async function startGoogle (kind: IntentKind, returnPath: string = currentPath()): Promise<void> {
  const clientId = buildConfig.googleClientId
  if (clientId === null) return
  await leaveFor(kind, 'google', returnPath, (state, proof) => googleAuthorizationUrl({
    endpoint: buildConfig.googleAuthorizationEndpoint,
    clientId,
    redirectUri: redirectUri(),
    state,
    scopes: GOOGLE_CALENDAR_SCOPES,
    proof
  }))
}

/**
 * The calendar connect (specification, "Provider connect from an authenticated session"): the
 * browser's pending local events go to the account first, and only once they are there does the
 * page leave for Google; a carry that fails keeps the person here with the reason shown.
 */
export async function startConnect (returnPath: string = currentPath()): Promise<void> {
  if (!await carryLocalEvents()) return
  await startGoogle('connect', returnPath)
}

/** The Microsoft calendar connect is offered where Microsoft sign-in is: with its client id. */
export const microsoftConnectEnabled = buildConfig.microsoftClientId !== null

/**
 * Microsoft's calendar connect from a session goes through the Sync service, which exchanges the
 * code at its own callback; as for Google, the browser's pending local events go to the account first.
 */
export async function startMicrosoftConnect (): Promise<void> {
  if (!await carryLocalEvents()) return
  await beginConnection({ provider: 'microsoft', intent: 'connect' })
}

/** Leaves for a provider's sign-in (logged out). */
export async function startSignIn (provider: SignInProvider, returnPath: string = currentPath()): Promise<void> {
  if (provider === 'google') return await startGoogle('signin', returnPath)
  const clientId = provider === 'microsoft' ? buildConfig.microsoftClientId : buildConfig.appleServicesId
  if (clientId === null) return
  await leaveFor('signin', provider, returnPath, (state, proof) => {
    const request = { clientId, redirectUri: redirectUri(), state }
    return provider === 'microsoft'
      ? microsoftAuthorizationUrl({ ...request, endpoint: buildConfig.microsoftAuthorizationEndpoint, proof })
      : appleAuthorizationUrl({ ...request, endpoint: buildConfig.appleAuthorizationEndpoint })
  })
}

// OAuth's `access_denied`, and Apple's own word for a person who cancelled.
const DECLINED: ReadonlySet<string> = new Set(['access_denied', 'user_cancelled_authorize'])

export type CallbackOutcome =
  | { ok: true, returnPath: string, message?: string }
  | { ok: false, returnPath: string, message: string, conflict?: boolean }

/** Finishes what the callback URL carries: checks the state, runs the intent, says where to go. */
export async function finishCallback (): Promise<CallbackOutcome> {
  const params = parseCallback(location.search)
  const intent = takeIntent(sessionStorage, params.kind === 'invalid' ? null : params.state, Date.now())
  const returnPath = safeReturnPath(intent?.returnPath, location.origin)
  if (params.kind === 'invalid') return { ok: false, returnPath, message: 'The sign-in could not be finished: the provider sent nothing to finish.' }
  if (intent === null) return { ok: false, returnPath, message: 'The sign-in could not be finished: it expired or was started in another tab. Please try again.' }
  if (params.kind === 'providerError') return { ok: false, returnPath, message: DECLINED.has(params.error) ? 'Access was not granted.' : `The provider answered: ${params.error}` }
  if (intent.provider === 'google' && !scopesComplete(params.scope, GOOGLE_CALENDAR_SCOPES)) {
    const again = intent.kind === 'connect' ? 'Connect again' : 'Sign in again'
    return { ok: false, returnPath, message: `Calendar access was not granted. ${again} and allow access to your calendar.` }
  }
  try {
    if (intent.kind === 'signin') {
      const answer = await api<{ status?: unknown, reason?: unknown }>('/auth/signinup', { method: 'POST', body: signInUpBody(intent.provider, params, redirectUri(), intent.codeVerifier) })
      const refusal = signInUpRefusal(answer)
      if (refusal !== null) return { ok: false, returnPath, message: refusal }
      await adoptSession()
      await carryLocalEvents()
      return { ok: true, returnPath }
    }
    // Connect: the local events went to the account before the page left (startConnect).
    return await connectWithCode(params, returnPath, intent.codeVerifier)
  } catch (error) {
    if (error instanceof ApiError && error.status === 409) {
      const message = error.code === 'EXTERNAL_CONNECT_EMAIL_MISMATCH'
        ? 'That Google account has a different email. Connect the Google account of this email, or sign in with the account it belongs to.'
        : 'That Google calendar is connected to another account. Sign in with that account to use it.'
      return { ok: false, returnPath, message, conflict: true }
    }
    return { ok: false, returnPath, message: `The provider step failed: ${error instanceof Error ? error.message : String(error)}` }
  }
}

/**
 * The web's own connect path: the backend exchanges the code. The round trip's two analytics events
 * (the backend's oauth_callback, this oauth_return) share a correlation id made here.
 */
async function connectWithCode (params: { code: string, state: string | null, scope: string | null }, returnPath: string, codeVerifier: string | undefined): Promise<CallbackOutcome> {
  const correlationId = newCorrelationId()
  const redirect = (status: string) => ({ status, correlationId, provider: 'google' })
  try {
    await api('/auth/extprovider/connect', { method: 'POST', body: { code: params.code, state: params.state, redirectUri: redirectUri(), correlationId, ...(params.scope === null ? {} : { scope: params.scope }), ...(codeVerifier === undefined ? {} : { codeVerifier }) } })
  } catch (error) {
    track(oauthReturnEvent(redirect(connectOutcome(error instanceof ApiError ? error.code : undefined)), 'connect'))
    throw error
  }
  track(oauthReturnEvent(redirect('connected'), 'connect'))
  track(calendarConnectedEvent(redirect('connected'), 'connect'))
  return { ok: true, returnPath, message: 'Google Calendar is connected. Your events are being imported.' }
}

/**
 * A connect that went through the Sync service comes back with `status` and `cid`: one
 * oauth_return event for every such redirect, then the parameters leave the URL.
 */
export function handleConnectRedirect (): string | null {
  const redirect = parseConnectRedirect(location.search)
  if (redirect === null) return null
  const { intent, returnPath } = takePendingConnect(sessionStorage, Date.now(), location.origin)
  track(oauthReturnEvent(redirect, intent))
  if (redirect.status === 'connected') track(calendarConnectedEvent(redirect, intent))
  history.replaceState(history.state, '', returnPath ?? withoutConnectRedirect(location.href))
  return connectRedirectMessage(redirect, intent)
}
