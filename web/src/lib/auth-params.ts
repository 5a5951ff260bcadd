// The web entry points of the specification: `?auth=login|signup|forgot|reset` opens the matching
// dialog once and leaves the URL; `verify` stays in the URL through redirects and opens nothing.
// Plain functions over URL strings, so the rules are tested without a browser.

export type AuthDialogKind = 'login' | 'signup' | 'forgot' | 'reset'

const DIALOGS: ReadonlySet<string> = new Set<AuthDialogKind>(['login', 'signup', 'forgot', 'reset'])

export interface AuthEntry {
  /** The dialog to open, or null when the URL asks for none. */
  dialog: AuthDialogKind | null
  /** The reset token, captured before the URL is cleaned. */
  resetToken: string | null
  /** Path, query and hash to show once the parameter is handled (unchanged when nothing was handled). */
  cleaned: string
}

function relative (url: URL): string {
  return `${url.pathname}${url.search}${url.hash}`
}

/** Reads `auth` (and `token` for a reset) from a URL and says what the address bar should become. */
export function readAuthEntry (href: string): AuthEntry {
  const url = new URL(href)
  const value = url.searchParams.get('auth')
  if (value === null || !DIALOGS.has(value)) {
    return { dialog: null, resetToken: null, cleaned: relative(url) }
  }
  const dialog = value as AuthDialogKind
  const resetToken = dialog === 'reset' ? url.searchParams.get('token') : null
  url.searchParams.delete('auth')
  // The token is a secret: once captured it leaves the address bar (and the history entry) too.
  if (dialog === 'reset') url.searchParams.delete('token')
  return { dialog, resetToken, cleaned: relative(url) }
}

/**
 * The URL to show while a new password is submitted: the session library reads the reset token
 * from the address bar, so the captured token is put back there for the duration of the call.
 */
export function withResetToken (href: string, token: string): string {
  const url = new URL(href)
  url.searchParams.set('token', token)
  return relative(url)
}

/** The same URL without a reset token (after the submission, whatever its outcome). */
export function withoutResetToken (href: string): string {
  const url = new URL(href)
  url.searchParams.delete('token')
  return relative(url)
}

export type Route = 'day' | '4days' | 'week' | 'month' | 'agenda' | 'callback'

export const CALLBACK_PATH = '/auth/extprovider/callback'

/**
 * Which view a path shows, and the path to redirect to when it is not canonical. Every redirect
 * keeps the query (so `?auth=verify` and `?date=` survive) and the hash.
 */
export function routeOf (href: string): { route: Route, redirect: string | null } {
  const url = new URL(href)
  const path = url.pathname.replace(/\/+$/, '') || '/'
  if (path === CALLBACK_PATH) return { route: 'callback', redirect: null }
  if (path === '/week') return { route: 'week', redirect: null }
  if (path === '/month') return { route: 'month', redirect: null }
  if (path === '/4days') return { route: '4days', redirect: null }
  if (path === '/agenda') return { route: 'agenda', redirect: null }
  if (path === '/day') return { route: 'day', redirect: null }
  url.pathname = '/day'
  return { route: 'day', redirect: relative(url) }
}
