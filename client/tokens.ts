// The tokens of a header-mode session and where a client keeps them. The backend answers sign-in,
// sign-up and refresh with three headers (docs/api.md, "Sessions: browsers and native clients"):
// `sx-access-token` (sent as `Authorization: Bearer` on every protected call), `sx-refresh-token`
// (sent the same way to POST /api/auth/refresh) and `front-token`, which a client reads without
// verifying: base64 of JSON `{ uid, ate, up }`, the user id and the access token's expiry in ms.

export interface SessionTokens {
  accessToken: string
  refreshToken: string
  frontToken: string
}

/**
 * Where a client keeps its tokens between calls and between runs. A native app puts them in the
 * platform's secure storage (Keychain, Keystore); the CLI keeps them in a file only its user can
 * read. Every method may be synchronous or return a promise.
 */
export interface TokenStore {
  load: () => SessionTokens | null | Promise<SessionTokens | null>
  save: (tokens: SessionTokens) => void | Promise<void>
  clear: () => void | Promise<void>
}

/** Tokens for the life of the process: tests, and apps that sign in at every start. */
export class MemoryTokenStore implements TokenStore {
  #tokens: SessionTokens | null

  constructor (initial: SessionTokens | null = null) {
    this.#tokens = initial
  }

  load (): SessionTokens | null {
    return this.#tokens
  }

  save (tokens: SessionTokens): void {
    this.#tokens = { ...tokens }
  }

  clear (): void {
    this.#tokens = null
  }
}

export interface FrontToken {
  /** The user id the session belongs to. */
  userId: string
  /** When the access token expires, in ms since the epoch (the server's clock). */
  accessTokenExpiresAt: number
  /** The access token's payload, as the server chose to expose it. */
  payload: Record<string, unknown>
}

// atob is a global in Node 16+ and in React Native's Hermes; TextDecoder is not everywhere in
// React Native, and the front token is ASCII there in practice (ids and numbers), so without it the
// bytes are read as Latin-1.
function decodeBase64Utf8 (value: string): string {
  const binary = atob(value)
  if (typeof TextDecoder === 'undefined') return binary
  return new TextDecoder().decode(Uint8Array.from(binary, (character) => character.charCodeAt(0)))
}

/** Reads a front token; null when it is not one (a malformed or cleared header). */
export function readFrontToken (frontToken: string): FrontToken | null {
  try {
    const parsed = JSON.parse(decodeBase64Utf8(frontToken)) as { uid?: unknown, ate?: unknown, up?: unknown }
    if (typeof parsed.uid !== 'string' || typeof parsed.ate !== 'number') return null
    const payload = typeof parsed.up === 'object' && parsed.up !== null ? parsed.up as Record<string, unknown> : {}
    return { userId: parsed.uid, accessTokenExpiresAt: parsed.ate, payload }
  } catch {
    return null
  }
}

/**
 * Whether the access token must be refreshed before a call: it has expired, or expires within
 * `validForMs` (0 for a plain request; a stream that must outlive a while asks for more). A front
 * token that cannot be read counts as expired, so the client refreshes rather than guesses.
 */
export function needsRefresh (tokens: SessionTokens, now: number, validForMs = 0): boolean {
  const front = readFrontToken(tokens.frontToken)
  return front === null || front.accessTokenExpiresAt - now <= validForMs
}
