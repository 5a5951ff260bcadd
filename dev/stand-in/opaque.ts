// Page, sync and delta tokens as both stand-ins hand them out: JSON in base64url. Clients must
// treat them as opaque; what a token carries, and how a bad one is refused, is each provider's.

export const encodeOpaque = (value: object): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')

/** The object a token carries; undefined when it is not one this encoding could have made. */
export function decodeOpaque (token: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}
