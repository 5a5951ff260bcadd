// Microsoft's side of armed faults: the statuses Graph and the identity platform answer with, and
// the error each family gives for them.
import { readFaultInput as readCommonFaultInput } from '../stand-in/faults.js'
import type { Fault as ArmedFault, FaultInput as CommonFaultInput } from '../stand-in/faults.js'
import { GraphError, TokenError, graphErrors } from './errors.js'

type FaultStatus = 429 | 500 | 503 | 504

/** `pathPrefix` e.g. `/v1.0/me/calendars/` or `/common/oauth2/v2.0/token`. */
export type FaultInput = CommonFaultInput<FaultStatus>

export type Fault = ArmedFault<FaultInput>

const STATUSES = [429, 500, 503, 504] as const

export function readFaultInput (body: unknown): FaultInput {
  return readCommonFaultInput(body, STATUSES)
}

/** The error a fault answers with, in the family of the endpoint it hits. */
export function faultError (fault: Fault, family: 'graph' | 'token' | 'other'): GraphError | TokenError {
  if (family === 'token') {
    return fault.status === 429
      ? new TokenError(429, 'temporarily_unavailable', 90055, 'There are too many incoming requests. Try again later.')
      : new TokenError(fault.status, 'temporarily_unavailable', 90006, 'The service is temporarily unavailable.')
  }
  if (fault.status === 429) return graphErrors.tooManyRequests()
  if (fault.status === 503) return graphErrors.serviceUnavailable()
  if (fault.status === 504) return new GraphError(504, 'GatewayTimeout', 'The server did not receive a timely response from the upstream server.')
  return graphErrors.internal()
}
