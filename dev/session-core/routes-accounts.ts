import { randomBytes, randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { CdiUser } from './cdi.js'
import type { CoreContext } from './context.js'
import { idForms, resolveUser, toCdiUser } from './context.js'
import {
  BadRequest, extraField, field, normaliseEmail, optionalBoolean, optionalString, requireObject, requireString, sha256
} from './input.js'
import { hashPassword, verifyPassword } from './passwords.js'
import { cdiRoute } from './route.js'
import { sessionHandlesOfUser } from './sessions.js'
import type { TokenKind, UserRecord } from './storage.js'

const PASSWORD_RESET_VALIDITY_MS = 60 * 60 * 1000
const EMAIL_VERIFICATION_VALIDITY_MS = 24 * 60 * 60 * 1000

const emailPasswordKey = (tenantId: string, email: string) => `emailpassword:${tenantId}:${email}`
const thirdPartyKey = (tenantId: string, thirdPartyId: string, thirdPartyUserId: string) =>
  `thirdparty:${tenantId}:${thirdPartyId}:${thirdPartyUserId}`

/** A single-use token: handed out once, stored only as its hash. */
async function issueToken (ctx: CoreContext, kind: TokenKind, userId: string, email: string, validityMs: number): Promise<string> {
  const token = randomBytes(48).toString('base64url')
  await ctx.storage.insertToken({ kind, tokenHash: sha256(token), userId, email, expiry: Date.now() + validityMs })
  return token
}

async function takeToken (ctx: CoreContext, kind: TokenKind, token: string) {
  const record = await ctx.storage.takeToken(kind, sha256(token))
  if (record === null || record.expiry < Date.now()) return null
  // Using one token spends every other outstanding token of the same purpose for that user.
  await ctx.storage.deleteTokens(kind, record.userId, kind === 'email-verification' ? record.email : undefined)
  return record
}

async function cdiUserById (ctx: CoreContext, id: string): Promise<CdiUser> {
  const resolved = await resolveUser(ctx, id)
  if (resolved === null) throw new Error(`user ${id} vanished while being answered`)
  return toCdiUser(ctx, resolved)
}

export function registerAccountRoutes (app: FastifyInstance, ctx: CoreContext): void {
  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/signup', async ({ body, tenantId }) => {
    const email = normaliseEmail(requireString(field(body, 'email'), 'email'))
    const password = requireString(field(body, 'password'), 'password')
    const user: UserRecord = {
      id: randomUUID(),
      recipeId: 'emailpassword',
      tenantIds: [tenantId],
      email,
      passwordHash: await hashPassword(password),
      timeJoined: Date.now(),
      uniqueKey: emailPasswordKey(tenantId, email)
    }
    if (await ctx.storage.insertUser(user) === 'duplicate') return { status: 'EMAIL_ALREADY_EXISTS_ERROR' }
    return { status: 'OK', user: await cdiUserById(ctx, user.id), recipeUserId: user.id }
  })

  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/signin', async ({ body, tenantId }) => {
    const email = normaliseEmail(requireString(field(body, 'email'), 'email'))
    const password = requireString(field(body, 'password'), 'password')
    const user = await ctx.storage.getUserByUniqueKey(emailPasswordKey(tenantId, email))
    if (!await verifyPassword(password, user?.passwordHash) || user === null) return { status: 'WRONG_CREDENTIALS_ERROR' }
    const cdiUser = await cdiUserById(ctx, user.id)
    return { status: 'OK', user: cdiUser, recipeUserId: cdiUser.id }
  })

  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/user/password/reset/token', async ({ body }) => {
    const userId = requireString(field(body, 'userId'), 'userId')
    const email = normaliseEmail(requireString(field(body, 'email'), 'email'))
    const resolved = await resolveUser(ctx, userId)
    if (resolved === null) return { status: 'UNKNOWN_USER_ID_ERROR' }
    const token = await issueToken(ctx, 'password-reset', resolved.user.id, email, PASSWORD_RESET_VALIDITY_MS)
    return { status: 'OK', token }
  })

  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/user/password/reset/token/consume', async ({ body }) => {
    const token = requireString(field(body, 'token'), 'token')
    const record = await takeToken(ctx, 'password-reset', token)
    if (record === null) return { status: 'RESET_PASSWORD_INVALID_TOKEN_ERROR' }
    const { publicId } = await idForms(ctx, record.userId)
    return { status: 'OK', userId: publicId, email: record.email }
  })

  cdiRoute(app, ctx, 'put', '/recipe/user', async ({ body }) => {
    const resolved = await resolveUser(ctx, requireString(field(body, 'recipeUserId'), 'recipeUserId'))
    const emailInput = optionalString(field(body, 'email'), 'email')
    const password = optionalString(field(body, 'password'), 'password')
    if (resolved === null || resolved.user.recipeId !== 'emailpassword') return { status: 'UNKNOWN_USER_ID_ERROR' }
    const { user } = resolved
    const set: Partial<UserRecord> = {}
    if (emailInput !== undefined) {
      const email = normaliseEmail(emailInput)
      set.email = email
      set.uniqueKey = emailPasswordKey(user.tenantIds[0] ?? 'public', email)
    }
    if (password !== undefined) set.passwordHash = await hashPassword(password)
    const result = await ctx.storage.updateUser(user.id, set)
    if (result === 'duplicate') return { status: 'EMAIL_ALREADY_EXISTS_ERROR' }
    if (result === 'missing') return { status: 'UNKNOWN_USER_ID_ERROR' }
    return { status: 'OK' }
  })

  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/signinup', async ({ body, tenantId }) => {
    const thirdPartyId = requireString(field(body, 'thirdPartyId'), 'thirdPartyId')
    const thirdPartyUserId = requireString(field(body, 'thirdPartyUserId'), 'thirdPartyUserId')
    const emailInfo = requireObject(field(body, 'email'), 'email')
    const email = normaliseEmail(requireString(emailInfo['id'], 'email.id'))
    const isVerified = optionalBoolean(emailInfo['isVerified'], 'email.isVerified') ?? false
    const uniqueKey = thirdPartyKey(tenantId, thirdPartyId, thirdPartyUserId)
    let user = await ctx.storage.getUserByUniqueKey(uniqueKey)
    let createdNewUser = false
    if (user === null) {
      const candidate: UserRecord = {
        id: randomUUID(),
        recipeId: 'thirdparty',
        tenantIds: [tenantId],
        email,
        thirdParty: { id: thirdPartyId, userId: thirdPartyUserId },
        timeJoined: Date.now(),
        uniqueKey
      }
      createdNewUser = await ctx.storage.insertUser(candidate) === 'ok'
      // Losing an insert race to the same provider account means that account exists now.
      user = createdNewUser ? candidate : await ctx.storage.getUserByUniqueKey(uniqueKey)
      if (user === null) throw new Error('third-party user vanished during sign-in-up')
    } else if (user.email !== email) {
      await ctx.storage.updateUser(user.id, { email })
      user = { ...user, email }
    }
    if (isVerified) await ctx.storage.setEmailVerified(user.id, email, true)
    const cdiUser = await cdiUserById(ctx, user.id)
    return { status: 'OK', createdNewUser, user: cdiUser, recipeUserId: cdiUser.id }
  })

  cdiRoute(app, ctx, 'get', '/user/id', async ({ query }) => {
    const resolved = await resolveUser(ctx, requireString(field(query, 'userId'), 'userId'))
    if (resolved === null) return { status: 'UNKNOWN_USER_ID_ERROR' }
    return { status: 'OK', user: await toCdiUser(ctx, resolved) }
  })

  cdiRoute(app, ctx, 'get', '/<tenantId>/users/by-accountinfo', async ({ query, tenantId }) => {
    const email = optionalString(field(query, 'email'), 'email')
    const thirdPartyId = optionalString(field(query, 'thirdPartyId'), 'thirdPartyId')
    const thirdPartyUserId = optionalString(field(query, 'thirdPartyUserId'), 'thirdPartyUserId')
    const union = optionalBoolean(field(query, 'doUnionOfAccountInfo'), 'doUnionOfAccountInfo') ?? false
    if ((thirdPartyId === undefined) !== (thirdPartyUserId === undefined)) {
      throw new BadRequest('thirdPartyId and thirdPartyUserId must be given together')
    }
    const criteria: Array<(user: UserRecord) => boolean> = []
    const candidates = new Map<string, UserRecord>()
    if (email !== undefined) {
      const normalised = normaliseEmail(email)
      criteria.push((user) => user.email === normalised)
      for (const user of await ctx.storage.getUsersByEmail(normalised)) candidates.set(user.id, user)
    }
    if (thirdPartyId !== undefined && thirdPartyUserId !== undefined) {
      criteria.push((user) => user.thirdParty?.id === thirdPartyId && user.thirdParty.userId === thirdPartyUserId)
      for (const user of await ctx.storage.getUsersByThirdParty(thirdPartyId, thirdPartyUserId)) candidates.set(user.id, user)
    }
    const matches = [...candidates.values()]
      .filter((user) => user.tenantIds.includes(tenantId))
      .filter((user) => union ? criteria.some((c) => c(user)) : criteria.every((c) => c(user)))
      .sort((a, b) => a.timeJoined - b.timeJoined)
    return { status: 'OK', users: await Promise.all(matches.map((user) => cdiUserById(ctx, user.id))) }
  })

  cdiRoute(app, ctx, 'post', '/user/remove', async ({ body }) => {
    const forms = await idForms(ctx, requireString(field(body, 'userId'), 'userId'))
    const handles = await sessionHandlesOfUser(ctx, forms.publicId, undefined)
    await ctx.storage.deleteSessions(handles)
    for (const id of forms.all) {
      await ctx.storage.deleteMetadata(id)
      await ctx.storage.deleteVerifiedEmails(id)
      await ctx.storage.deleteTokens('password-reset', id)
      await ctx.storage.deleteTokens('email-verification', id)
    }
    await ctx.storage.deleteUser(forms.superTokensId)
    await ctx.storage.deleteMapping(forms.superTokensId)
    return { status: 'OK' }
  })

  // Email verification is keyed by the SuperTokens id when the user has one, so it reads the same
  // whichever id form the SDK sends.
  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/user/email/verify/token', async ({ body }) => {
    const { superTokensId } = await idForms(ctx, requireString(field(body, 'userId'), 'userId'))
    const email = normaliseEmail(requireString(field(body, 'email'), 'email'))
    if (await ctx.storage.isEmailVerified(superTokensId, email)) return { status: 'EMAIL_ALREADY_VERIFIED_ERROR' }
    return { status: 'OK', token: await issueToken(ctx, 'email-verification', superTokensId, email, EMAIL_VERIFICATION_VALIDITY_MS) }
  })

  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/user/email/verify', async ({ body }) => {
    const method = field(body, 'method')
    if (method !== 'token') throw new BadRequest("Field name 'method' is invalid in JSON input")
    const record = await takeToken(ctx, 'email-verification', requireString(field(body, 'token'), 'token'))
    if (record === null) return { status: 'EMAIL_VERIFICATION_INVALID_TOKEN_ERROR' }
    await ctx.storage.setEmailVerified(record.userId, record.email, true)
    const { publicId } = await idForms(ctx, record.userId)
    return { status: 'OK', userId: publicId, email: record.email }
  })

  cdiRoute(app, ctx, 'get', '/recipe/user/email/verify', async ({ query }) => {
    const { superTokensId } = await idForms(ctx, requireString(extraField(query, 'userId'), 'userId'))
    const email = normaliseEmail(requireString(extraField(query, 'email'), 'email'))
    return { status: 'OK', isVerified: await ctx.storage.isEmailVerified(superTokensId, email) }
  })

  cdiRoute(app, ctx, 'post', '/<tenantId>/recipe/user/email/verify/token/remove', async ({ body }) => {
    const { superTokensId } = await idForms(ctx, requireString(field(body, 'userId'), 'userId'))
    const email = normaliseEmail(requireString(field(body, 'email'), 'email'))
    await ctx.storage.deleteTokens('email-verification', superTokensId, email)
    return { status: 'OK' }
  })

  cdiRoute(app, ctx, 'post', '/recipe/user/email/verify/remove', async ({ body }) => {
    const { superTokensId } = await idForms(ctx, requireString(field(body, 'userId'), 'userId'))
    const email = normaliseEmail(requireString(field(body, 'email'), 'email'))
    await ctx.storage.setEmailVerified(superTokensId, email, false)
    return { status: 'OK' }
  })
}
