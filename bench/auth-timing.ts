// Whether a sign-in's timing tells which emails have accounts: the median time of a wrong-password
// sign-in for an email that has an account against one for an email that has none, measured in
// the same run, alternating, one request at a time. Target: the ratio unknown/known within
// 0.8 to 1.25 (before the decoy check an unknown email answered about 20 times faster).
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { stringify } from 'yaml'
import app, { initSessionLibrary, serverOptions } from '../app.js'
import { parseConfig } from '../lib/config.js'
import { startMongo } from '../dev/mongo/index.js'
import { startSessionCore } from '../dev/session-core/index.js'

const mongo = await startMongo({ replicaSet: 'rs0' })
const apiKey = 'bench-session-core-api-key'
const core = await startSessionCore({ apiKey })
const { config } = parseConfig(stringify({
  runtime: { nodeEnv: 'test', timezone: 'UTC', logLevel: 'error' },
  web: { url: 'http://localhost:9080' },
  backend: { apiUrl: 'http://localhost:3000/api', originsAllowed: ['http://localhost:9080'], serviceToken: 'bench-service-token' },
  database: { uri: mongo.uri.replace(/\/(\?|$)/, '/calendar_bench$1') },
  sessions: { uri: core.uri, key: apiKey },
  sync: { databaseUri: mongo.uri.replace(/\/(\?|$)/, '/sync_bench$1'), internalAuthToken: 'bench-internal-auth-token-0123456789', callbackBaseUrl: 'http://localhost:3000/sync', postConnectRedirectUrl: 'http://localhost:9080', serviceUrl: 'http://127.0.0.1:9' }
}), 'backend')
const backend = Fastify({ ...serverOptions(config), logger: { level: 'error' } })
initSessionLibrary(config, backend.log)
await backend.register(fp(app), { config })
await backend.ready()

const signIn = async (email: string, address: string) => await backend.inject({
  method: 'POST',
  url: '/api/auth/signin',
  // A new address per request keeps the rate limits out of the measurement.
  headers: { 'sx-auth-mode': 'header', 'x-forwarded-for': address },
  payload: { formFields: [{ id: 'email', value: email }, { id: 'password', value: 'not the password 1' }] }
})
const ROUNDS = 60
// One account per round: the per-account limit allows only a few wrong passwords per account.
for (let round = 0; round < ROUNDS + 5; round++) {
  await backend.inject({
    method: 'POST',
    url: '/api/auth/signup',
    headers: { 'sx-auth-mode': 'header', 'x-forwarded-for': `10.200.${round >> 8}.${round & 255}` },
    payload: { formFields: [{ id: 'name', value: `Known ${round}` }, { id: 'email', value: `known-${round}@example.com` }, { id: 'password', value: 'the real password 1' }] }
  })
}

const known: number[] = []
const unknown: number[] = []
for (let round = 0; round < ROUNDS + 5; round++) {
  for (const [email, into] of [[`known-${round}@example.com`, known], [`nobody-${round}@example.com`, unknown]] as const) {
    const started = performance.now()
    const answer = await signIn(round % 2 === 0 ? email : email.toUpperCase(), `10.${round >> 8}.${round & 255}.${into === known ? 1 : 2}`)
    if (answer.json().status !== 'WRONG_CREDENTIALS_ERROR') throw new Error(`unexpected answer ${answer.body}`)
    // The first rounds warm the code paths and create the decoy account.
    if (round >= 5) into.push(performance.now() - started)
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
const ratio = median(unknown) / median(known)
console.log(`auth-timing: wrong password, known email ${median(known).toFixed(1)} ms, unknown email ${median(unknown).toFixed(1)} ms (medians of ${ROUNDS}), ratio ${ratio.toFixed(2)} (target 0.80 to 1.25)`)

await backend.close()
await core.close()
await mongo.close()
