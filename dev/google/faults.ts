// Google's side of armed faults: the statuses and quota reasons it answers with, and the error
// each of its endpoint families gives for them.
import { ControlError } from '../stand-in/control.js'
import { readFaultInput as readCommonFaultInput } from '../stand-in/faults.js'
import type { Fault as ArmedFault, FaultInput as CommonFaultInput } from '../stand-in/faults.js'
import { ApiError, OAuthError } from './errors.js'

export interface FaultInput extends CommonFaultInput<403 | 429 | 500 | 503> {
  /** For 403 and 429: `rateLimitExceeded` (default) or `userRateLimitExceeded`. */
  reason?: 'rateLimitExceeded' | 'userRateLimitExceeded'
}

export type Fault = ArmedFault<FaultInput>

const STATUSES = [403, 429, 500, 503] as const

export function readFaultInput (body: unknown): FaultInput {
  return readCommonFaultInput(body, STATUSES, ({ reason }) => {
    if (reason !== undefined && reason !== 'rateLimitExceeded' && reason !== 'userRateLimitExceeded') {
      throw new ControlError(400, 'reason must be rateLimitExceeded or userRateLimitExceeded')
    }
    return reason === undefined ? {} : { reason }
  })
}

/** The error a fault answers with, in the family of the endpoint it hits. */
export function faultError (fault: Fault, path: string): ApiError | OAuthError {
  if (!path.startsWith('/calendar/')) {
    return fault.status === 429 || fault.status === 403
      ? new OAuthError(fault.status, 'rate_limit_exceeded', 'Rate Limit Exceeded')
      : new OAuthError(fault.status, 'internal_failure', fault.status === 503 ? 'Service unavailable' : 'Backend Error')
  }
  if (fault.status === 500) return new ApiError(500, 'backendError', 'Backend Error')
  if (fault.status === 503) return new ApiError(503, 'backendError', 'The service is currently unavailable.')
  const reason = fault.reason ?? 'rateLimitExceeded'
  return new ApiError(fault.status, reason, reason === 'userRateLimitExceeded' ? 'User Rate Limit Exceeded' : 'Rate Limit Exceeded', 'usageLimits')
}
