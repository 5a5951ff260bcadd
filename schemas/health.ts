import { Type, type Static } from '@sinclair/typebox'

/** The probes load balancers and operators call every few seconds: never shed, logged at debug only. */
export const HEALTH_PROBE_PATHS: ReadonlySet<string> = new Set(['/api/health', '/api/health/live', '/api/health/ready'])

export const HealthResponse = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('error')], { description: 'ok when the database answered a ping' }),
  timestamp: Type.String({ format: 'date-time', description: 'ISO-8601 UTC time of the check' })
}, { description: 'Health of the backend: database reachability only' })

export type HealthResponse = Static<typeof HealthResponse>

const Check = (states: [string, string], description: string) => Type.Union([Type.Literal(states[0]), Type.Literal(states[1])], { description })

export const ReadinessResponse = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('error')], { description: 'ok when every check is ok: send this process requests' }),
  timestamp: Type.String({ format: 'date-time', description: 'ISO-8601 UTC time of the check' }),
  checks: Type.Object({
    database: Check(['ok', 'error'], 'The database answered a ping within 1 s'),
    sessionCore: Check(['ok', 'error'], 'The session core served its signing keys within 1 s'),
    load: Check(['ok', 'overloaded'], 'overloaded while the process sheds requests (its event loop is saturated)')
  }, { additionalProperties: false })
}, { additionalProperties: false, description: 'Whether this process should be sent requests now' })

export const LivenessResponse = Type.Object({
  status: Type.Literal('ok'),
  timestamp: Type.String({ format: 'date-time', description: 'ISO-8601 UTC time of the answer' })
}, { additionalProperties: false, description: 'The process answers; nothing else is checked' })
