import { decodeJwt } from 'jose'

export interface IdTokenIdentity { email?: string, sub?: string }

/**
 * Who an ID token names: the first of `claims.email` and of `claims.subject` that the token holds
 * as a string. The token is received straight from the provider's token endpoint over TLS, which
 * vouches for it (OIDC Core 3.1.3.7), so its signature is not checked again. A token that is not a
 * JWT names no one.
 */
export function idTokenIdentity (idToken: string | null | undefined, claims: { email: readonly string[], subject: readonly string[] }): IdTokenIdentity {
  if (!idToken) return {}
  let payload: Record<string, unknown>
  try {
    payload = decodeJwt(idToken)
  } catch {
    return {}
  }
  const first = (names: readonly string[]): string | undefined => names.map((name) => payload[name]).find((value): value is string => typeof value === 'string' && value !== '')
  const email = first(claims.email)
  const sub = first(claims.subject)
  return { ...(email !== undefined ? { email } : {}), ...(sub !== undefined ? { sub } : {}) }
}
