// Reading OAuth requests as both providers' endpoints do: form or query fields, the sign-in
// cookie, and client credentials in a Basic header. Each provider names its own refusal.
import type { FastifyRequest } from 'fastify'

export const fields = (body: unknown): Record<string, unknown> =>
  typeof body === 'object' && body !== null && !Array.isArray(body) ? body as Record<string, unknown> : {}

export const text = (source: Record<string, unknown>, name: string): string | undefined => {
  const value = source[name]
  return typeof value === 'string' ? value : undefined
}

export function cookie (request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie
  if (header === undefined) return undefined
  for (const part of header.split(';')) {
    const [key, ...value] = part.trim().split('=')
    if (key === name) return value.join('=')
  }
  return undefined
}

/** `Authorization: Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 section 2.3.1); `invalid` is the provider's refusal. */
export function basicCredentials (request: FastifyRequest, invalid: () => Error): { clientId: string, clientSecret: string } | undefined {
  const header = request.headers.authorization
  if (header === undefined || !/^basic /i.test(header)) return undefined
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) throw invalid()
  try {
    return { clientId: decodeURIComponent(decoded.slice(0, colon)), clientSecret: decodeURIComponent(decoded.slice(colon + 1)) }
  } catch {
    throw invalid()
  }
}
