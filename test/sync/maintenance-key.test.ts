// POST /maintenance with sync.maintenanceKey: the caller signs its own short-lived ID token (the
// self-host stack's scheduler, lib/maintenance-token.ts), and the Sync service checks it against the
// configured public key, the endpoint's URL as audience, and the caller as issuer and email.
// (The issuer mode is in test/sync/google/writes.test.ts; the compiled scheduler in test/deploy/build.test.ts.)
import { createPrivateKey, randomBytes } from 'node:crypto'
import { SignJWT } from 'jose'
import { test } from 'tap'
import { ed25519KeyPair, isKeyPair, signMaintenanceToken } from '../../lib/maintenance-token.js'
import { buildSyncApp, startDatabase } from './helper.js'

const CALLER = 'scheduler@calendar.invalid'
const AUDIENCE = 'https://sync.example.test/sync/maintenance'

test('a token the configured key signed for this endpoint and caller is accepted; every other is refused with 401', async (t) => {
  const keys = ed25519KeyPair(randomBytes(32))
  const other = ed25519KeyPair(randomBytes(32))
  const { app, logs } = await buildSyncApp(t, await startDatabase(t), { sync: { maintenanceKey: keys.publicJwk, maintenanceCaller: CALLER } })
  const maintain = async (token: string | undefined) => await app.inject({
    method: 'POST',
    url: '/maintenance',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
  })

  const accepted = await maintain(await signMaintenanceToken(keys.privateJwk, { caller: CALLER, audience: AUDIENCE }))
  t.equal(accepted.statusCode, 200)
  t.same(accepted.json(), { renewed: 0, stopped: 0, failed: 0 }, 'the pass runs and reports')

  const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000)
  const key = createPrivateKey({ key: { ...keys.privateJwk }, format: 'jwk' })
  const custom = async (claims: Record<string, unknown>, build: (jwt: SignJWT) => SignJWT) =>
    await build(new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA' })).sign(key)
  const refusals: Array<[string, string | undefined]> = [
    ['no token', undefined],
    ['signed by another key', await signMaintenanceToken(other.privateJwk, { caller: CALLER, audience: AUDIENCE })],
    ['for another audience', await signMaintenanceToken(keys.privateJwk, { caller: CALLER, audience: 'https://elsewhere.example/maintenance' })],
    ['naming another caller', await signMaintenanceToken(keys.privateJwk, { caller: 'someone@else.example', audience: AUDIENCE })],
    ['expired', await signMaintenanceToken(keys.privateJwk, { caller: CALLER, audience: AUDIENCE }, minutesAgo(6))],
    ['issued too long ago, however late it expires', await custom({ email: CALLER }, (jwt) => jwt.setIssuer(CALLER).setAudience(AUDIENCE).setIssuedAt(minutesAgo(11)).setExpirationTime('1h'))],
    ['without an expiry', await custom({ email: CALLER }, (jwt) => jwt.setIssuer(CALLER).setAudience(AUDIENCE).setIssuedAt())],
    ['the right issuer but another email', await custom({ email: 'someone@else.example' }, (jwt) => jwt.setIssuer(CALLER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime('5m'))],
    ['unsigned', `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: CALLER, email: CALLER, aud: AUDIENCE })).toString('base64url')}.`]
  ]
  for (const [what, token] of refusals) {
    const refused = await maintain(token)
    t.equal(refused.statusCode, 401, what)
    t.match(refused.json(), { code: 'UNAUTHORIZED', message: 'A valid ID token of the trusted caller is required' })
  }
  const presented = refusals.flatMap(([, token]) => token === undefined ? [] : [token])
  t.notOk(presented.some((token) => JSON.stringify(logs).includes(token)), 'no presented token reaches a log line')
  t.ok(logs.some((line) => line['msg'] === 'maintenance request refused'), 'each refusal is logged')
})

test('without a maintenance key or issuer every call is refused, whatever caller is named', async (t) => {
  const keys = ed25519KeyPair(randomBytes(32))
  const token = await signMaintenanceToken(keys.privateJwk, { caller: CALLER, audience: AUDIENCE })
  const database = await startDatabase(t)
  for (const sync of [{}, { maintenanceCaller: CALLER }]) {
    const { app } = await buildSyncApp(t, database, { sync })
    const refused = await app.inject({ method: 'POST', url: '/maintenance', headers: { authorization: `Bearer ${token}` } })
    t.equal(refused.statusCode, 401, JSON.stringify(sync))
  }
})

test('a key pair comes from a 32-byte seed, and only its own halves belong together', async (t) => {
  const seed = randomBytes(32)
  const keys = ed25519KeyPair(seed)
  t.equal(Buffer.from(keys.privateJwk.d, 'base64url').toString('hex'), seed.toString('hex'), 'the seed is the private JWK\'s d')
  t.same(ed25519KeyPair(seed), keys, 'the same seed, the same pair')
  t.ok(isKeyPair(keys.privateJwk, keys.publicJwk))
  t.notOk(isKeyPair(keys.privateJwk, ed25519KeyPair(randomBytes(32)).publicJwk), 'another public key')
  t.notOk(isKeyPair({ ...keys.privateJwk, d: 'c2hvcnQ' }, keys.publicJwk), 'a private key of the wrong length')
  t.throws(() => ed25519KeyPair(randomBytes(16)), /32 bytes/)
})
