import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { IsoDateTimeSchema } from './common.js'

export const SyncHealthSchema = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('error')]),
  timestamp: IsoDateTimeSchema
}, { additionalProperties: false })

export type SyncHealth = Static<typeof SyncHealthSchema>
