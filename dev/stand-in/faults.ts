// Armed faults (the next N requests matching a path answer an error, with Retry-After when asked)
// and request counters per operation, both driven from the control surface. Which error a fault
// answers with is the provider's own and stays with each stand-in.
import { ControlError } from './control.js'

export interface FaultInput<S extends number = number> {
  /** Matches request paths that start with it, e.g. `/calendar/v3/calendars/` or `/token`. */
  pathPrefix: string
  method?: string
  status: S
  count?: number
  retryAfterSec?: number
}

export type Fault<I extends FaultInput> = Omit<I, 'count'> & { id: number, remaining: number, fired: number }

export interface OperationCount {
  total: number
  statuses: Record<string, number>
}

/**
 * Reads a fault from a control request. `statuses` are those the provider is known to answer;
 * `readExtra` checks and returns the provider's own fields, after the status is known to be valid.
 */
export function readFaultInput<S extends number, X extends object = Record<never, never>> (
  body: unknown,
  statuses: readonly S[],
  readExtra: (fields: Record<string, unknown>) => X = () => ({}) as X
): FaultInput<S> & X {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ControlError(400, 'a JSON object is required')
  const fields = body as Record<string, unknown>
  const { pathPrefix, method, status, count, retryAfterSec } = fields
  if (typeof pathPrefix !== 'string' || !pathPrefix.startsWith('/')) throw new ControlError(400, 'pathPrefix must be a path starting with "/"')
  if (pathPrefix.startsWith('/_control')) throw new ControlError(400, 'the control surface cannot be faulted')
  if (typeof status !== 'number' || !(statuses as readonly number[]).includes(status)) {
    throw new ControlError(400, `status must be ${statuses.slice(0, -1).join(', ')} or ${String(statuses[statuses.length - 1])}`)
  }
  const extra = readExtra(fields)
  if (count !== undefined && (!Number.isInteger(count) || (count as number) < 1)) throw new ControlError(400, 'count must be a positive integer')
  if (method !== undefined && typeof method !== 'string') throw new ControlError(400, 'method must be a string')
  if (retryAfterSec !== undefined && (!Number.isInteger(retryAfterSec) || (retryAfterSec as number) < 0)) {
    throw new ControlError(400, 'retryAfterSec must be a non-negative integer')
  }
  return {
    pathPrefix,
    status: status as S,
    ...(method === undefined ? {} : { method: method.toUpperCase() }),
    ...extra,
    ...(count === undefined ? {} : { count: count as number }),
    ...(retryAfterSec === undefined ? {} : { retryAfterSec: retryAfterSec as number })
  }
}

export class Faults<I extends FaultInput> {
  private readonly armed: Array<Fault<I>> = []
  private nextId = 1

  arm (input: I): Fault<I> {
    const { count, ...rest } = input
    const fault = { id: this.nextId++, ...rest, remaining: count ?? 1, fired: 0 } as unknown as Fault<I>
    this.armed.push(fault)
    return fault
  }

  list (): Array<Fault<I>> {
    return this.armed.filter((fault) => fault.remaining > 0)
  }

  clear (): void {
    this.armed.length = 0
  }

  /** The first armed fault matching the request, used up by one; undefined when none matches. */
  take (method: string, path: string): Fault<I> | undefined {
    const fault = this.armed.find((candidate) =>
      candidate.remaining > 0 && path.startsWith(candidate.pathPrefix) && (candidate.method === undefined || candidate.method === method))
    if (fault === undefined) return undefined
    fault.remaining--
    fault.fired++
    return fault
  }
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
