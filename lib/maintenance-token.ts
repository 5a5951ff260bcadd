// The ID token the self-host stack's scheduler presents to the Sync service's POST /maintenance
// (specification: "Caller is a scheduled job presenting an identity token"). The scheduler signs it
// itself with an Ed25519 key whose public half the Sync service is configured with
// (sync.maintenanceKey), in the shape of a self-signed service-account token: `iss` and `email` name
// the caller, `aud` is the endpoint's public URL, and it lives a few minutes.
import { createPrivateKey, createPublicKey } from 'node:crypto'
import { SignJWT } from 'jose'

export interface Ed25519PublicJwk {
  kty: 'OKP'
  crv: 'Ed25519'
  x: string
}

export interface Ed25519PrivateJwk extends Ed25519PublicJwk {
  d: string
}

/** The signature algorithm of these tokens (RFC 8037's name, which jose and every verifier know). */
export const MAINTENANCE_TOKEN_ALGORITHM = 'EdDSA'
/** How long a token is good for: long enough for clock skew between containers, too short to hoard. */
const MAINTENANCE_TOKEN_LIFETIME_S = 5 * 60
/** The Sync service refuses a token issued longer ago than this, whatever its expiry says. */
export const MAINTENANCE_TOKEN_MAX_AGE_S = 10 * 60

// An Ed25519 private key in PKCS #8 is this fixed prefix and the 32-byte seed (RFC 8410).
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

/** The key pair of a 32-byte seed (the JWK's `d`), as JSON Web Keys. */
export function ed25519KeyPair (seed: Buffer): { privateJwk: Ed25519PrivateJwk, publicJwk: Ed25519PublicJwk } {
  if (seed.length !== 32) throw new Error('an Ed25519 seed is 32 bytes')
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' })
  const { x = '', d = '' } = key.export({ format: 'jwk' })
  return { privateJwk: { kty: 'OKP', crv: 'Ed25519', x, d }, publicJwk: { kty: 'OKP', crv: 'Ed25519', x } }
}

/** Whether `publicJwk` is the public half of `privateJwk` (its `x` derived from `d` again). */
export function isKeyPair (privateJwk: Ed25519PrivateJwk, publicJwk: Ed25519PublicJwk): boolean {
  const seed = Buffer.from(privateJwk.d, 'base64url')
  if (seed.length !== 32) return false
  const derived = ed25519KeyPair(seed).publicJwk.x
  return derived === privateJwk.x && derived === publicJwk.x
}

/** The audience of a maintenance token: POST /maintenance as the public reaches it. */
export function maintenanceAudience (callbackBaseUrl: string): string {
  return `${callbackBaseUrl.replace(/\/+$/, '')}/maintenance`
}

export async function signMaintenanceToken (privateJwk: Ed25519PrivateJwk, claims: { caller: string, audience: string }, now = new Date()): Promise<string> {
  const issuedAt = Math.floor(now.getTime() / 1000)
  const key = createPrivateKey({ key: { ...privateJwk }, format: 'jwk' })
  return await new SignJWT({ email: claims.caller, email_verified: true })
    .setProtectedHeader({ alg: MAINTENANCE_TOKEN_ALGORITHM, typ: 'JWT' })
    .setIssuer(claims.caller)
    .setSubject(claims.caller)
    .setAudience(claims.audience)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + MAINTENANCE_TOKEN_LIFETIME_S)
    .sign(key)
}

/** The public key object of a configured sync.maintenanceKey. */
export function maintenancePublicKey (publicJwk: Ed25519PublicJwk): ReturnType<typeof createPublicKey> {
  return createPublicKey({ key: { ...publicJwk }, format: 'jwk' })
}
