// Unsubscribe tokens and the links that carry them, built in this one place (the reference
// implementation once sent links to /api/api/...). A token is `<userId>.<base64url HMAC-SHA256>`
// under email.unsubscribeSecret, so rotating the secret invalidates every link sent before.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { isCanonicalUserId } from './identity.js'

const UNSUBSCRIBE_PATH = '/email/unsubscribe'
export const RESEND_WEBHOOK_PATH = '/email/webhooks/resend'

function signature (secret: string, userId: string): Buffer {
  return createHmac('sha256', secret).update(userId).digest()
}

export function unsubscribeToken (secret: string, userId: string): string {
  return `${userId}.${signature(secret, userId).toString('base64url')}`
}

/** The user a token names, when its signature holds under this secret. */
export function userOfUnsubscribeToken (secret: string, token: string): string | undefined {
  const [userId, signed, ...rest] = token.split('.')
  if (userId === undefined || signed === undefined || rest.length > 0 || !isCanonicalUserId(userId)) return undefined
  const given = Buffer.from(signed, 'base64url')
  const expected = signature(secret, userId)
  return given.length === expected.length && timingSafeEqual(given, expected) ? userId : undefined
}

/** `backend.apiUrl` already ends in the API prefix (…/api): paths here are relative to it. */
export function apiLink (apiUrl: string, path: string, query: Record<string, string> = {}): string {
  const url = new URL(apiUrl.replace(/\/+$/, '') + path)
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value)
  return url.toString()
}

export function unsubscribeLink (apiUrl: string, secret: string, userId: string): string {
  return apiLink(apiUrl, UNSUBSCRIBE_PATH, { token: unsubscribeToken(secret, userId) })
}

/** RFC 2369 and RFC 8058: the link in angle brackets, and the one-click body mail clients post. */
export function listUnsubscribeHeaders (link: string): Record<string, string> {
  return { 'List-Unsubscribe': `<${link}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' }
}

/**
 * The key under which links are signed: email.unsubscribeSecret, or (for the `log` provider,
 * where the key is optional) one derived from backend.serviceToken, so links stay valid across
 * restarts and processes without another secret to keep.
 */
export function unsubscribeKey (unsubscribeSecret: string | undefined, serviceToken: string): string {
  return unsubscribeSecret ?? createHmac('sha256', serviceToken).update('email unsubscribe links').digest('base64url')
}
