// PKCE (RFC 7636, S256) and the OpenID Connect nonce of a provider sign-in, for the web client and
// the backend alike (WebCrypto, which both have). The nonce is derived from the PKCE verifier: it
// travels in the authorization URL and comes back inside the ID token, and the backend, given the
// verifier at sign-in, recomputes it. So an ID token counts only for the authorization this
// browser began, without a second secret to keep.

function base64url (bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
}

async function sha256 (text: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))))
}

/** A new verifier: 48 random bytes, 64 characters of RFC 7636's alphabet. */
export function newPkceVerifier (): string {
  return base64url(crypto.getRandomValues(new Uint8Array(48)))
}

/** The S256 code challenge of a verifier. */
export async function pkceChallenge (verifier: string): Promise<string> {
  return await sha256(verifier)
}

/** The OIDC nonce of the authorization a verifier began (a label keeps it apart from the challenge). */
export async function oidcNonceFor (verifier: string): Promise<string> {
  return await sha256(`calendar-oidc-nonce:${verifier}`)
}
