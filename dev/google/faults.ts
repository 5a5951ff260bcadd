// Armed faults (the next N requests matching a path answer an error) and request counters per
// operation, both driven from the control surface.
import { ApiError, ControlError, OAuthError } from './errors.js'

export type FaultKind = 'rateLimitExceeded' | 'userRateLimitExceeded' | 'backendError' | 'serviceUnavailable'

export interface FaultInput {
  /** Matches request paths that start with it, e.g. `/calendar/v3/calendars/` or `/token`. */
  pathPrefix: string
  method?: string
  status: 403 | 429 | 500 | 503
  /** For 403 and 429: `rateLimitExceeded` (default) or `userRateLimitExceeded`. */
  reason?: 'rateLimitExceeded' | 'userRateLimitExceeded'
  count?: number
  retryAfterSec?: number
}

export interface Fault {
  id: number
  pathPrefix: string
  method?: string
  status: 403 | 429 | 500 | 503
  reason?: 'rateLimitExceeded' | 'userRateLimitExceeded'
  remaining: number
  retryAfterSec?: number
  fired: number
}

export interface OperationCount {
  total: number
  statuses: Record<string, number>
}

const STATUSES = new Set([403, 429, 500, 503])

export function readFaultInput (body: unknown): FaultInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ControlError(400, 'a JSON object is required')
  const fields = body as Record<string, unknown>
  const { pathPrefix, method, status, reason, count, retryAfterSec } = fields
  if (typeof pathPrefix !== 'string' || !pathPrefix.startsWith('/')) throw new ControlError(400, 'pathPrefix must be a path starting with "/"')
  if (pathPrefix.startsWith('/_control')) throw new ControlError(400, 'the control surface cannot be faulted')
  if (typeof status !== 'number' || !STATUSES.has(status)) throw new ControlError(400, 'status must be 403, 429, 500 or 503')
  if (reason !== undefined && reason !== 'rateLimitExceeded' && reason !== 'userRateLimitExceeded') {
    throw new ControlError(400, 'reason must be rateLimitExceeded or userRateLimitExceeded')
  }
  if (count !== undefined && (!Number.isInteger(count) || (count as number) < 1)) throw new ControlError(400, 'count must be a positive integer')
  if (method !== undefined && typeof method !== 'string') throw new ControlError(400, 'method must be a string')
  if (retryAfterSec !== undefined && (!Number.isInteger(retryAfterSec) || (retryAfterSec as number) < 0)) {
    throw new ControlError(400, 'retryAfterSec must be a non-negative integer')
  }
  return {
    pathPrefix,
    status: status as FaultInput['status'],
    ...(method === undefined ? {} : { method: method.toUpperCase() }),
    ...(reason === undefined ? {} : { reason }),
    ...(count === undefined ? {} : { count: count as number }),
    ...(retryAfterSec === undefined ? {} : { retryAfterSec: retryAfterSec as number })
  }
}

export class Faults {
  private readonly armed: Fault[] = []
  private nextId = 1

  arm (input: FaultInput): Fault {
    const fault: Fault = {
      id: this.nextId++,
      pathPrefix: input.pathPrefix,
      status: input.status,
      remaining: input.count ?? 1,
      fired: 0,
      ...(input.method === undefined ? {} : { method: input.method }),
      ...(input.reason === undefined ? {} : { reason: input.reason }),
      ...(input.retryAfterSec === undefined ? {} : { retryAfterSec: input.retryAfterSec })
    }
    this.armed.push(fault)
    return fault
  }

  list (): Fault[] {
    return this.armed.filter((fault) => fault.remaining > 0)
  }

  clear (): void {
    this.armed.length = 0
  }

  /** The first armed fault matching the request, used up by one; undefined when none matches. */
  take (method: string, path: string): Fault | undefined {
    const fault = this.armed.find((candidate) =>
      candidate.remaining > 0 && path.startsWith(candidate.pathPrefix) && (candidate.method === undefined || candidate.method === method))
    if (fault === undefined) return undefined
    fault.remaining--
    fault.fired++
    return fault
  }
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

export class Counters {
  private operations = new Map<string, OperationCount>()

  count (operation: string, status: number): void {
    let entry = this.operations.get(operation)
    if (entry === undefined) {
      entry = { total: 0, statuses: {} }
      this.operations.set(operation, entry)
    }
    entry.total++
    entry.statuses[String(status)] = (entry.statuses[String(status)] ?? 0) + 1
  }

  snapshot (): Record<string, OperationCount> {
    return Object.fromEntries([...this.operations].map(([name, entry]) => [name, { total: entry.total, statuses: { ...entry.statuses } }]))
  }

  reset (): void {
    this.operations = new Map()
  }
}
