// The cookie that ties a provider connect to the browser that began it (RFC 9700, section 4.7):
// set by the begin route, read by the `/sync` proxy at the callback and passed to Sync, which
// keeps only its hash. Path-scoped to the OAuth callbacks, so no other request carries it.
import type { Provider } from '../schemas/sync/index.js'

/** As long as Sync keeps the attempt (its signed state's lifetime). */
const BINDER_LIFETIME_SECONDS = 10 * 60

/** One per provider: a Google and a Microsoft connect begun side by side do not undo each other. */
export function binderCookieName (provider: Provider): string {
  return `calendar_connect_${provider}`
}

export interface BinderCookieOptions {
  path: string
  httpOnly: true
  sameSite: 'lax'
  secure: boolean
  maxAge: number
}

/**
 * Where the browser comes back (sync.callbackBaseUrl's path, then /oauth/). SameSite=Lax: the
 * provider's redirect is a top-level GET from another site, which Lax cookies go along with.
 */
export function binderCookieOptions (callbackBaseUrl: string): BinderCookieOptions {
  const base = new URL(callbackBaseUrl)
  return {
    path: `${base.pathname.replace(/\/+$/, '')}/oauth/`,
    httpOnly: true,
    sameSite: 'lax',
    secure: base.protocol === 'https:',
    maxAge: BINDER_LIFETIME_SECONDS
  }
}

/** The provider of a proxied callback path (`/sync/oauth/<provider>/callback`); null for any other. */
export function callbackProvider (url: string): Provider | null {
  const match = /^\/sync\/oauth\/(google|microsoft)\/callback(?:\?|$)/.exec(url)
  return match === null ? null : match[1] as Provider
}
