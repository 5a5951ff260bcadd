// The signing key of ID tokens and the key set the discovery document's `jwks_uri` names.
import { createPublicKey, randomBytes } from 'node:crypto'
import type { KeyObject } from 'node:crypto'
import { exportJWK, SignJWT } from 'jose'
import type { JWK, JWTPayload } from 'jose'
import { rsaPrivateKey } from '../rsa-keys.js'

export interface SigningKeys {
  /** The public key as a JWK, with Microsoft's `kid`, `x5t` and `use`; the route adds `issuer`. */
  jwk: JWK
  signIdToken (claims: JWTPayload): Promise<string>
}

/** One RS256 key for the life of the process (Microsoft rolls its keys; a restart rolls this one). */
export async function createSigningKeys (): Promise<SigningKeys> {
  const privateKey = rsaPrivateKey()
  // Microsoft's key ids are the certificate thumbprint in base64url (27 characters), also given as x5t.
  const kid = randomBytes(20).toString('base64url')
  const jwk = await exportJWK(createPublicKey(privateKey))
  return {
    jwk: { kty: jwk.kty, use: 'sig', kid, x5t: kid, n: jwk.n, e: jwk.e },
    signIdToken: async (claims) => await signWith(privateKey, kid, claims)
  }
}

async function signWith (privateKey: KeyObject, kid: string, claims: JWTPayload): Promise<string> {
  return await new SignJWT(claims).setProtectedHeader({ typ: 'JWT', alg: 'RS256', kid }).sign(privateKey)
}
