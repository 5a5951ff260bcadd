import { normalizeEmail } from './identity.js'
import { FIELD_LIMITS } from '../schemas/limits.js'

// The credential routes' rules (the specification leaves rate limits and request size limits
// open). Guessing passwords or reset tokens must be slow, for one account from many addresses and
// for many accounts from one address; a person who mistypes a few times, or an office behind one
// address signing in at nine, is not stopped; and nobody can keep a person out of their account.

export interface Limit {
  max: number
  windowMs: number
}

export type LimitedAuthAction = 'credentials' | 'refresh'

const MINUTE = 60_000

export const AUTH_LIMITS = {
  /** Every request to a credential route from one address, whatever it names: a flood limit. */
  perAddress: {
    credentials: { max: 60, windowMs: MINUTE },
    refresh: { max: 120, windowMs: MINUTE }
  },
  /** Password-reset mails asked for one account, from any address (the answer stays the same). */
  resetRequestsPerAccount: { max: 5, windowMs: 15 * MINUTE },
  /** Failed sign-ins for one account from one address: that address may not try that account again until the window ends. */
  failuresPerAccountAndAddress: { max: 5, windowMs: 15 * MINUTE },
  /**
   * Failed sign-ins for one account from all addresses: the account locks for the rest of the
   * window, except for the addresses it is known at. A sign-in from one of them, or a completed
   * password reset, lifts the lock.
   */
  failuresPerAccount: { max: 10, windowMs: 15 * MINUTE },
  /** An address where an account signed in successfully stays known to it this long. */
  knownAddressMs: 30 * 24 * 60 * MINUTE,
  knownAddressesPerAccount: 10,
  /** Accounts whose failures and known addresses one process remembers; the oldest go first. */
  trackedAccounts: 100_000
} as const

export interface AuthRoute {
  method: 'GET' | 'POST'
  path: string
  /** What a caller must present. */
  auth: 'none' | 'session' | 'refresh token' | 'reset token' | 'verification token'
  limit?: LimitedAuthAction
  /** Also limited per account it names (password-reset mails). */
  perAccount?: 'resetRequests'
  /** Whether the session library answers it (else a route of this service's own). */
  library: boolean
}

/**
 * Every route under /api/auth, at the one spelling that is served. The session library would also
 * answer other spellings of its routes (a trailing slash, `./`, `../`) and routes this service
 * does not use (email-exists checks, login methods, JWKS, OpenID discovery, Apple's form_post
 * handler): those are answered 404 before it sees them, so a limit cannot be walked around and
 * this list is all there is.
 */
export const AUTH_ROUTES: readonly AuthRoute[] = [
  { method: 'POST', path: '/api/auth/signup', auth: 'none', limit: 'credentials', library: true },
  { method: 'POST', path: '/api/auth/signin', auth: 'none', limit: 'credentials', library: true },
  { method: 'POST', path: '/api/auth/user/password/reset/token', auth: 'none', limit: 'credentials', perAccount: 'resetRequests', library: true },
  { method: 'POST', path: '/api/auth/user/password/reset', auth: 'reset token', limit: 'credentials', library: true },
  // It checks no secret and asks the core nothing; its only input that matters is the redirect URI, which must be ours.
  { method: 'GET', path: '/api/auth/authorisationurl', auth: 'none', library: true },
  { method: 'POST', path: '/api/auth/signinup', auth: 'none', limit: 'credentials', library: true },
  { method: 'POST', path: '/api/auth/session/refresh', auth: 'refresh token', limit: 'refresh', library: true },
  { method: 'POST', path: '/api/auth/refresh', auth: 'refresh token', limit: 'refresh', library: false },
  { method: 'POST', path: '/api/auth/signout', auth: 'session', library: true },
  { method: 'POST', path: '/api/auth/user/email/verify/token', auth: 'session', library: true },
  { method: 'GET', path: '/api/auth/user/email/verify', auth: 'session', library: true },
  { method: 'POST', path: '/api/auth/user/email/verify', auth: 'verification token', limit: 'credentials', library: true }
]

const LIBRARY_ROUTES = new Set<string>(AUTH_ROUTES.filter((route) => route.library).map((route) => `${route.method} ${route.path}`))
const LIMITED = new Map<string, AuthRoute>(AUTH_ROUTES.flatMap((route) => route.limit === undefined ? [] : [[`${route.method} ${route.path}`, route] as const]))

function pathOf (url: string): string {
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

/** Whether the session library may answer this request: its method and raw path are one of its routes exactly. */
export function isServedLibraryRoute (method: string, url: string): boolean {
  return LIBRARY_ROUTES.has(`${method} ${pathOf(url)}`)
}

/**
 * The limit of a request, by the route that answers it: the pattern the router matched for the
 * service's own routes, the exact path for the library's (the only spelling it is given).
 */
export function limitedAuthRoute (method: string, route: string): AuthRoute & { limit: LimitedAuthAction } | undefined {
  return LIMITED.get(`${method} ${pathOf(route)}`) as AuthRoute & { limit: LimitedAuthAction } | undefined
}

/** A form field of a credential request, by id, when it is a string. */
export function formField (body: unknown, id: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const formFields = (body as { formFields?: unknown }).formFields
  if (!Array.isArray(formFields)) return undefined
  const field = formFields.find((candidate: unknown) => typeof candidate === 'object' && candidate !== null && (candidate as { id?: unknown }).id === id) as { value?: unknown } | undefined
  return typeof field?.value === 'string' ? field.value : undefined
}

/** The account a credential request names: the normalized email of its form, if it has one. */
export function accountOf (body: unknown): string | undefined {
  const email = formField(body, 'email')
  return email !== undefined && email.trim() !== '' ? normalizeEmail(email) : undefined
}

export interface FieldRefusal { id: string, error: string }

/** The form fields of a credential request that are longer than any valid value (checked before any other rule, and before the session core is asked). */
export function oversizedFields (body: unknown): FieldRefusal[] {
  const refusals: FieldRefusal[] = []
  const name = formField(body, 'name')
  if (name !== undefined && name.length > FIELD_LIMITS.name) refusals.push({ id: 'name', error: `A name is at most ${FIELD_LIMITS.name} characters` })
  const email = formField(body, 'email')?.trim()
  if (email !== undefined) {
    const localPart = email.slice(0, Math.max(0, email.lastIndexOf('@')))
    if (email.length > FIELD_LIMITS.email || localPart.length > FIELD_LIMITS.emailLocalPart) {
      refusals.push({ id: 'email', error: `An email is at most ${FIELD_LIMITS.email} characters, ${FIELD_LIMITS.emailLocalPart} before the @` })
    }
  }
  const password = formField(body, 'password')
  if (password !== undefined && password.length > FIELD_LIMITS.password) refusals.push({ id: 'password', error: `A password is at most ${FIELD_LIMITS.password} characters` })
  return refusals
}

interface Window { count: number, endsAt: number }

interface AccountRecord {
  failures: Window | undefined
  failuresByAddress: Map<string, Window>
  /** Address -> until when it is known. */
  knownAt: Map<string, number>
}

function live (window: Window | undefined, now: number): Window | undefined {
  return window !== undefined && window.endsAt > now ? window : undefined
}

function counted (window: Window | undefined, now: number, windowMs: number): Window {
  const current = live(window, now)
  return current === undefined ? { count: 1, endsAt: now + windowMs } : { count: current.count + 1, endsAt: current.endsAt }
}

export interface SignInGuardLimits {
  failuresPerAccountAndAddress: Limit
  failuresPerAccount: Limit
  knownAddressMs: number
  knownAddressesPerAccount: number
  trackedAccounts: number
}

/**
 * Failed sign-ins, per account and per (account, address), and the addresses each account is
 * known at. Only failures count. An address that failed too often for an account waits; an
 * account that failed too often from everywhere waits too, except at its known addresses, so a
 * stranger cannot keep its owner out: a sign-in there (or a completed password reset) lifts it.
 * Held in the memory of one process, bounded by `AUTH_LIMITS.trackedAccounts`.
 */
export class SignInGuard {
  private readonly accounts = new Map<string, AccountRecord>()

  constructor (private readonly limits: SignInGuardLimits = AUTH_LIMITS) {}

  /** Seconds to wait before this address may try this account, or undefined when it may now. */
  refusal (account: string, address: string, now = Date.now()): number | undefined {
    const record = this.accounts.get(account)
    if (record === undefined) return undefined
    const byAddress = live(record.failuresByAddress.get(address), now)
    if (byAddress !== undefined && byAddress.count >= this.limits.failuresPerAccountAndAddress.max) return secondsUntil(byAddress.endsAt, now)
    const overall = live(record.failures, now)
    if (overall !== undefined && overall.count >= this.limits.failuresPerAccount.max && !this.isKnown(record, address, now)) return secondsUntil(overall.endsAt, now)
    return undefined
  }

  failed (account: string, address: string, now = Date.now()): void {
    const record = this.record(account, now)
    record.failures = counted(record.failures, now, this.limits.failuresPerAccount.windowMs)
    record.failuresByAddress.set(address, counted(record.failuresByAddress.get(address), now, this.limits.failuresPerAccountAndAddress.windowMs))
  }

  succeeded (account: string, address: string, now = Date.now()): void {
    const record = this.record(account, now)
    record.failures = undefined
    record.failuresByAddress.delete(address)
    record.knownAt.delete(address)
    record.knownAt.set(address, now + this.limits.knownAddressMs)
    while (record.knownAt.size > this.limits.knownAddressesPerAccount) record.knownAt.delete(record.knownAt.keys().next().value as string)
  }

  /** A completed password reset: whoever knows the new password is the owner. */
  passwordReset (account: string): void {
    const record = this.accounts.get(account)
    if (record === undefined) return
    record.failures = undefined
    record.failuresByAddress.clear()
  }

  get size (): number {
    return this.accounts.size
  }

  private isKnown (record: AccountRecord, address: string, now: number): boolean {
    return (record.knownAt.get(address) ?? 0) > now
  }

  private record (account: string, now: number): AccountRecord {
    let record = this.accounts.get(account)
    if (record === undefined) {
      if (this.accounts.size >= this.limits.trackedAccounts) this.forget(now)
      record = { failures: undefined, failuresByAddress: new Map(), knownAt: new Map() }
      this.accounts.set(account, record)
    }
    return record
  }

  // Drops what has expired; if every record is still live, the oldest ones.
  private forget (now: number): void {
    for (const [account, record] of this.accounts) {
      for (const [address, window] of record.failuresByAddress) if (live(window, now) === undefined) record.failuresByAddress.delete(address)
      for (const [address, until] of record.knownAt) if (until <= now) record.knownAt.delete(address)
      if (live(record.failures, now) === undefined && record.failuresByAddress.size === 0 && record.knownAt.size === 0) this.accounts.delete(account)
    }
    for (const account of this.accounts.keys()) {
      if (this.accounts.size < this.limits.trackedAccounts) break
      this.accounts.delete(account)
    }
  }
}

function secondsUntil (endsAt: number, now: number): number {
  return Math.max(1, Math.ceil((endsAt - now) / 1000))
}
