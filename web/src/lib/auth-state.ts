// Client-side auth state in local storage (specification, "Client-side auth state"):
// `hasAuthenticated` (required; the legacy `isGoogleAuthenticated` is migrated into it) and
// `lastKnownEmail` (backfilled from the profile once a previously-authenticated user loads).
import { readJson, type KeyValueStore } from './storage.js'

export const AUTH_STATE_KEY = 'authState'
/** Older clients kept a separate key, and some kept the flag inside the state object. */
export const LEGACY_AUTH_KEY = 'isGoogleAuthenticated'

export interface AuthState {
  hasAuthenticated: boolean
  lastKnownEmail?: string
}

interface StoredState {
  hasAuthenticated?: unknown
  lastKnownEmail?: unknown
  isGoogleAuthenticated?: unknown
}

function truthy (value: unknown): boolean {
  return value === true || value === 'true'
}

/** Reads the state, migrating the legacy flag and writing the migrated form back once. */
export function loadAuthState (store: KeyValueStore): AuthState {
  const stored = readJson<StoredState>(store, AUTH_STATE_KEY) ?? {}
  const legacyKey = store.getItem(LEGACY_AUTH_KEY)
  const state: AuthState = {
    hasAuthenticated: truthy(stored.hasAuthenticated) || truthy(stored.isGoogleAuthenticated) || truthy(legacyKey)
  }
  if (typeof stored.lastKnownEmail === 'string' && stored.lastKnownEmail !== '') state.lastKnownEmail = stored.lastKnownEmail
  const needsWrite = legacyKey !== null || 'isGoogleAuthenticated' in stored || typeof stored.hasAuthenticated !== 'boolean'
  if (needsWrite) {
    saveAuthState(store, state)
    store.removeItem(LEGACY_AUTH_KEY)
  }
  return state
}

function saveAuthState (store: KeyValueStore, state: AuthState): void {
  store.setItem(AUTH_STATE_KEY, JSON.stringify(state))
}

/** After any sign-in: the flag is set, and the email kept when the sign-in named one. */
export function markAuthenticated (store: KeyValueStore, email?: string): AuthState {
  const state: AuthState = { ...loadAuthState(store), hasAuthenticated: true }
  if (email !== undefined && email !== '') state.lastKnownEmail = email
  saveAuthState(store, state)
  return state
}

/** Whether the profile should be asked for the email (a returning user with none recorded). */
export function needsEmailBackfill (state: AuthState): boolean {
  return state.hasAuthenticated && state.lastKnownEmail === undefined
}
