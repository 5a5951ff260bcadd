import { generateKeyPairSync } from 'node:crypto'
import { test } from 'tap'
import { SignJWT, createRemoteJWKSet, jwtVerify } from 'jose'
import { APPLE_AUDIENCE, startOidcProvider } from '../../../dev/oidc/index.js'

// What the sign-in stand-ins promise beyond what the backend's provider tests use: development
// only, Apple's client secret checked, codes single-use, PKCE, refresh tokens that a revocation ends.
const CALLBACK = 'http://localhost:9080/auth/extprovider/callback'

test('the OpenID stand-ins refuse to start when NODE_ENV is production', async (t) => {
  const previous = process.env['NODE_ENV']
  process.env['NODE_ENV'] = 'production'
  t.teardown(() => {
    if (previous === undefined) delete process.env['NODE_ENV']
    else process.env['NODE_ENV'] = previous
  })
  for (const preset of ['microsoft', 'apple'] as const) {
    await t.rejects(startOidcProvider({ preset }), /^dev\/oidc .*refuses to start when NODE_ENV is production$/)
  }
})

async function code (url: string): Promise<string> {
  const response = await fetch(url, { redirect: 'manual' })
  return new URL(response.headers.get('location') ?? '').searchParams.get('code') ?? ''
}

test('Microsoft preset: code flow with PKCE, pairwise subjects, xms_edov, single-use codes, revocable refresh tokens', async (t) => {
  const client = { clientId: 'ms-client', clientSecret: 'ms-secret-0123456789', redirectUris: [CALLBACK] }
  const ms = await startOidcProvider({ preset: 'microsoft', clients: [client], accounts: [{ email: 'Ada@Example.com', name: 'Ada L' }, { email: 'bob@example.com', emailVerified: false }] })
  t.teardown(() => ms.close())
  const discovery = await (await fetch(ms.discoveryUrl)).json() as Record<string, string>
  t.equal(discovery['token_endpoint'], `${ms.url}/common/oauth2/v2.0/token`)
  const authorize = (email: string, extra = '') =>
    `${discovery['authorization_endpoint']}?client_id=ms-client&redirect_uri=${encodeURIComponent(CALLBACK)}&response_type=code&scope=openid%20email%20profile%20offline_access&state=s1&login_hint=${email}&approve=1${extra}`

  const unregistered = await fetch(authorize('ada@example.com').replace(encodeURIComponent(CALLBACK), encodeURIComponent('https://evil.example/cb')), { redirect: 'manual' })
  t.equal(unregistered.status, 400, 'never redirects to an unregistered address')

  const verifier = 'v'.repeat(50)
  const challenge = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))).toString('base64url')
  const issued = await code(authorize('ada@example.com', `&code_challenge=${challenge}&code_challenge_method=S256&nonce=n1`))
  const exchange = async (body: Record<string, string>) => await fetch(discovery['token_endpoint'] ?? '', { method: 'POST', body: new URLSearchParams(body) })
  const base = { grant_type: 'authorization_code', code: issued, redirect_uri: CALLBACK, client_id: 'ms-client', client_secret: 'ms-secret-0123456789' }
  t.equal((await exchange({ ...base, client_secret: 'wrong' })).status, 401, 'a wrong secret is invalid_client')
  t.equal((await exchange({ ...base, code_verifier: 'w'.repeat(50) })).status, 400, 'a wrong verifier')
  const reissued = await code(authorize('ada@example.com', `&code_challenge=${challenge}&code_challenge_method=S256&nonce=n1`))
  const answer = await exchange({ ...base, code: reissued, code_verifier: verifier })
  t.equal(answer.status, 200)
  const tokens = await answer.json() as { id_token: string, refresh_token: string, access_token: string, scope: string }
  t.match(tokens.scope, /email/)
  const { payload } = await jwtVerify(tokens.id_token, createRemoteJWKSet(new URL(discovery['jwks_uri'] ?? '')), { audience: 'ms-client' })
  t.match(payload, { email: 'ada@example.com', xms_edov: true, nonce: 'n1', name: 'Ada L', tid: String })
  t.equal(payload.sub, ms.control.subjectFor('ada@example.com', 'ms-client'))
  t.equal((await exchange({ ...base, code: reissued, code_verifier: verifier })).status, 400, 'a code is single-use')
  const userinfo = await (await fetch(discovery['userinfo_endpoint'] ?? '', { headers: { authorization: `Bearer ${tokens.access_token}` } })).json() as Record<string, unknown>
  t.equal(userinfo['sub'], payload.sub)

  const unverified = await exchange({ ...base, code: await code(authorize('bob@example.com')) })
  const bob = (await jwtVerify((await unverified.json() as { id_token: string }).id_token, createRemoteJWKSet(new URL(discovery['jwks_uri'] ?? '')))).payload
  t.notOk('xms_edov' in bob, 'no claim for an address nobody vouches for')

  const refresh = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: 'ms-client', client_secret: 'ms-secret-0123456789' }
  t.equal((await exchange(refresh)).status, 200)
  ms.control.revoke('ada@example.com')
  const dead = await exchange(refresh)
  t.equal(dead.status, 400)
  t.equal((await dead.json() as { error: string }).error, 'invalid_grant')
})

test('Apple preset: form_post, the client secret as a JWT signed by the team key, relay addresses, the name once', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const client = { clientId: 'com.example.web', teamId: 'TEAM1', keyId: 'KEY1', publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(), redirectUris: [CALLBACK] }
  const apple = await startOidcProvider({ preset: 'apple', clients: [client], accounts: [{ email: 'cy@example.com', name: 'Cy Twombly', privateRelay: true }] })
  t.teardown(() => apple.close())
  const page = async () => await (await fetch(`${apple.url}/auth/authorize?client_id=com.example.web&redirect_uri=${encodeURIComponent(CALLBACK)}&response_type=code&scope=name%20email&response_mode=form_post&state=s&login_hint=cy@example.com&approve=1`)).text()
  const first = await page()
  t.match(first, /method="post" action="http:\/\/localhost:9080\/auth\/extprovider\/callback"/)
  t.match(first, /name="user"/, 'the name comes with the first authorization')
  t.notMatch(await page(), /name="user"/, 'and only then')
  const issued = /name="code" value="([^"]+)"/.exec(first)?.[1] ?? ''
  const secret = async (key = privateKey, kid = 'KEY1') => await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid }).setIssuer('TEAM1').setSubject('com.example.web')
    .setAudience(APPLE_AUDIENCE).setIssuedAt().setExpirationTime('1h').sign(key)
  const exchange = async (clientSecret: string, value = issued) => await fetch(`${apple.url}/auth/token`, {
    method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: value, redirect_uri: CALLBACK, client_id: 'com.example.web', client_secret: clientSecret })
  })
  const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
  t.equal((await exchange(await secret(stranger))).status, 400, 'a secret signed by another key is refused')
  t.equal((await exchange(await secret(privateKey, 'OTHER'))).status, 400, 'and one naming another key id')
  const answer = await exchange(await secret())
  t.equal(answer.status, 200)
  const tokens = await answer.json() as { id_token: string, refresh_token: string }
  t.type(tokens.refresh_token, 'string')
  const { payload } = await jwtVerify(tokens.id_token, createRemoteJWKSet(new URL(`${apple.url}/auth/keys`)), { audience: 'com.example.web', issuer: apple.url })
  t.match(payload, { email: /@privaterelay\.appleid\.com$/, is_private_email: 'true', email_verified: 'true' })
  t.equal(payload['email'], apple.control.visibleEmail('cy@example.com'))
})
