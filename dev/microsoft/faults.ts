// Armed faults (the next N requests matching a path answer an error, with Retry-After when asked)
// and request counters per operation, both driven from the control surface.
import { ControlError, GraphError, TokenError, graphErrors } from './errors.js'

export type FaultStatus = 429 | 500 | 503 | 504

export interface FaultInput {
  /** Matches request paths that start with it, e.g. `/v1.0/me/calendars/` or `/common/oauth2/v2.0/token`. */
  pathPrefix: string
  method?: string
  status: FaultStatus
  count?: number
  retryAfterSec?: number
}

export interface Fault {
  id: number
  pathPrefix: string
  method?: string
  status: FaultStatus
  remaining: number
  retryAfterSec?: number
  fired: number
}

export interface OperationCount {
  total: number
  statuses: Record<string, number>
}

const STATUSES = new Set([429, 500, 503, 504])

export function readFaultInput (body: unknown): FaultInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ControlError(400, 'a JSON object is required')
  const { pathPrefix, method, status, count, retryAfterSec } = body as Record<string, unknown>
  if (typeof pathPrefix !== 'string' || !pathPrefix.startsWith('/')) throw new ControlError(400, 'pathPrefix must be a path starting with "/"')
  if (pathPrefix.startsWith('/_control')) throw new ControlError(400, 'the control surface cannot be faulted')
  if (typeof status !== 'number' || !STATUSES.has(status)) throw new ControlError(400, 'status must be 429, 500, 503 or 504')
  if (count !== undefined && (!Number.isInteger(count) || (count as number) < 1)) throw new ControlError(400, 'count must be a positive integer')
  if (method !== undefined && typeof method !== 'string') throw new ControlError(400, 'method must be a string')
  if (retryAfterSec !== undefined && (!Number.isInteger(retryAfterSec) || (retryAfterSec as number) < 0)) {
    throw new ControlError(400, 'retryAfterSec must be a non-negative integer')
  }
  return {
    pathPrefix,
    status: status as FaultStatus,
    ...(method === undefined ? {} : { method: (method as string).toUpperCase() }),
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
