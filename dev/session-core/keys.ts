import { createCipheriv, createDecipheriv, createPrivateKey, createPublicKey, randomBytes, randomUUID } from 'node:crypto'
import type { KeyObject } from 'node:crypto'
import { createLocalJWKSet, exportJWK, jwtVerify, SignJWT } from 'jose'
import type { JSONWebKeySet, JWK, JWTPayload } from 'jose'
import type { KeySet, SigningKey } from './storage.js'
import { rsaPrivateKey } from '../rsa-keys.js'

function newSigningKey (kid: string, now: number): SigningKey {
  const privateKey = rsaPrivateKey()
  return { kid, privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), createdAt: now }
}

/** A fresh key set. The SDK tells the two kinds apart by the kid prefix: `d-` dynamic, `s-` static. */
export function generateKeySet (now = Date.now()): KeySet {
  return {
    dynamicKey: newSigningKey(`d-${now}`, now),
    staticKey: newSigningKey(`s-${randomUUID()}`, now),
    refreshTokenKey: randomBytes(32).toString('base64')
  }
}

export interface Keys {
  jwks: JSONWebKeySet
  sign (payload: JWTPayload, useStaticKey: boolean): Promise<string>
  /** Verifies signature and expiry; throws on either. */
  verify (token: string): Promise<JWTPayload>
  seal (value: unknown): string
  /** Returns undefined for anything not sealed by this key set. */
  open (sealed: string): unknown
}

const REFRESH_TOKEN_SUFFIX = '.V2'

export async function loadKeys (set: KeySet): Promise<Keys> {
  const privateKeys = new Map<string, KeyObject>()
  const publicJwks: JWK[] = []
  for (const key of [set.dynamicKey, set.staticKey]) {
    const privateKey = createPrivateKey(key.privateKeyPem)
    privateKeys.set(key.kid, privateKey)
    const jwk = await exportJWK(createPublicKey(privateKey))
    publicJwks.push({ ...jwk, kid: key.kid, alg: 'RS256', use: 'sig' })
  }
  const jwks: JSONWebKeySet = { keys: publicJwks }
  const localSet = createLocalJWKSet(jwks)
  const aesKey = Buffer.from(set.refreshTokenKey, 'base64')

  return {
    jwks,
    async sign (payload, useStaticKey) {
      const key = useStaticKey ? set.staticKey : set.dynamicKey
      const privateKey = privateKeys.get(key.kid)
      if (privateKey === undefined) throw new Error(`signing key ${key.kid} is not loaded`)
      return new SignJWT(payload)
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', version: '5', kid: key.kid })
        .sign(privateKey)
    },
    async verify (token) {
      const { payload } = await jwtVerify(token, localSet, { algorithms: ['RS256'] })
      return payload
    },
    // The refresh token carries its session handle and its parent's hash; sealing them with
    // AES-GCM keeps a client from reading them or forging a parent link from an access token.
    seal (value) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', aesKey, iv)
      const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final(), cipher.getAuthTag()])
      return `${iv.toString('base64url')}.${body.toString('base64url')}${REFRESH_TOKEN_SUFFIX}`
    },
    open (sealed) {
      if (!sealed.endsWith(REFRESH_TOKEN_SUFFIX)) return undefined
      const [ivText, bodyText, extra] = sealed.slice(0, -REFRESH_TOKEN_SUFFIX.length).split('.')
      if (ivText === undefined || bodyText === undefined || extra !== undefined) return undefined
      const iv = Buffer.from(ivText, 'base64url')
      const body = Buffer.from(bodyText, 'base64url')
      if (iv.length !== 12 || body.length <= 16) return undefined
      try {
        const decipher = createDecipheriv('aes-256-gcm', aesKey, iv)
        decipher.setAuthTag(body.subarray(body.length - 16))
        const plain = Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()])
        return JSON.parse(plain.toString('utf8')) as unknown
      } catch {
        return undefined
      }
    }
  }
}
