// Session rules of the core: access tokens are v5 JWTs; refresh tokens rotate, and the session in
// the database keeps the double hash of the one refresh token it accepts. A new refresh token is
// only a child of that one until it (or its access token) is used, which promotes it; a refresh
// token that is neither the accepted one nor its child is a replay: TOKEN_THEFT_DETECTED.
import { randomUUID } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import { decodeJwt } from 'jose'
import type { JWTPayload } from 'jose'
import type { CdiReply, CdiSession, CdiTokenInfo } from './cdi.js'
import { DEFAULT_TENANT } from './cdi.js'
import type { CoreContext } from './context.js'
import { idForms } from './context.js'
import { BadRequest, isPlainObject, safeEqual, sha256 } from './input.js'
import type { SessionRecord } from './storage.js'

/** Claims the core owns in a v5 access token; a custom payload may not set them. */
const PROTECTED_CLAIMS = [
  'sub', 'exp', 'iat', 'sessionHandle', 'refreshTokenHash1', 'parentRefreshTokenHash1', 'antiCsrfToken', 'tId', 'rsub'
]

export function assertNoProtectedClaims (payload: Record<string, unknown>): void {
  const found = PROTECTED_CLAIMS.find((claim) => Object.hasOwn(payload, claim))
  if (found !== undefined) throw new BadRequest(`The user payload contains protected field: ${found}`)
}

interface AccessTokenFields {
  session: SessionRecord
  refreshTokenHash1: string
  parentRefreshTokenHash1: string | undefined
  antiCsrfToken: string | undefined
  expiry: number
  now: number
}

async function signAccessToken (ctx: CoreContext, fields: AccessTokenFields): Promise<CdiTokenInfo> {
  const { session } = fields
  const payload: JWTPayload = {
    ...session.userDataInJWT,
    iat: Math.floor(fields.now / 1000),
    exp: Math.floor(fields.expiry / 1000),
    sub: session.userId,
    rsub: session.userId,
    tId: session.tenantId,
    sessionHandle: session.handle,
    refreshTokenHash1: fields.refreshTokenHash1
  }
  // From v3 on these two are always present, null when unset, as the real core writes them.
  payload['parentRefreshTokenHash1'] = fields.parentRefreshTokenHash1 ?? null
  payload['antiCsrfToken'] = fields.antiCsrfToken ?? null
  // Times are reported in whole seconds, matching the claims in the token.
  return {
    token: await ctx.keys.sign(payload, session.useStaticKey),
    expiry: Math.floor(fields.expiry / 1000) * 1000,
    createdTime: Math.floor(fields.now / 1000) * 1000
  }
}

interface RefreshTokenContents { h: string, p: string | null, a: string | null, n: string }

function issueRefreshToken (ctx: CoreContext, handle: string, parentHash2: string | null, antiCsrfToken: string | undefined, now: number): CdiTokenInfo & { hash1: string } {
  const contents: RefreshTokenContents = { h: handle, p: parentHash2, a: antiCsrfToken ?? null, n: randomUUID() }
  const token = ctx.keys.seal(contents)
  return { token, expiry: now + ctx.refreshTokenValidityMs, createdTime: now, hash1: sha256(token) }
}

function readRefreshToken (ctx: CoreContext, token: string): RefreshTokenContents | undefined {
  const value = ctx.keys.open(token)
  if (!isPlainObject(value)) return undefined
  const { h, p, a, n } = value
  if (typeof h !== 'string' || typeof n !== 'string') return undefined
  if (p !== null && typeof p !== 'string') return undefined
  if (a !== null && typeof a !== 'string') return undefined
  return { h, p, a, n }
}

const sessionView = (session: SessionRecord): CdiSession => ({
  handle: session.handle,
  userId: session.userId,
  recipeUserId: session.userId,
  userDataInJWT: session.userDataInJWT,
  tenantId: session.tenantId
})

async function liveSession (ctx: CoreContext, handle: string, now: number): Promise<SessionRecord | null> {
  const session = await ctx.storage.getSession(handle)
  return session === null || session.expiry < now ? null : session
}

export interface CreateSessionInput {
  tenantId: string
  userId: string
  userDataInJWT: Record<string, unknown>
  userDataInDatabase: Record<string, unknown>
  enableAntiCsrf: boolean
  useDynamicSigningKey: boolean
}

export async function createSession (ctx: CoreContext, input: CreateSessionInput): Promise<CdiReply<'/<tenantId>/recipe/session', 'post'>> {
  assertNoProtectedClaims(input.userDataInJWT)
  const now = Date.now()
  const handle = input.tenantId === DEFAULT_TENANT ? randomUUID() : `${randomUUID()}_${input.tenantId}`
  const antiCsrfToken = input.enableAntiCsrf ? randomUUID() : undefined
  const refreshToken = issueRefreshToken(ctx, handle, null, antiCsrfToken, now)
  // Stored under the id as given, as the core does: the SDK passes the user's id as the core
  // answered it, which is the external id once a mapping exists.
  const session: SessionRecord = {
    handle,
    userId: input.userId,
    tenantId: input.tenantId,
    refreshTokenHash2: sha256(refreshToken.hash1),
    expiry: refreshToken.expiry,
    createdTime: now,
    userDataInJWT: input.userDataInJWT,
    userDataInDatabase: input.userDataInDatabase,
    useStaticKey: !input.useDynamicSigningKey
  }
  await ctx.storage.insertSession(session)
  const accessToken = await signAccessToken(ctx, {
    session, refreshTokenHash1: refreshToken.hash1, parentRefreshTokenHash1: undefined, antiCsrfToken, expiry: now + ctx.accessTokenValidityMs, now
  })
  const reply: CdiReply<'/<tenantId>/recipe/session', 'post'> = tokensIssued(session, accessToken, refreshToken, antiCsrfToken)
  return reply
}

// The answer of session creation and refresh alike: the session and its new tokens.
function tokensIssued (session: SessionRecord, accessToken: CdiTokenInfo, refreshToken: CdiTokenInfo, antiCsrfToken: string | undefined) {
  return {
    status: 'OK' as const,
    session: sessionView(session),
    accessToken,
    refreshToken: { token: refreshToken.token, expiry: refreshToken.expiry, createdTime: refreshToken.createdTime },
    ...(antiCsrfToken !== undefined ? { antiCsrfToken } : {})
  }
}

interface VerifiedClaims {
  sessionHandle: string
  refreshTokenHash1: string
  parentRefreshTokenHash1: string | undefined
  antiCsrfToken: string | undefined
  sub: string
  tId: string
  exp: number
  custom: Record<string, unknown>
}

function readClaims (payload: JWTPayload): VerifiedClaims | undefined {
  if (!PROTECTED_CLAIMS.every((claim) => Object.hasOwn(payload, claim))) return undefined
  const { sessionHandle, refreshTokenHash1, parentRefreshTokenHash1, antiCsrfToken, sub, rsub, tId, exp, iat } = payload
  if (typeof sessionHandle !== 'string' || typeof refreshTokenHash1 !== 'string' || typeof sub !== 'string' ||
      typeof rsub !== 'string' || typeof tId !== 'string' || typeof exp !== 'number' || typeof iat !== 'number') return undefined
  if (parentRefreshTokenHash1 !== null && typeof parentRefreshTokenHash1 !== 'string') return undefined
  if (antiCsrfToken !== null && typeof antiCsrfToken !== 'string') return undefined
  const custom: Record<string, unknown> = { ...payload }
  for (const claim of PROTECTED_CLAIMS) delete custom[claim]
  return {
    sessionHandle,
    refreshTokenHash1,
    parentRefreshTokenHash1: parentRefreshTokenHash1 ?? undefined,
    antiCsrfToken: antiCsrfToken ?? undefined,
    sub,
    tId,
    exp,
    custom
  }
}

export interface VerifyInput {
  accessToken: string
  antiCsrfToken: string | undefined
  doAntiCsrfCheck: boolean
  enableAntiCsrf: boolean
  checkDatabase: boolean
}

export async function verifySession (ctx: CoreContext, input: VerifyInput): Promise<CdiReply<'/recipe/session/verify', 'post'>> {
  let claims: VerifiedClaims | undefined
  try {
    claims = readClaims(await ctx.keys.verify(input.accessToken))
  } catch {
    claims = undefined
  }
  if (claims === undefined) return { status: 'TRY_REFRESH_TOKEN', message: 'Access token is invalid or has expired' }
  if (input.enableAntiCsrf && input.doAntiCsrfCheck &&
      (input.antiCsrfToken === undefined || claims.antiCsrfToken === undefined || !safeEqual(input.antiCsrfToken, claims.antiCsrfToken))) {
    return { status: 'TRY_REFRESH_TOKEN', message: 'Provided antiCsrfToken is not the same as the one in the access token' }
  }
  const fromToken: CdiSession = {
    handle: claims.sessionHandle, userId: claims.sub, recipeUserId: claims.sub, userDataInJWT: claims.custom, tenantId: claims.tId
  }
  const now = Date.now()
  let session: SessionRecord | null = null
  if (input.checkDatabase) {
    session = await liveSession(ctx, claims.sessionHandle, now)
    if (session === null) return { status: 'UNAUTHORISED', message: 'Either the session has ended or has been blacklisted' }
  }
  // With checkDatabase, a payload changed in the database since the token was signed gets a new token.
  const payloadNeedsUpdating = session !== null && !isDeepStrictEqual(claims.custom, session.userDataInJWT)
  if (claims.parentRefreshTokenHash1 === undefined && !payloadNeedsUpdating) return { status: 'OK', session: fromToken }

  const currentHash2 = sha256(claims.refreshTokenHash1)
  const parentHash2 = claims.parentRefreshTokenHash1 === undefined ? undefined : sha256(claims.parentRefreshTokenHash1)
  session = await liveSession(ctx, claims.sessionHandle, now)
  if (session === null) return { status: 'UNAUTHORISED', message: 'Session missing in db' }
  // First use of the access token that came with a rotated refresh token: its refresh token
  // becomes the one the session accepts. A concurrent request may have promoted it already.
  const promote = parentHash2 !== undefined && session.refreshTokenHash2 === parentHash2
  if (promote) {
    await ctx.storage.swapRefreshHash(session.handle, parentHash2, currentHash2, now + ctx.refreshTokenValidityMs)
  }
  if (!promote && session.refreshTokenHash2 !== currentHash2 && !payloadNeedsUpdating) {
    // The refresh token has moved on (or was never promoted); the signed token itself is still
    // valid, so the core answers with what it carries and issues nothing new.
    return { status: 'OK', session: fromToken }
  }
  return {
    status: 'OK',
    session: sessionView(session),
    accessToken: await signAccessToken(ctx, {
      session,
      refreshTokenHash1: claims.refreshTokenHash1,
      parentRefreshTokenHash1: undefined,
      antiCsrfToken: claims.antiCsrfToken,
      expiry: now + ctx.accessTokenValidityMs,
      now
    })
  }
}

export interface RefreshInput {
  refreshToken: string
  antiCsrfToken: string | undefined
  enableAntiCsrf: boolean
  useDynamicSigningKey: boolean
}

type RefreshReply = CdiReply<'/recipe/session/refresh', 'post'>

export async function refreshSession (ctx: CoreContext, input: RefreshInput): Promise<RefreshReply> {
  const contents = readRefreshToken(ctx, input.refreshToken)
  if (contents === undefined) return { status: 'UNAUTHORISED', message: 'Invalid refresh token' }
  if (input.enableAntiCsrf && contents.a !== null &&
      (input.antiCsrfToken === undefined || !safeEqual(input.antiCsrfToken, contents.a))) {
    return { status: 'UNAUTHORISED', message: 'Anti CSRF token missing, or not matching' }
  }
  const hash1 = sha256(input.refreshToken)
  const hash2 = sha256(hash1)
  // Each pass either answers or makes an atomic change another request may have raced;
  // a few passes settle any interleaving of two requests with the same tokens.
  for (let attempt = 0; attempt < 4; attempt++) {
    const now = Date.now()
    const session = await liveSession(ctx, contents.h, now)
    if (session === null) return { status: 'UNAUTHORISED', message: 'Session missing in db or has expired' }
    if (session.refreshTokenHash2 === hash2) {
      // Rotation alone does not extend the session: only promoting the new refresh token does.
      const useStaticKey = !input.useDynamicSigningKey
      if (useStaticKey !== session.useStaticKey) {
        await ctx.storage.updateSession(session.handle, { useStaticKey })
        session.useStaticKey = useStaticKey
      }
      const antiCsrfToken = input.enableAntiCsrf ? randomUUID() : undefined
      const child = issueRefreshToken(ctx, session.handle, hash2, antiCsrfToken, now)
      const accessToken = await signAccessToken(ctx, {
        session,
        refreshTokenHash1: child.hash1,
        parentRefreshTokenHash1: hash1,
        antiCsrfToken,
        expiry: now + ctx.accessTokenValidityMs,
        now
      })
      const reply: RefreshReply = tokensIssued(session, accessToken, child, antiCsrfToken)
      return reply
    }
    if (contents.p !== null && contents.p === session.refreshTokenHash2) {
      await ctx.storage.swapRefreshHash(session.handle, contents.p, hash2, now + ctx.refreshTokenValidityMs)
      continue
    }
    return { status: 'TOKEN_THEFT_DETECTED', session: { handle: session.handle, userId: session.userId, recipeUserId: session.userId } }
  }
  return { status: 'UNAUTHORISED', message: 'Refresh token is being used concurrently' }
}

type RegenerateReply = CdiReply<'/recipe/session/regenerate', 'post'>

export async function regenerateSession (ctx: CoreContext, accessToken: string, userDataInJWT: Record<string, unknown>): Promise<RegenerateReply> {
  assertNoProtectedClaims(userDataInJWT)
  let unverified: VerifiedClaims | undefined
  try {
    unverified = readClaims(decodeJwt(accessToken))
  } catch {
    unverified = undefined
  }
  if (unverified === undefined) return { status: 'UNAUTHORISED', message: 'Access token could not be parsed' }
  const now = Date.now()
  const session = await liveSession(ctx, unverified.sessionHandle, now)
  if (session === null || !await ctx.storage.updateSession(session.handle, { userDataInJWT })) {
    return { status: 'UNAUTHORISED', message: 'Session does not exist.' }
  }
  const updated: SessionRecord = { ...session, userDataInJWT }
  let claims: VerifiedClaims | undefined
  try {
    claims = readClaims(await ctx.keys.verify(accessToken))
  } catch {
    claims = undefined
  }
  // An expired or foreign token still updates the stored payload; the next refresh carries it.
  if (claims === undefined) return { status: 'OK', session: sessionView(updated) }
  return {
    status: 'OK',
    session: sessionView(updated),
    accessToken: await signAccessToken(ctx, {
      session: updated,
      refreshTokenHash1: claims.refreshTokenHash1,
      parentRefreshTokenHash1: claims.parentRefreshTokenHash1,
      antiCsrfToken: claims.antiCsrfToken,
      expiry: claims.exp * 1000,
      now
    })
  }
}

export async function sessionInformation (ctx: CoreContext, handle: string): Promise<CdiReply<'/recipe/session', 'get'>> {
  const session = await liveSession(ctx, handle, Date.now())
  if (session === null) return { status: 'UNAUTHORISED', message: 'Session does not exist.' }
  return {
    status: 'OK',
    sessionHandle: session.handle,
    userId: session.userId,
    recipeUserId: session.userId,
    userDataInDatabase: session.userDataInDatabase,
    userDataInJWT: session.userDataInJWT,
    expiry: session.expiry,
    timeCreated: session.createdTime,
    tenantId: session.tenantId
  }
}

/** Live session handles of a user, matching the user by SuperTokens or external id. */
export async function sessionHandlesOfUser (ctx: CoreContext, userId: string, tenantId: string | undefined): Promise<string[]> {
  const { all } = await idForms(ctx, userId)
  const handles = await ctx.storage.sessionHandlesOfUsers(all, tenantId)
  const now = Date.now()
  const live = await Promise.all(handles.map((handle) => liveSession(ctx, handle, now)))
  return live.filter((s): s is SessionRecord => s !== null).map((s) => s.handle)
}
