import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import type { ScryptOptions } from 'node:crypto'

// scrypt is memory-hard: N=2^15, r=8 needs 32 MiB per hash, which makes guessing expensive
// while a single sign-in stays in the tens of milliseconds. Like the real core's hashing settings,
// the cost is the operator's: DEV_SESSION_CORE_SCRYPT_N (a power of two) lowers it where thousands
// of accounts are made and nothing is worth guessing, as in the test run (test/run.ts). A stored
// hash carries its own parameters, so a change of cost never locks anyone out.
export const SCRYPT_COST_VARIABLE = 'DEV_SESSION_CORE_SCRYPT_N'
const DEFAULT_N = 32768

function costFromEnvironment (): number {
  const given = process.env[SCRYPT_COST_VARIABLE]
  if (given === undefined || given === '') return DEFAULT_N
  const n = Number(given)
  if (!Number.isInteger(n) || n < 2 || (n & (n - 1)) !== 0) throw new Error(`${SCRYPT_COST_VARIABLE} must be a power of two of at least 2, not ${given}`)
  return n
}

const PARAMS = { N: costFromEnvironment(), r: 8, p: 1 }
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
export async function hashPassword (password: string, cost: number = PARAMS.N): Promise<string> {
  const salt = randomBytes(SALT_LENGTH)
  const key = await derive(password, salt, { ...PARAMS, N: cost })
  return ['scrypt', cost, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$')
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
