import type { CdiUser } from './cdi.js'
import type { Keys } from './keys.js'
import type { MappingRecord, Storage, UserRecord } from './storage.js'

export interface CoreContext {
  storage: Storage
  keys: Keys
  accessTokenValidityMs: number
  refreshTokenValidityMs: number
  tenants: ReadonlySet<string>
}

/** A recipe user found by either its SuperTokens id or its external id. */
export interface ResolvedUser {
  user: UserRecord
  mapping: MappingRecord | null
  /** The id the core answers with: the external id when a mapping exists. */
  publicId: string
}

export async function resolveUser (ctx: CoreContext, anyId: string): Promise<ResolvedUser | null> {
  const direct = await ctx.storage.getUser(anyId)
  if (direct !== null) {
    const mapping = await ctx.storage.getMappingBySuperTokensId(direct.id)
    return { user: direct, mapping, publicId: mapping?.externalUserId ?? direct.id }
  }
  const mapping = await ctx.storage.getMappingByExternalId(anyId)
  if (mapping === null) return null
  const user = await ctx.storage.getUser(mapping.superTokensUserId)
  return user === null ? null : { user, mapping, publicId: mapping.externalUserId }
}

/** Both forms an id may take (as given, and its mapped counterpart), for data keyed by either. */
export async function idForms (ctx: CoreContext, anyId: string): Promise<{ superTokensId: string, publicId: string, all: string[] }> {
  const bySuperTokens = await ctx.storage.getMappingBySuperTokensId(anyId)
  if (bySuperTokens !== null) {
    return { superTokensId: anyId, publicId: bySuperTokens.externalUserId, all: [anyId, bySuperTokens.externalUserId] }
  }
  const byExternal = await ctx.storage.getMappingByExternalId(anyId)
  if (byExternal !== null) {
    return { superTokensId: byExternal.superTokensUserId, publicId: anyId, all: [byExternal.superTokensUserId, anyId] }
  }
  return { superTokensId: anyId, publicId: anyId, all: [anyId] }
}

export async function toCdiUser (ctx: CoreContext, resolved: ResolvedUser): Promise<CdiUser> {
  const { user, publicId } = resolved
  const verified = await ctx.storage.isEmailVerified(user.id, user.email)
  const loginMethod: CdiUser['loginMethods'][number] = {
    tenantIds: user.tenantIds,
    recipeUserId: publicId,
    verified,
    timeJoined: user.timeJoined,
    recipeId: user.recipeId,
    email: user.email
  }
  if (user.thirdParty !== undefined) loginMethod.thirdParty = { ...user.thirdParty }
  return {
    id: publicId,
    isPrimaryUser: false,
    tenantIds: user.tenantIds,
    timeJoined: user.timeJoined,
    emails: [user.email],
    phoneNumbers: [],
    webauthn: { credentialIds: [] },
    thirdParty: user.thirdParty === undefined ? [] : [{ ...user.thirdParty }],
    loginMethods: [loginMethod]
  }
}
