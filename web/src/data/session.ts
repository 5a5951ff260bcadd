// Sessions through the SuperTokens web SDK in cookie mode: the SDK keeps the session cookies,
// refreshes an expired access token before retrying a request, and says whether a session exists.
// The backend serves the library's routes under /api/auth on the API's origin.
import SuperTokens from 'supertokens-web-js'
import Session from 'supertokens-web-js/recipe/session'
import EmailPassword from 'supertokens-web-js/recipe/emailpassword'
import { apiUrl } from '../config.js'
import { api } from './api.js'
import { createStore } from './store.js'
import { loadAuthState, markAuthenticated, needsEmailBackfill } from '../lib/auth-state.js'
import { withResetToken, withoutResetToken } from '../lib/auth-params.js'
import { signupFailedEvent } from '../lib/oauth.js'
import { track } from './analytics.js'
import { authFailureMessage } from '../lib/auth-errors.js'

export type SessionState =
  | { status: 'unknown' }
  /** `ended`: the session was ended for the person (revoked, expired), not by their own sign-out. */
  | { status: 'signedOut', ended?: boolean }
  | { status: 'signedIn', userId: string, email: string | null }

export const session = createStore<SessionState>({ status: 'unknown' })

interface Profile { id: string, email: string, name?: string, providerConnected: boolean }

let initialised = false
/**
 * The person's own sign-out is under way: a request in flight meanwhile (the reminders' read, the
 * stream) is refused once the server has dropped the session, and that is no ended session.
 */
let signingOut = false

/**
 * The backend ended the session (a dead provider grant revokes every session of its user, or the
 * refresh token expired): the person is asked to sign in again rather than left signed out.
 */
export function endSession (): void {
  if (!signingOut && session.get().status === 'signedIn') session.set({ status: 'signedOut', ended: true })
}

export function initSession (): void {
  if (initialised) return
  initialised = true
  const api = new URL(apiUrl)
  SuperTokens.init({
    appInfo: { appName: 'Calendar', apiDomain: api.origin, apiBasePath: `${api.pathname}/auth` },
    recipeList: [
      Session.init({
        tokenTransferMethod: 'cookie',
        onHandleEvent: (event) => {
          if (event.action === 'SIGN_OUT') session.set({ status: 'signedOut' })
          else if (event.action === 'UNAUTHORISED') endSession()
        }
      }),
      EmailPassword.init()
    ]
  })
}

function storage (): Storage | null {
  try {
    return window.localStorage
  } catch {
    return null
  }
}

/** On load: whether a session exists, and the email backfill for a returning user. */
export async function restoreSession (): Promise<void> {
  const store = storage()
  const state = store === null ? { hasAuthenticated: true } : loadAuthState(store)
  // A browser that never signed in has no session to look for: no request, no refresh attempt.
  if (!state.hasAuthenticated || !await Session.doesSessionExist()) {
    session.set({ status: 'signedOut' })
    return
  }
  const userId = await Session.getUserId()
  session.set({ status: 'signedIn', userId, email: state.lastKnownEmail ?? null })
  if (store !== null && needsEmailBackfill(state)) {
    try {
      const profile = await api<Profile>('/user/profile')
      markAuthenticated(store, profile.email)
      session.set({ status: 'signedIn', userId, email: profile.email })
    } catch {
      markAuthenticated(store)
    }
  }
}

async function afterSignIn (email: string): Promise<void> {
  const store = storage()
  if (store !== null) markAuthenticated(store, email)
  session.set({ status: 'signedIn', userId: await Session.getUserId(), email })
}

export type FormResult = { ok: true } | { ok: false, message: string, fields?: Record<string, string> }

function fieldErrors (formFields: Array<{ id: string, error: string }>): FormResult {
  const fields = Object.fromEntries(formFields.map((field) => [field.id, field.error]))
  return { ok: false, message: formFields.map((field) => field.error).join('. '), fields }
}

// The SDK throws the response itself for a status it does not handle, and fetch's own error when
// no answer came at all.
async function failure (error: unknown): Promise<FormResult> {
  if (error instanceof Response) {
    const body = await error.json().catch(() => undefined) as { status?: unknown, formFields?: unknown } | undefined
    if (error.status === 400 && body?.status === 'FIELD_ERROR' && Array.isArray(body.formFields)) return fieldErrors(body.formFields as Array<{ id: string, error: string }>)
    return { ok: false, message: authFailureMessage({ kind: 'status', status: error.status, retryAfter: error.headers.get('retry-after') }) }
  }
  // The library's GENERAL_ERROR: a sentence the server chose for the person.
  if (error instanceof Error && (error as { isSuperTokensGeneralError?: unknown }).isSuperTokensGeneralError === true) return { ok: false, message: error.message }
  return { ok: false, message: authFailureMessage({ kind: 'network', online: navigator.onLine }) }
}

export async function signUp (input: { name: string, email: string, password: string }): Promise<FormResult> {
  try {
    const result = await EmailPassword.signUp({
      formFields: [{ id: 'name', value: input.name }, { id: 'email', value: input.email }, { id: 'password', value: input.password }]
    })
    if (result.status === 'FIELD_ERROR') {
      track(signupFailedEvent('fieldError'))
      return fieldErrors(result.formFields)
    }
    if (result.status !== 'OK') {
      track(signupFailedEvent('notAllowed'))
      return { ok: false, message: 'Sign-up is not allowed for this account.' }
    }
    await afterSignIn(input.email)
    return { ok: true }
  } catch (error) {
    track(signupFailedEvent('error'))
    return await failure(error)
  }
}

export async function signIn (input: { email: string, password: string }): Promise<FormResult> {
  try {
    const result = await EmailPassword.signIn({ formFields: [{ id: 'email', value: input.email }, { id: 'password', value: input.password }] })
    if (result.status === 'FIELD_ERROR') return fieldErrors(result.formFields)
    if (result.status === 'WRONG_CREDENTIALS_ERROR') return { ok: false, message: 'The email or the password is not right.' }
    if (result.status !== 'OK') return { ok: false, message: 'Sign-in is not allowed for this account.' }
    await afterSignIn(input.email)
    return { ok: true }
  } catch (error) {
    return await failure(error)
  }
}

/** The answer is the same whether or not the account exists; only a malformed email is refused. */
export async function sendPasswordReset (email: string): Promise<FormResult> {
  try {
    const result = await EmailPassword.sendPasswordResetEmail({ formFields: [{ id: 'email', value: email }] })
    if (result.status === 'FIELD_ERROR') return fieldErrors(result.formFields)
    return { ok: true }
  } catch (error) {
    return await failure(error)
  }
}

/**
 * The SDK reads the reset token from the address bar, which no longer has it (the entry-point
 * handling took it out), so the captured token goes back there for the call and leaves after.
 */
export async function submitNewPassword (password: string, token: string): Promise<FormResult> {
  history.replaceState(history.state, '', withResetToken(location.href, token))
  try {
    const result = await EmailPassword.submitNewPassword({ formFields: [{ id: 'password', value: password }] })
    if (result.status === 'FIELD_ERROR') return fieldErrors(result.formFields)
    if (result.status === 'RESET_PASSWORD_INVALID_TOKEN_ERROR') return { ok: false, message: 'This reset link has expired or was already used. Ask for a new one.' }
    return { ok: true }
  } catch (error) {
    return await failure(error)
  } finally {
    history.replaceState(history.state, '', withoutResetToken(location.href))
  }
}

export async function signOut (): Promise<void> {
  signingOut = true
  try {
    await Session.signOut()
  } finally {
    signingOut = false
  }
  session.set({ status: 'signedOut' })
}

/** After a provider sign-in created the session on the backend. */
export async function adoptSession (): Promise<void> {
  const userId = await Session.getUserId()
  session.set({ status: 'signedIn', userId, email: null })
  const store = storage()
  try {
    const profile = await api<Profile>('/user/profile')
    if (store !== null) markAuthenticated(store, profile.email)
    session.set({ status: 'signedIn', userId, email: profile.email })
  } catch {
    if (store !== null) markAuthenticated(store)
  }
}

export async function attemptRefresh (): Promise<boolean> {
  return await Session.attemptRefreshingSession()
}
