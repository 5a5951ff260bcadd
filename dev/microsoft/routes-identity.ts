// The identity platform's v2 endpoints on Microsoft's paths, for the `common`, `organizations`
// and `consumers` tenants and each account's tenant id: OpenID Connect discovery, the signing keys,
// the authorization endpoint (with its consent page), the token endpoint, sign-out, and the
// userinfo endpoint the discovery document names.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { SESSION_COOKIE, answerLocation, knownTenant } from './authorization.js'
import type { Answer } from './authorization.js'
import { AuthorizePageError, TokenError } from './errors.js'
import { CONSUMERS_TENANT } from './identity.js'
import type { Account } from './identity.js'
import { consentPage, errorPage, formPostPage, signedOutPage } from './pages.js'
import type { MicrosoftState } from './state.js'
import { basicCredentials, cookie, fields, text } from '../stand-in/oauth-requests.js'

const tenantOf = (request: FastifyRequest): string => ((request.params ?? {}) as Record<string, string>)['tenant'] ?? ''

/** The discovery document's issuer: a tenant id, or the `{tenantid}` template for multi-tenant paths. */
function issuerOf (origin: string, tenant: string): string {
  if (tenant === 'consumers') return `${origin}/${CONSUMERS_TENANT}/v2.0`
  if (tenant === 'common' || tenant === 'organizations') return `${origin}/{tenantid}/v2.0`
  return `${origin}/${tenant}/v2.0`
}

function sendAnswer (reply: FastifyReply, answer: Answer): FastifyReply {
  if (answer.signIn !== undefined) reply.header('set-cookie', `${SESSION_COOKIE}=${answer.signIn}; Path=/; HttpOnly; SameSite=Lax`)
  reply.header('cache-control', 'no-store, no-cache')
  if (answer.mode === 'form_post') return reply.type('text/html; charset=utf-8').send(formPostPage(answer.redirectUri, answer.params))
  return reply.redirect(answerLocation(answer), 302)
}

export function authorizePageError (reply: FastifyReply, error: AuthorizePageError): FastifyReply {
  return reply.code(error.statusCode).type('text/html; charset=utf-8').send(errorPage(error.aadsts, error.message))
}

export async function identityRoutes (app: FastifyInstance, options: { state: MicrosoftState }): Promise<void> {
  const { state } = options
  const { identity, authorization } = state

  const checkTenant = (tenant: string): void => {
    if (!knownTenant(tenant, identity)) {
      throw new TokenError(400, 'invalid_tenant', 90002, `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`)
    }
  }

  app.get('/:tenant/v2.0/.well-known/openid-configuration', { config: { operation: 'oidc.discovery' } }, async (request, reply) => {
    const tenant = tenantOf(request)
    checkTenant(tenant)
    const base = `${state.origin}/${tenant}`
    return reply.header('cache-control', 'max-age=86400, private').send({
      token_endpoint: `${base}/oauth2/v2.0/token`,
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
      jwks_uri: `${base}/discovery/v2.0/keys`,
      response_modes_supported: ['query', 'fragment', 'form_post'],
      subject_types_supported: ['pairwise'],
      id_token_signing_alg_values_supported: ['RS256'],
      response_types_supported: ['code'],
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      issuer: issuerOf(state.origin, tenant),
      request_uri_parameter_supported: false,
      userinfo_endpoint: `${state.origin}/oidc/userinfo`,
      authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
      http_logout_supported: true,
      frontchannel_logout_supported: true,
      end_session_endpoint: `${base}/oauth2/v2.0/logout`,
      claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'nonce', 'preferred_username', 'name', 'tid', 'oid', 'ver', 'email'],
      tenant_region_scope: null,
      cloud_instance_name: 'microsoftonline.com',
      cloud_graph_host_name: 'graph.windows.net',
      msgraph_host: new URL(state.origin).host
    })
  })

  app.get('/:tenant/discovery/v2.0/keys', { config: { operation: 'oidc.keys' } }, async (request, reply) => {
    const tenant = tenantOf(request)
    checkTenant(tenant)
    return reply.header('cache-control', 'max-age=86400, private').send({ keys: [{ ...state.options.keys.jwk, issuer: issuerOf(state.origin, tenant) }] })
  })

  app.get('/:tenant/oauth2/v2.0/authorize', { config: { operation: 'oauth2.authorize' } }, async (request, reply) => {
    const outcome = authorization.handle(tenantOf(request), fields(request.query), cookie(request, SESSION_COOKIE))
    if (outcome.kind === 'answer') return sendAnswer(reply, outcome)
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(consentPage({
      action: `/${outcome.request.tenant}/oauth2/v2.0/authorize`,
      requestId: outcome.requestId,
      clientId: outcome.request.clientId,
      scopes: outcome.request.scopes,
      accounts: identity.listAccounts().map(({ email, name, kind }) => ({ email, name, kind })),
      preselected: outcome.preselected
    }))
  })

  // The consent page's form posts back here; a POSTed authorization request is answered like a GET.
  app.post('/:tenant/oauth2/v2.0/authorize', { config: { operation: 'oauth2.authorize' } }, async (request, reply) => {
    const form = fields(request.body)
    if (form['request_id'] === undefined) {
      const outcome = authorization.handle(tenantOf(request), form, cookie(request, SESSION_COOKIE))
      if (outcome.kind === 'answer') return sendAnswer(reply, outcome)
      throw new AuthorizePageError(400, 90023, 'Send the authorization request with GET to see the consent page.')
    }
    const answer = authorization.submit(form, (email): Account => {
      state.createAccount({ email })
      const account = identity.accountByEmail(email)
      if (account === undefined) throw new Error('account creation failed')
      return account
    })
    return sendAnswer(reply, answer)
  })

  app.post('/:tenant/oauth2/v2.0/token', { config: { operation: 'oauth2.token' } }, async (request, reply) => {
    reply.header('cache-control', 'no-store, no-cache').header('pragma', 'no-cache')
    checkTenant(tenantOf(request))
    const body = fields(request.body)
    const basic = basicCredentials(request, () => new TokenError(401, 'invalid_client', 7000215, 'Invalid client secret provided.'))
    const grantType = text(body, 'grant_type')
    if (grantType === undefined || grantType === '') {
      throw new TokenError(400, 'invalid_request', 900144, "The request body must contain the following parameter: 'grant_type'.")
    }
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
      throw new TokenError(400, 'unsupported_grant_type', 70003, `The app requested an unsupported grant type '${grantType}'.`)
    }
    const client = identity.authenticateClient(basic?.clientId ?? text(body, 'client_id'), basic?.clientSecret ?? text(body, 'client_secret'))
    if (grantType === 'authorization_code') {
      const code = text(body, 'code')
      if (code === undefined || code === '') throw new TokenError(400, 'invalid_request', 900144, "The request body must contain the following parameter: 'code'.")
      return await identity.exchangeCode(client, code, text(body, 'redirect_uri'), text(body, 'code_verifier'))
    }
    const refreshToken = text(body, 'refresh_token')
    if (refreshToken === undefined || refreshToken === '') {
      throw new TokenError(400, 'invalid_request', 900144, "The request body must contain the following parameter: 'refresh_token'.")
    }
    return await identity.refresh(client, refreshToken, text(body, 'scope'))
  })

  // Sign-out ends the browser's session and returns to post_logout_redirect_uri when one is given.
  app.get('/:tenant/oauth2/v2.0/logout', { config: { operation: 'oauth2.logout' } }, async (request, reply) => {
    reply.header('set-cookie', `${SESSION_COOKIE}=; Path=/; HttpOnly; Max-Age=0`)
    const target = text(fields(request.query), 'post_logout_redirect_uri')
    if (target !== undefined && URL.canParse(target)) return reply.redirect(target, 302)
    return reply.type('text/html; charset=utf-8').send(signedOutPage())
  })

  const userinfo = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const header = request.headers.authorization
    const token = header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : undefined
    const auth = token === undefined ? undefined : identity.authenticate(token)
    if (auth === undefined || !auth.ok) {
      return reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"')
        .send({ error: { code: 'InvalidAuthenticationToken', message: 'Access token validation failure.' } })
    }
    const { account, clientId } = auth
    return reply.send({
      sub: identity.pairwiseSubject(clientId, account.oid),
      name: account.name,
      family_name: account.surname,
      given_name: account.givenName,
      email: account.email
    })
  }
  app.get('/oidc/userinfo', { config: { operation: 'oidc.userinfo' } }, userinfo)
  app.post('/oidc/userinfo', { config: { operation: 'oidc.userinfo' } }, userinfo)
}
