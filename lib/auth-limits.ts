import { normalizeEmail } from './identity.js'

// How often the credential routes may be called (the specification leaves rate limits open).
// Guessing passwords or reset tokens must be slow, for one account from many addresses and for
// many accounts from one address, while a person who mistypes a few times, or an office behind
// one address signing in at nine, is not stopped.

export interface Limit {
  max: number
  windowMs: number
}

export type LimitedAuthAction = 'credentials' | 'refresh'

export const AUTH_LIMITS = {
  perAddress: {
    credentials: { max: 60, windowMs: 60_000 },
    refresh: { max: 120, windowMs: 60_000 }
  },
  /** Per normalized email, whatever the address: sign-in, sign-up and reset requests together. */
  perAccount: { max: 10, windowMs: 15 * 60_000 }
} as const satisfies { perAddress: Record<LimitedAuthAction, Limit>, perAccount: Limit }

// The session library's routes under /api/auth, and the backend's own refresh route.
const LIMITED: Record<string, LimitedAuthAction> = {
  'POST /api/auth/signin': 'credentials',
  'POST /api/auth/signup': 'credentials',
  'POST /api/auth/signinup': 'credentials',
  'POST /api/auth/user/password/reset/token': 'credentials',
  'POST /api/auth/user/password/reset': 'credentials',
  'POST /api/auth/session/refresh': 'refresh',
  'POST /api/auth/refresh': 'refresh'
}

export function limitedAuthAction (method: string, url: string): LimitedAuthAction | undefined {
  const query = url.indexOf('?')
  return LIMITED[`${method} ${query === -1 ? url : url.slice(0, query)}`]
}

/** The account a credential request names: the normalized email of its form, if it has one. */
export function accountOf (body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const formFields = (body as { formFields?: unknown }).formFields
  if (!Array.isArray(formFields)) return undefined
  const email = formFields.find((field: unknown) => typeof field === 'object' && field !== null && (field as { id?: unknown }).id === 'email') as { value?: unknown } | undefined
  return typeof email?.value === 'string' && email.value.trim() !== '' ? normalizeEmail(email.value) : undefined
}
