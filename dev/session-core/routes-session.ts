import type { FastifyInstance } from 'fastify'
import type { CoreContext } from './context.js'
import {
  extraField, field, optionalBoolean, optionalObject, optionalString, requireBoolean, requireObject, requireString, stringArray
} from './input.js'
import { cdiRoute } from './route.js'
import {
  assertNoProtectedClaims, createSession, refreshSession, regenerateSession, sessionHandlesOfUser, sessionInformation, verifySession
} from './sessions.js'

export function registerSessionRoutes (app: FastifyInstance, ctx: CoreContext): void {
  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/session', async ({ body, tenantId }) => createSession(ctx, {
    tenantId,
    userId: requireString(field(body, 'userId'), 'userId'),
    userDataInJWT: requireObject(field(body, 'userDataInJWT'), 'userDataInJWT'),
    userDataInDatabase: requireObject(field(body, 'userDataInDatabase'), 'userDataInDatabase'),
    enableAntiCsrf: requireBoolean(field(body, 'enableAntiCsrf'), 'enableAntiCsrf'),
    useDynamicSigningKey: optionalBoolean(field(body, 'useDynamicSigningKey'), 'useDynamicSigningKey') ?? true
  }))

  cdiRoute(app, ctx, 'post', '/recipe/session/verify', async ({ body }) => verifySession(ctx, {
    accessToken: requireString(field(body, 'accessToken'), 'accessToken'),
    antiCsrfToken: optionalString(field(body, 'antiCsrfToken'), 'antiCsrfToken'),
    doAntiCsrfCheck: optionalBoolean(field(body, 'doAntiCsrfCheck'), 'doAntiCsrfCheck') ?? false,
    enableAntiCsrf: optionalBoolean(field(body, 'enableAntiCsrf'), 'enableAntiCsrf') ?? false,
    checkDatabase: optionalBoolean(field(body, 'checkDatabase'), 'checkDatabase') ?? false
  }))

  cdiRoute(app, ctx, 'post', '/recipe/session/refresh', async ({ body }) => refreshSession(ctx, {
    refreshToken: requireString(field(body, 'refreshToken'), 'refreshToken'),
    antiCsrfToken: optionalString(field(body, 'antiCsrfToken'), 'antiCsrfToken'),
    enableAntiCsrf: optionalBoolean(field(body, 'enableAntiCsrf'), 'enableAntiCsrf') ?? false,
    useDynamicSigningKey: optionalBoolean(field(body, 'useDynamicSigningKey'), 'useDynamicSigningKey') ?? true
  }))

  cdiRoute(app, ctx, 'post', '/recipe/session/regenerate', async ({ body }) => regenerateSession(
    ctx,
    requireString(field(body, 'accessToken'), 'accessToken'),
    optionalObject(field(body, 'userDataInJWT'), 'userDataInJWT') ?? {}
  ))

  cdiRoute(app, ctx, 'get', '/recipe/session', async ({ query }) =>
    sessionInformation(ctx, requireString(field(query, 'sessionHandle'), 'sessionHandle')))

  async function removeSessions (body: object | undefined, tenantId: string | undefined) {
    const handles = extraField(body, 'sessionHandles')
    let revoked: string[]
    if (handles !== undefined) {
      revoked = await ctx.storage.deleteSessions(stringArray(handles, 'sessionHandles'))
    } else {
      const userId = requireString(extraField(body, 'userId'), 'userId')
      const acrossTenants = optionalBoolean(extraField(body, 'revokeAcrossAllTenants'), 'revokeAcrossAllTenants') ?? false
      revoked = await ctx.storage.deleteSessions(await sessionHandlesOfUser(ctx, userId, acrossTenants ? undefined : tenantId))
    }
    return { status: 'OK' as const, sessionHandlesRevoked: revoked }
  }
  cdiRoute(app, ctx, 'post', '/recipe/session/remove', async ({ body }) => removeSessions(body, undefined))
  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/session/remove', async ({ body, tenantId }) => removeSessions(body, tenantId))

  async function userSessions (query: object | undefined, tenantId: string | undefined) {
    const userId = requireString(extraField(query, 'userId'), 'userId')
    const acrossTenants = optionalBoolean(extraField(query, 'fetchAcrossAllTenants'), 'fetchAcrossAllTenants') ?? true
    return { status: 'OK' as const, sessionHandles: await sessionHandlesOfUser(ctx, userId, acrossTenants ? undefined : tenantId) }
  }
  cdiRoute(app, ctx, 'get', '/recipe/session/user', async ({ query }) => userSessions(query, undefined))
  cdiRoute(app, ctx, 'get', '/<tenantId>/recipe/session/user', async ({ query, tenantId }) => userSessions(query, tenantId))

  cdiRoute(app, ctx, 'put', '/recipe/session/data', async ({ body }) => {
    const handle = requireString(field(body, 'sessionHandle'), 'sessionHandle')
    const userDataInDatabase = requireObject(field(body, 'userDataInDatabase'), 'userDataInDatabase')
    const session = await ctx.storage.getSession(handle)
    if (session === null || session.expiry < Date.now() || !await ctx.storage.updateSession(handle, { userDataInDatabase })) {
      return { status: 'UNAUTHORISED', message: 'Session does not exist.' }
    }
    return { status: 'OK' }
  })

  cdiRoute(app, ctx, 'put', '/recipe/jwt/data', async ({ body }) => {
    const handle = requireString(field(body, 'sessionHandle'), 'sessionHandle')
    const userDataInJWT = requireObject(field(body, 'userDataInJWT'), 'userDataInJWT')
    assertNoProtectedClaims(userDataInJWT)
    const session = await ctx.storage.getSession(handle)
    if (session === null || session.expiry < Date.now() || !await ctx.storage.updateSession(handle, { userDataInJWT })) {
      return { status: 'UNAUTHORISED', message: 'Session does not exist.' }
    }
    return { status: 'OK' }
  })
}
