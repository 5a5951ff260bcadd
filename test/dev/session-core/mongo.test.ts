// The MongoDB storage: the SDK flows on top of it, and what survives a restart of the core.
import { randomUUID } from 'node:crypto'
import { MongoClient } from 'mongodb'
import { test } from 'tap'
import Session from 'supertokens-node/recipe/session'
import UserMetadata from 'supertokens-node/recipe/usermetadata'
import { startMongo } from '../../../dev/mongo/index.js'
import { startSessionCore } from '../../../dev/session-core/index.js'
import { cdi, formFields, HeaderClient, jwtPayload, startHarness, uniqueEmail } from './harness.js'

const API_KEY = 'mongo-storage-test-api-key-0123456789'
const PASSWORD = 'correct-horse-9'

/** Puts a database name into a MongoDB URI, keeping its options. */
function withDatabase (uri: string, database: string): string {
  const match = /^(mongodb(?:\+srv)?:\/\/[^/?]+)\/?([^?]*)(\?.*)?$/.exec(uri)
  if (match === null) throw new Error(`unexpected MongoDB URI ${uri}`)
  return `${match[1]}/${database}${match[3] ?? ''}`
}

test('MongoDB storage', async (t) => {
  let baseUri = process.env['MONGODB_URI']
  if (baseUri === undefined || baseUri === '') {
    const mongo = await startMongo()
    t.teardown(() => mongo.close())
    baseUri = mongo.uri
  }
  const mongoUri = withDatabase(baseUri, `session_core_${randomUUID().replaceAll('-', '')}`)
  const first = await startSessionCore({ apiKey: API_KEY, mongoUri })
  let firstClosed = false
  t.teardown(async () => { if (!firstClosed) await first.close() })
  const firstTarget = { uri: first.uri, apiKey: API_KEY }
  const { baseUrl } = await startHarness(t, { ...firstTarget, isStandIn: true })

  const email = uniqueEmail('mongo')
  const client = new HeaderClient(baseUrl)

  await t.test('sign-up, refresh, first use and theft detection on MongoDB', async (t) => {
    const signUp = await client.request('POST', '/auth/signup', formFields({ email, password: PASSWORD, name: 'Mo' }))
    t.equal(signUp.body['status'], 'OK')
    const duplicate = await new HeaderClient(baseUrl).request('POST', '/auth/signup', formFields({ email, password: PASSWORD, name: 'Mo' }))
    t.equal(duplicate.body['status'], 'FIELD_ERROR', 'unique email enforced by the index')

    const stolen = client.refreshToken
    t.equal((await client.refresh()).status, 200)
    t.equal((await client.request('GET', '/me')).status, 200, 'first use promotes the new refresh token')
    const replay = await new HeaderClient(baseUrl).refresh(stolen)
    t.equal(replay.body['message'], 'token theft detected')
    t.equal((await client.request('GET', '/me/checked')).status, 401, 'session revoked')

    const signIn = await client.request('POST', '/auth/signin', formFields({ email, password: PASSWORD }))
    t.equal(signIn.body['status'], 'OK')
    const userId = (signIn.body['user'] as { id: string }).id
    await UserMetadata.updateUserMetadata(userId, { a: 1, b: 2 })
    await UserMetadata.updateUserMetadata(userId, { b: null })
    t.same((await UserMetadata.getUserMetadata(userId)).metadata, { a: 1 })
    t.equal((await Session.getAllSessionHandlesForUser(userId)).length, 1)
  })

  await t.test('stored data holds no password and no token in clear', async (t) => {
    const mongoClient = new MongoClient(mongoUri)
    t.teardown(() => mongoClient.close())
    const db = mongoClient.db()
    const user = await db.collection('users').findOne({ email: email.toLowerCase() })
    t.match(String(user?.['passwordHash']), /^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/, 'scrypt hash with parameters and salt')
    const everything = JSON.stringify(await Promise.all(
      ['users', 'sessions', 'tokens', 'keys'].map((name) => db.collection(name).find().toArray())))
    t.notMatch(everything, PASSWORD, 'password not stored')
    t.notMatch(everything, client.refreshToken ?? 'missing', 'refresh token not stored')
    t.notMatch(everything, client.accessToken ?? 'missing', 'access token not stored')
  })

  await t.test('a restarted core keeps users, sessions and signing keys', async (t) => {
    const jwksBefore = await cdi(firstTarget, 'GET', '/.well-known/jwks.json')
    const accessToken = client.accessToken ?? ''
    const refreshToken = client.refreshToken ?? ''
    await first.close()
    firstClosed = true

    const second = await startSessionCore({ apiKey: API_KEY, mongoUri })
    t.teardown(() => second.close())
    const target = { uri: second.uri, apiKey: API_KEY }
    t.same((await cdi(target, 'GET', '/.well-known/jwks.json')).body, jwksBefore.body, 'same signing keys')

    const verified = await cdi(target, 'POST', '/recipe/session/verify', {
      accessToken, doAntiCsrfCheck: false, enableAntiCsrf: false, checkDatabase: true
    })
    t.equal(verified.body['status'], 'OK', 'an access token from before the restart still verifies')

    const refreshed = await cdi(target, 'POST', '/recipe/session/refresh', { refreshToken, enableAntiCsrf: false, useDynamicSigningKey: true })
    t.equal(refreshed.body['status'], 'OK', 'a refresh token from before the restart still refreshes')
    const newAccess = (refreshed.body['accessToken'] as { token: string }).token
    t.equal(jwtPayload(newAccess)['sessionHandle'], jwtPayload(accessToken)['sessionHandle'])

    const signIn = await cdi(target, 'POST', '/public/recipe/signin', { email, password: PASSWORD })
    t.equal(signIn.body['status'], 'OK', 'the account survived')
    const wrong = await cdi(target, 'POST', '/public/recipe/signin', { email, password: 'not-the-password-1' })
    t.equal(wrong.body['status'], 'WRONG_CREDENTIALS_ERROR')
  })
})
