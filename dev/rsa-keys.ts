// RSA-2048 keys for the stand-ins' signatures (ID tokens, session tokens). Generating one takes
// about 150 ms of CPU, and a test run starts stand-ins by the hundred, so the test runner
// (test/run.ts) generates a pool once and names its file in DEV_RSA_KEY_POOL: each key taken here
// is the pool's next one, starting at a random place, so two stand-ins of one process hold
// different keys. Without the variable (the local stack, a test file run alone) each is generated.
import { createPrivateKey, generateKeyPairSync, randomInt, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'

export const RSA_KEY_POOL_VARIABLE = 'DEV_RSA_KEY_POOL'

let pool: { keys: string[], next: number } | null | undefined

function poolOfThisRun (): { keys: string[], next: number } | null {
  if (pool !== undefined) return pool
  const file = process.env[RSA_KEY_POOL_VARIABLE]
  const keys = file === undefined || file === '' ? [] : JSON.parse(readFileSync(file, 'utf8')) as string[]
  pool = keys.length === 0 ? null : { keys, next: randomInt(keys.length) }
  return pool
}

/** An RSA-2048 private key: the next of the run's pool, or a new one. */
export function rsaPrivateKey (): KeyObject {
  const given = poolOfThisRun()
  if (given === null) return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
  const pem = given.keys[given.next % given.keys.length] as string
  given.next++
  return createPrivateKey(pem)
}
