// OAuth 2.0 and OpenID Connect endpoints on Google's paths: discovery, keys, authorization,
// token, revocation, userinfo and tokeninfo.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { SESSION_COOKIE, readAuthorizationRequest } from './authorization.js'
import type { AuthorizationOutcome } from './authorization.js'
import { AuthorizationPageError, OAuthError } from './errors.js'
import { EMAIL_SCOPE, PROFILE_SCOPE, profileClaims } from './identity.js'
import { authorizationErrorPage, consentPage } from './pages.js'
import type { GoogleState } from './state.js'
import { basicCredentials, cookie, fields, text } from '../stand-in/oauth-requests.js'

// Google's certificate endpoints tell clients to cache for hours; an hour is plenty here.
const CERTS_CACHE_CONTROL = 'public, max-age=3600, must-revalidate, no-transform'

function bearer (request: FastifyRequest): string | undefined {
  const header = request.headers.authorization
  if (header !== undefined && /^bearer /i.test(header)) return header.slice(7).trim()
  return text(fields(request.query), 'access_token')
}

function sendRedirect (reply: FastifyReply, outcome: AuthorizationOutcome & { kind: 'redirect' }): FastifyReply {
  if (outcome.signIn !== undefined) {
    reply.header('set-cookie', `${SESSION_COOKIE}=${outcome.signIn}; Path=/; HttpOnly; SameSite=Lax`)
  }
  return reply.header('cache-control', 'no-store').redirect(outcome.location, 302)
}

export async function oauthRoutes (app: FastifyInstance, options: { state: GoogleState }): Promise<void> {
  const { state } = options
  const { identity, authorization } = state

  app.get('/.well-known/openid-configuration', { config: { operation: 'oidc.discovery' } }, async (_request, reply) => {
    const origin = state.origin
    return reply.header('cache-control', 'public, max-age=3600').send({
      issuer: origin,
      authorization_endpoint: `${origin}/o/oauth2/v2/auth`,
      token_endpoint: `${origin}/token`,
      userinfo_endpoint: `${origin}/v1/userinfo`,
      revocation_endpoint: `${origin}/revoke`,
      jwks_uri: `${origin}/oauth2/v3/certs`,
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      scopes_supported: ['openid', 'email', 'profile'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
      claims_supported: ['aud', 'email', 'email_verified', 'exp', 'family_name', 'given_name', 'iat', 'iss', 'name', 'picture', 'sub', 'nonce', 'at_hash', 'azp'],
      code_challenge_methods_supported: ['plain', 'S256'],
      grant_types_supported: ['authorization_code', 'refresh_token']
    })
  })

  app.get('/oauth2/v3/certs', { config: { operation: 'oauth2.certs' } }, async (_request, reply) =>
    reply.header('cache-control', CERTS_CACHE_CONTROL).send(state.options.keys.jwks))
  app.get('/oauth2/v1/certs', { config: { operation: 'oauth2.certs' } }, async (_request, reply) =>
    reply.header('cache-control', CERTS_CACHE_CONTROL).send(state.options.keys.pemCertificates))

  app.get('/o/oauth2/v2/auth', { config: { operation: 'oauth2.authorize' } }, async (request, reply) => {
    const checked = readAuthorizationRequest(fields(request.query), identity)
    const outcome = authorization.decide(checked, cookie(request, SESSION_COOKIE))
    if (outcome.kind === 'consent') {
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(consentPage({
        requestId: outcome.requestId,
        clientId: outcome.request.clientId,
        scopes: outcome.request.scopes,
        accounts: identity.listAccounts().map(({ email, name }) => ({ email, name })),
        preselected: outcome.preselected
      }))
    }
    return sendRedirect(reply, outcome)
  })

  app.post('/o/oauth2/v2/auth', { config: { operation: 'oauth2.authorize' } }, async (request, reply) => {
    const outcome = authorization.submit(fields(request.body), (email) => {
      const view = state.createAccount({ email })
      const account = identity.accountByEmail(view.email)
      if (account === undefined) throw new Error('account creation failed')
      return account
    })
    return sendRedirect(reply, outcome)
  })

  app.post('/token', { config: { operation: 'oauth2.token' } }, async (request, reply) => {
    const body = fields(request.body)
    reply.header('cache-control', 'no-cache, no-store, max-age=0, must-revalidate').header('pragma', 'no-cache')
    const basic = basicCredentials(request, () => new OAuthError(401, 'invalid_client', 'Unauthorized'))
    const grantType = text(body, 'grant_type')
    if (grantType === undefined) throw new OAuthError(400, 'invalid_request', 'Missing required parameter: grant_type')
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
      throw new OAuthError(400, 'unsupported_grant_type', `Invalid grant_type: ${grantType}`)
    }
    const client = identity.authenticateClient(basic?.clientId ?? text(body, 'client_id'), basic?.clientSecret ?? text(body, 'client_secret'))
    if (grantType === 'authorization_code') {
      const code = text(body, 'code')
      if (code === undefined || code === '') throw new OAuthError(400, 'invalid_request', 'Missing required parameter: code')
      return identity.exchangeCode(client, code, text(body, 'redirect_uri'), text(body, 'code_verifier'))
    }
    const refreshToken = text(body, 'refresh_token')
    if (refreshToken === undefined || refreshToken === '') throw new OAuthError(400, 'invalid_request', 'Missing required parameter: refresh_token')
    return identity.refresh(client, refreshToken)
  })

  // Google takes the token in the query string or in a form body, by POST (and GET, which it still answers).
  const revoke = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const token = text(fields(request.body), 'token') ?? text(fields(request.query), 'token')
    if (token === undefined || token === '') throw new OAuthError(400, 'invalid_request', 'Missing required parameter: token')
    if (!identity.revokeToken(token)) throw new OAuthError(400, 'invalid_token', 'Token expired or revoked')
    return reply.send({})
  }
  app.post('/revoke', { config: { operation: 'oauth2.revoke' } }, revoke)
  app.get('/revoke', { config: { operation: 'oauth2.revoke' } }, revoke)

  const userinfo = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const token = bearer(request)
    const auth = token === undefined ? undefined : identity.authenticate(token)
    if (auth === undefined) {
      return reply.code(401)
        .header('www-authenticate', 'Bearer realm="https://accounts.google.com/", error="invalid_token"')
        .send({ error: 'invalid_request', error_description: 'Invalid Credentials' })
    }
    const { account, scopes } = auth
    const claims: Record<string, unknown> = { sub: account.sub }
    if (scopes.includes(PROFILE_SCOPE)) Object.assign(claims, profileClaims(account))
    if (scopes.includes(EMAIL_SCOPE)) Object.assign(claims, { email: account.email, email_verified: account.emailVerified })
    return reply.send(claims)
  }
  for (const path of ['/v1/userinfo', '/oauth2/v3/userinfo']) {
    app.get(path, { config: { operation: 'oidc.userinfo' } }, userinfo)
    app.post(path, { config: { operation: 'oidc.userinfo' } }, userinfo)
  }

  const tokeninfo = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const token = text(fields(request.body), 'access_token') ?? bearer(request)
    const auth = token === undefined ? undefined : identity.authenticate(token)
    if (auth === undefined) throw new OAuthError(400, 'invalid_token', 'Invalid Value')
    const expiresIn = Math.max(0, Math.floor((auth.expiresAt - state.now()) / 1000))
    const info: Record<string, string> = {
      azp: auth.clientId,
      aud: auth.clientId,
      sub: auth.account.sub,
      scope: auth.scopes.join(' '),
      exp: String(Math.floor(auth.expiresAt / 1000)),
      expires_in: String(expiresIn)
    }
    if (auth.scopes.includes(EMAIL_SCOPE)) Object.assign(info, { email: auth.account.email, email_verified: String(auth.account.emailVerified) })
    return reply.send(info)
  }
  app.get('/tokeninfo', { config: { operation: 'oauth2.tokeninfo' } }, tokeninfo)
  app.post('/tokeninfo', { config: { operation: 'oauth2.tokeninfo' } }, tokeninfo)
}

export function authorizationPageError (reply: FastifyReply, error: AuthorizationPageError): FastifyReply {
  return reply.code(error.statusCode).type('text/html; charset=utf-8').send(authorizationErrorPage(error.error, error.message))
}
