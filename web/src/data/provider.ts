// Provider sign-in and calendar connect as full-page redirects, and their single return route
// /auth/extprovider/callback. Offered only when a Google client id was fixed into the bundle.
import { buildConfig } from '../config.js'
import { api, ApiError } from './api.js'
import { adoptSession } from './session.js'
import { carryLocalEvents } from './calendar.js'
import { track } from './analytics.js'
import {
  GOOGLE_CALENDAR_SCOPES, GOOGLE_SIGN_IN_SCOPES, googleAuthorizationUrl, newState, oauthReturnEvent, parseCallback,
  parseConnectRedirect, safeReturnPath, saveIntent, scopesComplete, takeIntent, takePendingConnect, withoutConnectRedirect, type IntentKind
} from '../lib/oauth.js'
import { CALLBACK_PATH } from '../lib/auth-params.js'

export const providerEnabled = buildConfig.googleClientId !== null

function redirectUri (): string {
  return `${location.origin}${CALLBACK_PATH}`
}

/** Leaves for Google with a fresh state; the intent and the return path wait in session storage. */
export function startGoogle (kind: IntentKind, returnPath: string = `${location.pathname}${location.search}`): void {
  if (buildConfig.googleClientId === null) return
  const state = newState()
  saveIntent(sessionStorage, state, { kind, provider: 'google', returnPath: safeReturnPath(returnPath, location.origin), createdAt: Date.now() })
  location.assign(googleAuthorizationUrl({
    endpoint: buildConfig.googleAuthorizationEndpoint,
    clientId: buildConfig.googleClientId,
    redirectUri: redirectUri(),
    state,
    scopes: kind === 'connect' ? GOOGLE_CALENDAR_SCOPES : GOOGLE_SIGN_IN_SCOPES
  }))
}

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
  if (params.kind === 'providerError') return { ok: false, returnPath, message: params.error === 'access_denied' ? 'Access was not granted.' : `The provider answered: ${params.error}` }
  if (intent.kind === 'connect' && !scopesComplete(params.scope, GOOGLE_CALENDAR_SCOPES)) {
    return { ok: false, returnPath, message: 'Calendar access was not granted. Connect again and allow access to your calendar.' }
  }
  try {
    if (intent.kind === 'signin') {
      await api('/auth/signinup', {
        method: 'POST',
        body: { thirdPartyId: 'google', redirectURIInfo: { redirectURIOnProviderDashboard: redirectUri(), redirectURIQueryParams: { code: params.code, state: params.state, ...(params.scope === null ? {} : { scope: params.scope }) } } }
      })
      await adoptSession()
      await carryLocalEvents()
      return { ok: true, returnPath }
    }
    // Connect: pending local events go first, then the code is exchanged on the current session.
    await carryLocalEvents()
    await api('/auth/extprovider/connect', { method: 'POST', body: { code: params.code, state: params.state, redirectUri: redirectUri(), ...(params.scope === null ? {} : { scope: params.scope }) } })
    return { ok: true, returnPath, message: 'Google Calendar is connected. Your events are being imported.' }
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
 * A connect that went through the Sync service comes back with `status` and `cid`: one
 * oauth_return event for every such redirect, then the parameters leave the URL.
 */
export function handleConnectRedirect (): string | null {
  const redirect = parseConnectRedirect(location.search)
  if (redirect === null) return null
  const intent = takePendingConnect(sessionStorage, Date.now())
  track(oauthReturnEvent(redirect, intent))
  history.replaceState(history.state, '', withoutConnectRedirect(location.href))
  return redirect.status === 'connected'
    ? (intent === 'reconnect' ? 'Google Calendar is reconnected.' : 'Google Calendar is connected.')
    : `Google Calendar was not connected (${redirect.status.replaceAll('_', ' ')}).`
}
