import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import type { ScryptOptions } from 'node:crypto'

// scrypt is memory-hard: N=2^15, r=8 needs 32 MiB per hash, which makes guessing expensive
// while a single sign-in stays in the tens of milliseconds.
const PARAMS = { N: 32768, r: 8, p: 1 }
const KEY_LENGTH = 32
const SALT_LENGTH = 16

function derive (password: string, salt: Buffer, params: { N: number, r: number, p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 128 * params.N * params.r * 2 }
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => {
      if (err !== null) reject(err)
      else resolve(key)
    })
  })
}

/** `scrypt$N$r$p$salt$hash`, salt and hash in base64: the parameters travel with the hash. */
export async function hashPassword (password: string): Promise<string> {
  const salt = randomBytes(SALT_LENGTH)
  const key = await derive(password, salt, PARAMS)
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$')
}

// Checked against when the email is unknown, so a miss costs as much time as a wrong password.
let decoyHash: Promise<string> | undefined

export async function verifyPassword (password: string, stored: string | undefined): Promise<boolean> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'))
  const encoded = stored ?? await decoyHash
  const [scheme, n, r, p, saltText, keyText] = encoded.split('$')
  if (scheme !== 'scrypt' || saltText === undefined || keyText === undefined) return false
  const expected = Buffer.from(keyText, 'base64')
  const actual = await derive(password, Buffer.from(saltText, 'base64'), { N: Number(n), r: Number(r), p: Number(p) })
  return actual.length === expected.length && timingSafeEqual(actual, expected) && stored !== undefined
}
