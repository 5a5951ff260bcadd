// A small OpenID Connect provider for sign-in only, in two presets on the providers' own paths:
// Microsoft's identity platform v2.0 (common tenant) and Sign in with Apple. Code flow with PKCE,
// ID tokens, refresh tokens and (Microsoft) userinfo; nothing of either provider's APIs beyond
// sign-in. Development only, like every stand-in here: loopback, refused in production.
import { createHash, createPublicKey, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import Fastify from 'fastify'
import type { FastifyReply, FastifyRequest } from 'fastify'
import formbody from '@fastify/formbody'
import { exportJWK, importSPKI, jwtVerify, SignJWT } from 'jose'
import type { JSONWebKeySet, JWTPayload } from 'jose'
import { listenOnLoopback, refuseProduction } from '../stand-in/index.js'
import { rsaPrivateKey } from '../rsa-keys.js'

type OidcPreset = 'microsoft' | 'apple'

interface OidcClient {
  clientId: string
  /** Microsoft: the client secret. Apple authenticates clients with a signed JWT instead (below). */
  clientSecret?: string
  /** Compared exactly, as both providers do. */
  redirectUris: string[]
  /** Apple: the developer team that signs the client secret JWT (its `iss`). */
  teamId?: string
  /** Apple: the key id in the client secret JWT's header. */
  keyId?: string
  /** Apple: the public half (PEM, SPKI) of the key that signs the client secret JWT. */
  publicKeyPem?: string
}

interface OidcAccountSetup {
  email: string
  name?: string
  /** Default true. Microsoft says so with its optional claim `xms_edov`, Apple with `email_verified`. */
  emailVerified?: boolean
  /** Apple only: the person chose "Hide My Email"; clients see a private-relay address. */
  privateRelay?: boolean
}

export interface OidcOptions {
  preset: OidcPreset
  port?: number
  clients?: OidcClient[]
  accounts?: OidcAccountSetup[]
}

interface OidcControl {
  createAccount: (account: OidcAccountSetup) => void
  /** Ends every refresh token of the account (refresh answers invalid_grant). */
  revoke: (email: string) => void
  /** The address clients see for the account (a relay address for Apple's hidden emails). */
  visibleEmail: (email: string) => string | undefined
  /** The subject clients see for the account and client. */
  subjectFor: (email: string, clientId: string) => string | undefined
}

export interface OidcStandIn {
  url: string
  discoveryUrl: string
  control: OidcControl
  close: () => Promise<void>
}

interface Account {
  email: string
  name: string
  emailVerified: boolean
  relayEmail: string | undefined
  /** Stable per person; Microsoft's `oid`, and the source of the per-client subjects. */
  id: string
}

interface Code {
  clientId: string
  redirectUri: string
  account: Account
  scopes: string[]
  nonce: string | undefined
  challenge: { value: string, method: 'S256' | 'plain' } | undefined
  expiresAt: number
}

interface Grant { clientId: string, account: Account, scopes: string[] }

class OAuthError extends Error {
  constructor (readonly statusCode: number, readonly error: string, description: string) {
    super(description)
  }
}

const digest = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('base64url')
const safeEqual = (a: string, b: string): boolean =>
  timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest())
const token = (bytes: number): string => randomBytes(bytes).toString('base64url')
const fields = (body: unknown): Record<string, unknown> => typeof body === 'object' && body !== null ? body as Record<string, unknown> : {}
const text = (source: Record<string, unknown>, name: string): string | undefined => typeof source[name] === 'string' ? source[name] : undefined
const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

// The consumer tenant of personal Microsoft accounts; the common endpoint issues its tokens.
const MICROSOFT_TENANT = '9188040d-6c67-4c5b-b112-36a304b66dad'
/** What Apple's client secret JWT must name as its audience, whichever origin serves the token endpoint. */
export const APPLE_AUDIENCE = 'https://appleid.apple.com'
const CODE_LIFETIME_MS = 10 * 60 * 1000
const TOKEN_LIFETIME_SEC = 3600

interface Paths { discovery: string[], authorize: string, token: string, keys: string, userinfo?: string }

const PATHS: Record<OidcPreset, Paths> = {
  microsoft: {
    discovery: ['/common/v2.0/.well-known/openid-configuration', `/${MICROSOFT_TENANT}/v2.0/.well-known/openid-configuration`],
    authorize: '/common/oauth2/v2.0/authorize',
    token: '/common/oauth2/v2.0/token',
    keys: '/common/discovery/v2.0/keys',
    userinfo: '/oidc/userinfo'
  },
  apple: {
    discovery: ['/.well-known/openid-configuration'],
    authorize: '/auth/authorize',
    token: '/auth/token',
    keys: '/auth/keys'
  }
}

export async function startOidcProvider (options: OidcOptions): Promise<OidcStandIn> {
  refuseProduction('dev/oidc')
  const { preset } = options
  const paths = PATHS[preset]
  const privateKey = rsaPrivateKey()
  const kid = token(12)
  const jwks: JSONWebKeySet = { keys: [{ ...await exportJWK(createPublicKey(privateKey)), kid, alg: 'RS256', use: 'sig' }] }
  const sign = async (claims: JWTPayload): Promise<string> =>
    await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(privateKey)

  const clients = new Map<string, OidcClient>()
  for (const client of options.clients ?? []) clients.set(client.clientId, client)
  const accounts = new Map<string, Account>()
  const codes = new Map<string, Code>()
  const refreshTokens = new Map<string, Grant>()
  const accessTokens = new Map<string, Grant & { expiresAt: number }>()
  // Apple sends the person's name only at their first authorization of a client.
  const introduced = new Set<string>()
  let origin = ''

  const issuer = (): string => preset === 'microsoft' ? `${origin}/${MICROSOFT_TENANT}/v2.0` : origin

  function createAccount (setup: OidcAccountSetup): void {
    const email = setup.email.trim().toLowerCase()
    accounts.set(email, {
      email,
      name: setup.name ?? email.split('@')[0] ?? email,
      emailVerified: setup.emailVerified ?? true,
      relayEmail: preset === 'apple' && setup.privateRelay === true ? `${token(8).toLowerCase().replace(/[^a-z0-9]/g, 'x')}@privaterelay.appleid.com` : undefined,
      id: randomUUID()
    })
  }
  for (const account of options.accounts ?? []) createAccount(account)

  /** Microsoft's `sub` is pairwise (per person and application); Apple's is stable per team. */
  function subjectOf (account: Account, clientId: string): string {
    if (preset === 'microsoft') return digest(`${account.id}:${clientId}`).slice(0, 43)
    return `000${account.id.replace(/-/g, '').slice(0, 3)}.${digest(account.id).replace(/[^a-z0-9]/gi, '').slice(0, 32).toLowerCase()}.0${account.id.slice(-3)}`
  }

  async function idToken (grant: Grant, nonce: string | undefined): Promise<string> {
    const { account, clientId, scopes } = grant
    const now = Math.floor(Date.now() / 1000)
    const claims: JWTPayload & Record<string, unknown> = { iss: issuer(), aud: clientId, sub: subjectOf(account, clientId), iat: now, exp: now + TOKEN_LIFETIME_SEC }
    if (nonce !== undefined) claims.nonce = nonce
    if (preset === 'microsoft') {
      Object.assign(claims, { ver: '2.0', nbf: now, tid: MICROSOFT_TENANT, oid: account.id, preferred_username: account.email })
      if (scopes.includes('profile')) claims.name = account.name
      if (scopes.includes('email')) {
        claims.email = account.email
        // An optional claim Microsoft sends only for an address whose domain owner vouches for it.
        if (account.emailVerified) claims.xms_edov = true
      }
    } else {
      Object.assign(claims, { auth_time: now, nonce_supported: true })
      if (scopes.includes('email')) {
        claims.email = account.relayEmail ?? account.email
        // Apple writes these booleans as strings.
        claims.email_verified = String(account.relayEmail !== undefined || account.emailVerified)
        if (account.relayEmail !== undefined) claims.is_private_email = 'true'
      }
    }
    return await sign(claims)
  }

  async function tokenAnswer (grant: Grant, nonce: string | undefined, withRefresh: boolean): Promise<Record<string, unknown>> {
    const accessToken = token(48)
    accessTokens.set(digest(accessToken), { ...grant, expiresAt: Date.now() + TOKEN_LIFETIME_SEC * 1000 })
    const answer: Record<string, unknown> = { access_token: accessToken, token_type: 'Bearer', expires_in: TOKEN_LIFETIME_SEC }
    if (grant.scopes.includes('openid') || preset === 'apple') answer.id_token = await idToken(grant, nonce)
    if (preset === 'microsoft') answer.scope = grant.scopes.filter((scope) => scope !== 'offline_access').join(' ')
    if (withRefresh) {
      const refreshToken = token(64)
      refreshTokens.set(digest(refreshToken), grant)
      answer.refresh_token = refreshToken
    }
    return answer
  }

  async function authenticateClient (request: FastifyRequest, body: Record<string, unknown>): Promise<OidcClient> {
    let clientId = text(body, 'client_id')
    let secret = text(body, 'client_secret')
    const basic = request.headers.authorization
    if (basic !== undefined && /^basic /i.test(basic)) {
      const decoded = Buffer.from(basic.slice(6), 'base64').toString('utf8')
      const colon = decoded.indexOf(':')
      clientId = decodeURIComponent(decoded.slice(0, colon))
      secret = decodeURIComponent(decoded.slice(colon + 1))
    }
    const client = clientId === undefined ? undefined : clients.get(clientId)
    if (client === undefined || secret === undefined) throw new OAuthError(401, 'invalid_client', 'The client could not be authenticated.')
    if (preset === 'microsoft') {
      if (client.clientSecret === undefined || !safeEqual(secret, client.clientSecret)) throw new OAuthError(401, 'invalid_client', 'AADSTS7000215: Invalid client secret provided.')
      return client
    }
    // Apple: the secret is an ES256 JWT by the developer's key: iss the team, sub the client, aud Apple.
    if (client.publicKeyPem === undefined) throw new OAuthError(400, 'invalid_client', 'client has no registered key')
    try {
      const { payload, protectedHeader } = await jwtVerify(secret, await importSPKI(client.publicKeyPem, 'ES256'), {
        issuer: client.teamId, subject: client.clientId, audience: APPLE_AUDIENCE, algorithms: ['ES256']
      })
      if (protectedHeader.kid !== client.keyId || payload.exp === undefined) throw new Error('wrong key id')
    } catch {
      throw new OAuthError(400, 'invalid_client', 'The client secret is not a valid signed assertion.')
    }
    return client
  }

  function verifyChallenge (code: Code, verifier: string | undefined): void {
    if (code.challenge === undefined) return
    if (verifier === undefined) throw new OAuthError(400, 'invalid_grant', 'The code_verifier is required.')
    const computed = code.challenge.method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier
    if (!safeEqual(computed, code.challenge.value)) throw new OAuthError(400, 'invalid_grant', 'The code_verifier does not match the code_challenge.')
  }

  const app = Fastify({ logger: false })
  await app.register(formbody)
  app.setErrorHandler(async (error, _request, reply) => {
    if (error instanceof OAuthError) return await reply.code(error.statusCode).send({ error: error.error, error_description: error.message })
    const status = (error as { statusCode?: number }).statusCode ?? 500
    return await reply.code(status).send({ error: status >= 500 ? 'server_error' : 'invalid_request', error_description: (error as Error).message })
  })

  for (const path of paths.discovery) {
    app.get(path, async () => ({
      issuer: preset === 'microsoft' ? `${origin}/{tenantid}/v2.0` : origin,
      authorization_endpoint: origin + paths.authorize,
      token_endpoint: origin + paths.token,
      jwks_uri: origin + paths.keys,
      ...(paths.userinfo === undefined ? {} : { userinfo_endpoint: origin + paths.userinfo }),
      response_types_supported: ['code'],
      response_modes_supported: ['query', 'fragment', 'form_post'],
      subject_types_supported: ['pairwise'],
      id_token_signing_alg_values_supported: ['RS256'],
      scopes_supported: preset === 'microsoft' ? ['openid', 'profile', 'email', 'offline_access'] : ['openid', 'email', 'name'],
      token_endpoint_auth_methods_supported: preset === 'microsoft' ? ['client_secret_post', 'client_secret_basic'] : ['client_secret_post'],
      code_challenge_methods_supported: ['plain', 'S256']
    }))
  }
  app.get(paths.keys, async () => jwks)

  app.get(paths.authorize, async (request, reply) => {
    const query = fields(request.query)
    const clientId = text(query, 'client_id')
    const client = clientId === undefined ? undefined : clients.get(clientId)
    const redirectUri = text(query, 'redirect_uri')
    // Never send a browser to an address the client did not register.
    if (client === undefined) return await reply.code(400).type('text/html').send('<h1>invalid_client</h1>')
    if (redirectUri === undefined || !client.redirectUris.includes(redirectUri)) {
      return await reply.code(400).type('text/html').send('<h1>redirect_uri_mismatch</h1><p>The redirect URI is not registered for this client.</p>')
    }
    if (text(query, 'response_type') !== 'code') return await reply.code(400).type('text/html').send('<h1>unsupported_response_type</h1>')
    const state = text(query, 'state')
    const responseMode = text(query, 'response_mode') ?? 'query'
    const respond = async (parameters: Record<string, string>): Promise<FastifyReply> => {
      const all = state === undefined ? parameters : { ...parameters, state }
      if (responseMode === 'form_post') {
        const inputs = Object.entries(all).map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`).join('')
        return await reply.type('text/html').header('cache-control', 'no-store').send(
          `<!doctype html><body onload="document.forms[0].submit()"><form method="post" action="${escapeHtml(redirectUri)}">${inputs}</form></body>`)
      }
      const target = new URL(redirectUri)
      for (const [name, value] of Object.entries(all)) target.searchParams.set(name, value)
      return await reply.header('cache-control', 'no-store').redirect(target.toString(), 302)
    }
    const hint = text(query, 'login_hint')?.trim().toLowerCase()
    const approve = text(query, 'approve')
    const account = hint === undefined ? undefined : accounts.get(hint)
    if (account === undefined || (approve !== '1' && approve !== '0')) {
      // The person picks an account; each link is the non-interactive form of the same request.
      const links = [...accounts.values()].map((known) => {
        const url = new URL(origin + request.url)
        url.searchParams.set('login_hint', known.email)
        url.searchParams.set('approve', '1')
        return `<li><a href="${escapeHtml(url.pathname + url.search)}">${escapeHtml(known.name)} &lt;${escapeHtml(known.email)}&gt;</a></li>`
      }).join('')
      return await reply.type('text/html').header('cache-control', 'no-store').send(`<!doctype html><title>Sign in (${preset} stand-in)</title><ul>${links}</ul>`)
    }
    if (approve === '0') return await respond({ error: 'access_denied', error_description: 'The user declined.' })
    const scopes = (text(query, 'scope') ?? 'openid').split(/\s+/).filter(Boolean)
    const challengeValue = text(query, 'code_challenge')
    const method = text(query, 'code_challenge_method') === 'S256' ? 'S256' : 'plain'
    const code = token(32)
    codes.set(digest(code), {
      clientId: client.clientId,
      redirectUri,
      account,
      scopes,
      nonce: text(query, 'nonce'),
      challenge: challengeValue === undefined ? undefined : { value: challengeValue, method },
      expiresAt: Date.now() + CODE_LIFETIME_MS
    })
    const parameters: Record<string, string> = { code }
    if (preset === 'apple' && !introduced.has(`${client.clientId}:${account.email}`)) {
      introduced.add(`${client.clientId}:${account.email}`)
      const [firstName, ...rest] = account.name.split(' ')
      parameters.user = JSON.stringify({ name: { firstName: firstName ?? '', lastName: rest.join(' ') }, email: account.relayEmail ?? account.email })
    }
    return await respond(parameters)
  })

  app.post(paths.token, async (request, reply) => {
    const body = fields(request.body)
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
    const client = await authenticateClient(request, body)
    const grantType = text(body, 'grant_type')
    if (grantType === 'authorization_code') {
      const presented = text(body, 'code') ?? ''
      const code = codes.get(digest(presented))
      // Single use, whatever happens next.
      codes.delete(digest(presented))
      if (code === undefined || code.expiresAt < Date.now() || code.clientId !== client.clientId) {
        throw new OAuthError(400, 'invalid_grant', 'The provided authorization code is invalid or expired.')
      }
      if (text(body, 'redirect_uri') !== code.redirectUri) throw new OAuthError(400, 'invalid_grant', 'The redirect URI does not match the one of the authorization request.')
      verifyChallenge(code, text(body, 'code_verifier'))
      const grant = { clientId: client.clientId, account: code.account, scopes: code.scopes }
      // Microsoft issues a refresh token for offline_access; Apple for every code.
      return await tokenAnswer(grant, code.nonce, preset === 'apple' || code.scopes.includes('offline_access'))
    }
    if (grantType === 'refresh_token') {
      const grant = refreshTokens.get(digest(text(body, 'refresh_token') ?? ''))
      if (grant === undefined || grant.clientId !== client.clientId) throw new OAuthError(400, 'invalid_grant', 'The refresh token has expired or been revoked.')
      return await tokenAnswer(grant, undefined, false)
    }
    throw new OAuthError(400, 'unsupported_grant_type', `grant_type ${grantType ?? '(none)'} is not supported`)
  })

  if (paths.userinfo !== undefined) {
    const userinfo = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const header = request.headers.authorization
      const grant = header !== undefined && /^bearer /i.test(header) ? accessTokens.get(digest(header.slice(7).trim())) : undefined
      if (grant === undefined || grant.expiresAt < Date.now()) return await reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"').send({ error: 'invalid_token' })
      const claims: Record<string, unknown> = { sub: subjectOf(grant.account, grant.clientId) }
      if (grant.scopes.includes('profile')) claims.name = grant.account.name
      if (grant.scopes.includes('email')) claims.email = grant.account.email
      return await reply.send(claims)
    }
    app.get(paths.userinfo, userinfo)
    app.post(paths.userinfo, userinfo)
  }

  const control: OidcControl = {
    createAccount,
    revoke (email) {
      const account = accounts.get(email.trim().toLowerCase())
      for (const [key, grant] of refreshTokens) if (grant.account === account) refreshTokens.delete(key)
      for (const [key, grant] of accessTokens) if (grant.account === account) accessTokens.delete(key)
    },
    visibleEmail: (email) => {
      const account = accounts.get(email.trim().toLowerCase())
      return account === undefined ? undefined : account.relayEmail ?? account.email
    },
    subjectFor: (email, clientId) => {
      const account = accounts.get(email.trim().toLowerCase())
      return account === undefined ? undefined : subjectOf(account, clientId)
    }
  }
  app.post('/_control/accounts', async (request, reply) => {
    const body = fields(request.body)
    const email = text(body, 'email')
    if (email === undefined) return await reply.code(400).send({ error: 'email is required' })
    createAccount({ email, ...(text(body, 'name') === undefined ? {} : { name: text(body, 'name') }), emailVerified: body['emailVerified'] !== false, privateRelay: body['privateRelay'] === true })
    return await reply.code(201).send({ email: control.visibleEmail(email) })
  })
  app.post('/_control/accounts/:email/revoke', async (request) => {
    control.revoke((request.params as { email: string }).email)
    return {}
  })

  origin = await listenOnLoopback(app, options.port, `${preset} OpenID stand-in`)
  return {
    url: origin,
    discoveryUrl: origin + (paths.discovery[0] ?? ''),
    control,
    close: async () => { await app.close() }
  }
}
