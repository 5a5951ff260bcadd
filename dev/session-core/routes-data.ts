import type { FastifyInstance } from 'fastify'
import type { CoreContext } from './context.js'
import { BadRequest, field, optionalBoolean, optionalString, requireObject, requireString } from './input.js'
import { cdiRoute } from './route.js'
import type { MappingRecord } from './storage.js'

type IdType = 'SUPERTOKENS' | 'EXTERNAL' | 'ANY'

function idType (value: unknown): IdType {
  if (value === undefined || value === null) return 'ANY'
  if (value === 'SUPERTOKENS' || value === 'EXTERNAL' || value === 'ANY') return value
  throw new BadRequest("Field name 'userIdType' must be one of 'SUPERTOKENS', 'EXTERNAL' or 'ANY'")
}

async function findMapping (ctx: CoreContext, userId: string, type: IdType): Promise<MappingRecord | null> {
  if (type !== 'EXTERNAL') {
    const bySuperTokens = await ctx.storage.getMappingBySuperTokensId(userId)
    if (bySuperTokens !== null || type === 'SUPERTOKENS') return bySuperTokens
  }
  return ctx.storage.getMappingByExternalId(userId)
}

const mappingView = (mapping: MappingRecord) => {
  const view: { status: 'OK', superTokensUserId: string, externalUserId: string, externalUserIdInfo?: string } =
    { status: 'OK', superTokensUserId: mapping.superTokensUserId, externalUserId: mapping.externalUserId }
  if (mapping.externalUserIdInfo !== undefined) view.externalUserIdInfo = mapping.externalUserIdInfo
  return view
}

/** The first non-auth recipe holding data under this id, if any. */
async function recipeUsingId (ctx: CoreContext, userId: string): Promise<string | undefined> {
  // Same order as the real core's check, so the same recipe is named.
  if ((await ctx.storage.sessionHandlesOfUsers([userId])).length > 0) return 'Session'
  if (await ctx.storage.getMetadata(userId) !== null) return 'UserMetadata'
  if (await ctx.storage.hasVerifiedEmails(userId)) return 'EmailVerification'
  return undefined
}

export function registerDataRoutes (app: FastifyInstance, ctx: CoreContext): void {
  cdiRoute(app, ctx, 'get', '/recipe/user/metadata', async ({ query }) => {
    const userId = requireString(field(query, 'userId'), 'userId')
    return { status: 'OK', metadata: await ctx.storage.getMetadata(userId) ?? {} }
  })

  // Shallow merge: top-level keys of the update replace stored ones, and a null removes the key.
  cdiRoute(app, ctx, 'put', '/recipe/user/metadata', async ({ body }) => {
    const userId = requireString(field(body, 'userId'), 'userId')
    const update = requireObject(field(body, 'metadataUpdate'), 'metadataUpdate')
    const metadata = { ...await ctx.storage.getMetadata(userId) ?? {} }
    for (const [key, value] of Object.entries(update)) {
      if (value === null) delete metadata[key]
      else metadata[key] = value
    }
    await ctx.storage.setMetadata(userId, metadata)
    return { status: 'OK', metadata }
  })

  cdiRoute(app, ctx, 'post', '/recipe/user/metadata/remove', async ({ body }) => {
    await ctx.storage.deleteMetadata(requireString(field(body, 'userId'), 'userId'))
    return { status: 'OK' }
  })

  cdiRoute(app, ctx, 'post', '/recipe/userid/map', async ({ body }) => {
    const superTokensUserId = requireString(field(body, 'superTokensUserId'), 'superTokensUserId')
    const externalUserId = requireString(field(body, 'externalUserId'), 'externalUserId')
    const externalUserIdInfo = optionalString(field(body, 'externalUserIdInfo'), 'externalUserIdInfo')
    const force = optionalBoolean(field(body, 'force'), 'force') ?? false
    if (superTokensUserId.trim() === '' || externalUserId.trim() === '') {
      throw new BadRequest('Field name \'superTokensUserId\' and \'externalUserId\' cannot be an empty String')
    }
    const alreadyMapped = {
      status: 'USER_ID_MAPPING_ALREADY_EXISTS_ERROR' as const,
      doesSuperTokensUserIdExist: await ctx.storage.getMappingBySuperTokensId(superTokensUserId) !== null,
      doesExternalUserIdExist: await ctx.storage.getMappingByExternalId(externalUserId) !== null
    }
    // The real core's order: a taken external id first, then an unknown user, then the checks
    // that force skips.
    if (alreadyMapped.doesExternalUserIdExist) return alreadyMapped
    if (await ctx.storage.getUser(superTokensUserId) === null) return { status: 'UNKNOWN_SUPERTOKENS_USER_ID_ERROR' }
    if (!force) {
      if (await ctx.storage.getUser(externalUserId) !== null) {
        throw new BadRequest('Cannot create a userId mapping where the externalId is also a SuperTokens userID')
      }
      // Data already stored under the SuperTokens id would be orphaned by answering with another id.
      // Email verification is the core's exception (third-party sign-in verifies emails before any
      // mapping can exist); here it is keyed by the SuperTokens id, so it stays valid as it is.
      const inUse = await recipeUsingId(ctx, superTokensUserId)
      if (inUse !== undefined && inUse !== 'EmailVerification') throw new BadRequest(`UserId is already in use in ${inUse} recipe`)
    }
    const mapping: MappingRecord = { superTokensUserId, externalUserId }
    if (externalUserIdInfo !== undefined) mapping.externalUserIdInfo = externalUserIdInfo
    if (await ctx.storage.insertMapping(mapping) === 'duplicate') {
      return {
        status: 'USER_ID_MAPPING_ALREADY_EXISTS_ERROR',
        doesSuperTokensUserIdExist: await ctx.storage.getMappingBySuperTokensId(superTokensUserId) !== null,
        doesExternalUserIdExist: await ctx.storage.getMappingByExternalId(externalUserId) !== null
      }
    }
    return { status: 'OK' }
  })

  cdiRoute(app, ctx, 'get', '/recipe/userid/map', async ({ query }) => {
    const mapping = await findMapping(ctx, requireString(field(query, 'userId'), 'userId'), idType(field(query, 'userIdType')))
    return mapping === null ? { status: 'UNKNOWN_MAPPING_ERROR' } : mappingView(mapping)
  })

  cdiRoute(app, ctx, 'post', '/recipe/userid/map/remove', async ({ body }) => {
    const mapping = await findMapping(ctx, requireString(field(body, 'userId'), 'userId'), idType(field(body, 'userIdType')))
    const force = optionalBoolean(field(body, 'force'), 'force') ?? false
    if (mapping === null) return { status: 'OK', didMappingExist: false }
    // Data stored under the external id would lose its user; the core refuses unless forced.
    if (!force && await ctx.storage.getUser(mapping.externalUserId) === null) {
      const inUse = await recipeUsingId(ctx, mapping.externalUserId)
      if (inUse !== undefined) throw new BadRequest(`UserId is already in use in ${inUse} recipe`)
    }
    return { status: 'OK', didMappingExist: await ctx.storage.deleteMapping(mapping.superTokensUserId) }
  })

  cdiRoute(app, ctx, 'put', '/recipe/userid/external-user-id-info', async ({ body }) => {
    const mapping = await findMapping(ctx, requireString(field(body, 'userId'), 'userId'), idType(field(body, 'userIdType')))
    const info = optionalString(field(body, 'externalUserIdInfo'), 'externalUserIdInfo')
    if (mapping === null || !await ctx.storage.setMappingInfo(mapping.superTokensUserId, info)) {
      return { status: 'UNKNOWN_MAPPING_ERROR' }
    }
    return { status: 'OK' }
  })

  // One tenant, every login method on. `firstFactors` is left out on purpose: the SDK reads its
  // absence as "no restriction", while a null would crash it.
  cdiRoute(app, ctx, 'get', '/<tenantId>/recipe/multitenancy/tenant/v2', async ({ tenantId }) => ({
    status: 'OK',
    tenantId,
    emailPassword: { enabled: true },
    thirdParty: { enabled: true, providers: [] },
    passwordless: { enabled: true },
    coreConfig: {}
  }), { onUnknownTenant: () => ({ status: 'TENANT_NOT_FOUND_ERROR' }) })
}
