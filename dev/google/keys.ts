import { createHash, createPublicKey, randomBytes } from 'node:crypto'
import type { KeyObject } from 'node:crypto'
import { exportJWK, SignJWT } from 'jose'
import type { JSONWebKeySet, JWTPayload } from 'jose'
import { selfSignedCertificate } from './x509.js'
import { rsaPrivateKey } from '../rsa-keys.js'

export interface SigningKeys {
  /** `/oauth2/v3/certs`: the JWK set OpenID Connect clients read from the discovery document's `jwks_uri`. */
  jwks: JSONWebKeySet
  /** `/oauth2/v1/certs`: the same key as PEM certificates by `kid`, which google-auth-library reads in Node. */
  pemCertificates: Record<string, string>
  signIdToken (claims: JWTPayload): Promise<string>
}

/** One RS256 key for the life of the process (Google rotates its keys; a restart rotates this one). */
export async function createSigningKeys (now: Date): Promise<SigningKeys> {
  const privateKey = rsaPrivateKey()
  // Google's kids are 40 hex characters; any string works, the shape only avoids surprises.
  const kid = randomBytes(20).toString('hex')
  const jwk = await exportJWK(createPublicKey(privateKey))
  // Valid from a day back so a test clock set slightly in the past still sees a valid certificate.
  const notBefore = new Date(now.getTime() - 24 * 60 * 60 * 1000)
  return {
    jwks: { keys: [{ ...jwk, kid, alg: 'RS256', use: 'sig' }] },
    pemCertificates: { [kid]: selfSignedCertificate(privateKey, 'google-stand-in', notBefore, 3650) },
    signIdToken: async (claims) => signWith(privateKey, kid, claims)
  }
}

async function signWith (privateKey: KeyObject, kid: string, claims: JWTPayload): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(privateKey)
}

/**
 * OpenID Connect Core 3.1.3.6: the base64url of the left half of the SHA-256 of the access token,
 * which lets a client check that the access token came with this ID token.
 */
export function accessTokenHash (accessToken: string): string {
  const digest = createHash('sha256').update(accessToken, 'ascii').digest()
  return digest.subarray(0, digest.length / 2).toString('base64url')
}
