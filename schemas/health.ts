import { Type, type Static } from '@sinclair/typebox'

export const HealthResponse = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('error')], { description: 'ok when the database answered a ping' }),
  timestamp: Type.String({ format: 'date-time', description: 'ISO-8601 UTC time of the check' })
}, { description: 'Health of the backend: database reachability only' })

export type HealthResponse = Static<typeof HealthResponse>
