import { SyncErrorBodySchema } from '../../schemas/sync/index.js'

/** Every refusal an internal route can answer, all with the one error body. */
export const errorResponses = {
  400: SyncErrorBodySchema,
  401: SyncErrorBodySchema,
  403: SyncErrorBodySchema,
  404: SyncErrorBodySchema,
  409: SyncErrorBodySchema,
  410: SyncErrorBodySchema,
  500: SyncErrorBodySchema,
  503: SyncErrorBodySchema
}
