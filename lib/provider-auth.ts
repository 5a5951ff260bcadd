import { createHmac, hkdfSync } from 'node:crypto'
import type { ConnectionSummary } from '../schemas/sync/index.js'
import { isIdentityProvider, isPrivateRelayAddress, normalizeEmail, type IdentityProvider } from './identity.js'
import { grantsMicrosoftScope, MICROSOFT_CALENDAR_SCOPE, MICROSOFT_MAILBOX_SETTINGS_SCOPE } from './identity-providers.js'

// Rules of provider sign-in and connect (specification, "Provider sign-in and sign-up", "Provider
// connect from an authenticated session"), over plain data.

/** The one address a provider may send the browser back to, for sign-in and connect alike. */
export function providerRedirectUri (webUrl: string): string {
  return new URL('/auth/extprovider/callback', webUrl).toString()
}

/** The redirect URI a code was issued for must be the one address; compared exactly, as providers do. */
export function isAllowedRedirectUri (presented: string, webUrl: string): boolean {
  return presented === providerRedirectUri(webUrl)
}

const GOOGLE_SCOPE_ALIASES: Record<string, string> = {
  email: 'https://www.googleapis.com/auth/userinfo.email',
  profile: 'https://www.googleapis.com/auth/userinfo.profile'
}

/** Google answers `email` and `profile` by their long names; both forms name the same grant. */
function canonicalGoogleScope (scope: string): string {
  return GOOGLE_SCOPE_ALIASES[scope] ?? scope
}

/** The scopes asked for that the grant lacks (Google's token answer lists what it holds). */
export function missingGoogleScopes (required: readonly string[], granted: string | undefined): string[] {
  const held = new Set((granted ?? '').split(/\s+/).filter(Boolean).map(canonicalGoogleScope))
  return required.filter((scope) => !held.has(canonicalGoogleScope(scope)))
}

export function scopeList (granted: string | undefined): string[] {
  return (granted ?? '').split(/\s+/).filter(Boolean)
}

/** The server's choice at a Google sign-in (specification, Provider sign-in item 5). */
export type GoogleAuthMode = 'SIGNUP' | 'SIGNIN_INCREMENTAL' | 'RECONNECT_REPAIR'

export interface GoogleAuthFacts {
  /** A user held this Google account before this login. */
  userExists: boolean
  /** That user has a provider refresh token stored. */
  refreshTokenStored: boolean
  /** Sync reports a Google connection of that user in a state an incremental pull can continue. */
  syncAllowsIncremental: boolean
}

/**
 * SIGNUP: an account we do not know yet (import, default data, set up sync); SIGNIN_INCREMENTAL:
 * a known account whose sync is intact (watch check and an incremental pull); RECONNECT_REPAIR:
 * a known account without a usable token or with broken sync (repair, reusing the stored refresh
 * token when the provider issues none).
 */
export function decideGoogleAuthMode (facts: GoogleAuthFacts): GoogleAuthMode {
  if (!facts.userExists) return 'SIGNUP'
  if (facts.refreshTokenStored && facts.syncAllowsIncremental) return 'SIGNIN_INCREMENTAL'
  return 'RECONNECT_REPAIR'
}

// A connection whose pulls run: importing and catching up are on their way to healthy. Any other
// state (connecting, delayed by read failures, revoked, disconnected) needs the repair path.
const INCREMENTAL_STATES = new Set<ConnectionSummary['state']>(['healthy', 'catchingUp', 'importing'])

/** Whether the Sync service's view of the user allows an incremental sync; none known (or Sync unreachable) does not. */
export function syncAllowsIncremental (connections: readonly Pick<ConnectionSummary, 'provider' | 'state'>[] | null, provider: ConnectionSummary['provider'] = 'google'): boolean {
  if (connections === null) return false
  const own = connections.filter((connection) => connection.provider === provider)
  return own.length > 0 && own.every((connection) => INCREMENTAL_STATES.has(connection.state))
}

/**
 * What a Microsoft sign-in that brought calendar access asks of the Sync service: an import when
 * the user has no Microsoft connection yet, an incremental sync when theirs runs, a repair with
 * the new credential otherwise (also when Sync could not be asked).
 */
export function microsoftHandOverMode (connections: readonly Pick<ConnectionSummary, 'provider' | 'state'>[] | null): GoogleAuthMode {
  if (connections === null) return 'RECONNECT_REPAIR'
  if (!connections.some((connection) => connection.provider === 'microsoft')) return 'SIGNUP'
  return syncAllowsIncremental(connections, 'microsoft') ? 'SIGNIN_INCREMENTAL' : 'RECONNECT_REPAIR'
}

/** What the Sync service is asked to do for each mode. */
export const MODE_EFFECT: Record<GoogleAuthMode, 'import' | 'incremental' | 'repair'> = {
  SIGNUP: 'import',
  SIGNIN_INCREMENTAL: 'incremental',
  RECONNECT_REPAIR: 'repair'
}

/**
 * Names a person in logs without naming them: the same value always gives the same id (so lines
 * about one person can be followed), and without the key nobody can test a guessed email against it.
 */
export type TraceId = (value: string) => string

export function traceIdsFrom (secret: string): TraceId {
  const key = Buffer.from(hkdfSync('sha256', secret, 'calendar-log-trace', 'trace ids of log lines', 32))
  return (value) => createHmac('sha256', key).update(value.trim().toLowerCase(), 'utf8').digest('base64url').slice(0, 16)
}

/**
 * Why a Google sign-in must be refused before anything is stored, or undefined: the grant lacks a
 * scope the calendar needs, or offline access (no refresh token issued, none stored for the account).
 */
export function googleGrantRefusal (input: { requiredScopes: readonly string[], grantedScope: string | undefined, refreshTokenIssued: boolean, refreshTokenStored: boolean }): string | undefined {
  const missing = missingGoogleScopes(input.requiredScopes, input.grantedScope)
  if (missing.length > 0) return `Google did not grant every permission the calendar needs (missing: ${missing.join(', ')}). Sign in again and allow them.`
  if (!input.refreshTokenIssued && !input.refreshTokenStored) return 'Google did not grant offline access to the calendar. Sign in again and allow it.'
  return undefined
}

/**
 * Why a Microsoft sign-in must be refused before anything is stored, or undefined: the sign-in
 * asks for the calendar, the mailbox's time zone and offline access in one consent, and Microsoft
 * may answer with less (an administrator's policy, a declined permission).
 */
export function microsoftGrantRefusal (input: { grantedScope: string | undefined, refreshTokenIssued: boolean }): string | undefined {
  const missing = [MICROSOFT_CALENDAR_SCOPE, MICROSOFT_MAILBOX_SETTINGS_SCOPE].filter((scope) => !grantsMicrosoftScope(input.grantedScope ?? '', scope))
  if (missing.length > 0) return `Microsoft did not grant every permission the calendar needs (missing: ${missing.join(', ')}). Sign in again and allow them.`
  if (!input.refreshTokenIssued) return 'Microsoft did not grant offline access to the calendar. Sign in again and allow it.'
  return undefined
}

/** What the session library learned from a provider at sign-in. */
export interface LibraryProviderLogin {
  thirdPartyId: string
  thirdPartyUserId: string
  email: string
  rawUserInfo: { fromIdTokenPayload?: Record<string, unknown>, fromUserInfoAPI?: Record<string, unknown> }
  oAuthTokens: Record<string, unknown>
}

export interface ProviderLoginDetails {
  provider: IdentityProvider
  accountId: string
  email: string
  emailVerified: boolean
  privateRelay: boolean
  name: string | undefined
  refreshToken: string | undefined
  grantedScope: string | undefined
}

// Providers write booleans as JSON booleans or, as Apple does, as the strings "true" and "false".
const isTrue = (value: unknown): boolean => value === true || value === 'true'
const text = (value: unknown): string | undefined => typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined

function claim (raw: LibraryProviderLogin['rawUserInfo'], name: string): unknown {
  return raw.fromIdTokenPayload?.[name] ?? raw.fromUserInfoAPI?.[name]
}

function appleName (raw: LibraryProviderLogin['rawUserInfo']): string | undefined {
  // Apple sends the name once, in the redirect's `user` form field, never in a token.
  const user = raw.fromIdTokenPayload?.['user']
  const name = typeof user === 'object' && user !== null ? (user as { name?: { firstName?: unknown, lastName?: unknown } }).name : undefined
  const full = [text(name?.firstName), text(name?.lastName)].filter(Boolean).join(' ')
  return full === '' ? undefined : full
}

/** The identity facts of a provider login, each provider read its own way; undefined for an unknown provider. */
export function providerLoginDetails (login: LibraryProviderLogin): ProviderLoginDetails | undefined {
  if (!isIdentityProvider(login.thirdPartyId)) return undefined
  const provider = login.thirdPartyId
  const raw = login.rawUserInfo
  const email = normalizeEmail(login.email)
  const emailVerified = provider === 'microsoft'
    // Microsoft's optional claim for an address whose domain owner vouches for it.
    ? isTrue(claim(raw, 'xms_edov')) || isTrue(claim(raw, 'email_verified'))
    : isTrue(claim(raw, 'email_verified'))
  return {
    provider,
    accountId: login.thirdPartyUserId,
    email,
    emailVerified,
    privateRelay: provider === 'apple' && (isTrue(claim(raw, 'is_private_email')) || isPrivateRelayAddress(email)),
    name: provider === 'apple' ? appleName(raw) : text(claim(raw, 'name')),
    refreshToken: text(login.oAuthTokens['refresh_token']),
    grantedScope: text(login.oAuthTokens['scope'])
  }
}
